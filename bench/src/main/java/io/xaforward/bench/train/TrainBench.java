package io.xaforward.bench.train;

import io.xaforward.bench.TorchBlas;
import io.xaforward.bench.WanProfile;
import io.xaforward.cluster.python.PythonSetup;

import io.xaforward.common.Json;
import io.xaforward.training.ModelConfig;
import io.xaforward.cluster.TrainingJob;
import io.xaforward.cluster.TrainResult;
import io.xaforward.cluster.Endpoint;
import io.xaforward.cluster.RankNetwork;
import io.xaforward.cluster.SyncMode;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.collective.Algorithm;
import io.xaforward.collective.OuterDtype;
import io.xaforward.training.DilocoConfig;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.testbed.CpuBudget;
import io.xaforward.testbed.LinkLimit;
import io.xaforward.testbed.Topology;

import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.category.DefaultCategoryDataset;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;

/**
 * {@code xaf bench train}: an ablation of the same training job (seed, data, steps) over endpoint x gateway mode,
 * per configuration, every cell run several times, interleaved (A B C A B C ...). Every job is
 * {@linkplain TrainingJob#placed() placed} (gateway on its own CPU) and crosses the topology's emulated WAN. Writes
 * train.md (the table), train.json (every run) and PNG plots.
 */
public final class TrainBench {
    /** {@link Config#wanRate()} of a configuration whose topologies have no emulated WAN. */
    public static final String NO_WAN = "none";

    /**
     * One configuration: a model and a WAN rate ({@link #NO_WAN} for topologies without one), run on a cross-form
     * topology (IPv4 DC and IPv6 DC) for every mode that can translate or tunnel, and on a same-form one (two IPv4
     * DCs) for the modes that need it (kernel). {@code profile}: the WAN profile applied to both topologies' WAN
     * (null: the files' WAN with {@code wanRate}); see {@link #withProfile}.
     */
    public record Config(String name, Path crossForm, Path sameForm, String wanRate, String preset, long steps,
                         int globalBatch, List<Endpoint> endpoints, List<GatewayMode> modes, String description,
                         WanProfile profile) {
        public Config(String name, Path crossForm, Path sameForm, String wanRate, String preset, long steps,
                      int globalBatch, List<Endpoint> endpoints, List<GatewayMode> modes, String description) {
            this(name, crossForm, sameForm, wanRate, preset, steps, globalBatch, endpoints, modes, description, null);
        }

        /**
         * This configuration over WAN profile {@code p}: named {@code name-p} (its work directories, table and plots),
         * with the profile's rate. Fails for a configuration without a WAN.
         */
        public Config withProfile(WanProfile p) {
            if (wanRate.equals(NO_WAN))
                throw new IllegalArgumentException("configuration " + name + " has no WAN: a WAN profile cannot apply to it");
            return new Config(name + "-" + p.name(), crossForm, sameForm, p.rate(), preset, steps, globalBatch, endpoints,
                    modes, description + " WAN profile " + p.describe() + ": " + p.emulates() + ".", p);
        }
    }

    /** The peer name of XAForward's own workers ({@code --peers xaf,ddp-gloo}). */
    public static final String XAF = "xaf";
    /** The peers {@code --peers} accepts. */
    public static final List<String> PEERS = List.of(XAF, DdpGlooPeer.NAME, DilocoGlooPeer.NAME, PytorchXafPeer.NAME);

    /**
     * One cell of the table: XAF's workers with an endpoint through a gateway mode and a synchronisation (every
     * step, or DiLoCo's), or a peer trainer (DDP or DiLoCo over Gloo) through one of the kernel's paths
     * ({@link DdpGlooPeer#MODES}; its endpoint field is unused, its sync is the peer's own).
     */
    public record Cell(String peer, Endpoint endpoint, GatewayMode mode, SyncMode sync) {
        public Cell(Endpoint endpoint, GatewayMode mode) {
            this(XAF, endpoint, mode, SyncMode.DDP);
        }

        public Cell(Endpoint endpoint, GatewayMode mode, SyncMode sync) {
            this(XAF, endpoint, mode, sync);
        }

        static Cell ddpGloo(GatewayMode mode) {
            return new Cell(DdpGlooPeer.NAME, Endpoint.UDP, mode, SyncMode.DDP);
        }

        static Cell dilocoGloo(GatewayMode mode) {
            return new Cell(DilocoGlooPeer.NAME, Endpoint.UDP, mode, SyncMode.DILOCO);
        }

        static Cell pytorchXaf(GatewayMode mode) {
            return new Cell(PytorchXafPeer.NAME, Endpoint.UDP, mode, SyncMode.DDP);
        }

        boolean xaf() {
            return peer.equals(XAF);
        }

        /** The endpoint column: XAF's endpoint, or the peer's name (the Gloo peers' endpoint is Gloo's TCP). */
        String endpointLabel() {
            return xaf() ? endpoint.configName() : peer;
        }

        /** The endpoint column of the table: XAF's DiLoCo cells say so ("udp diloco"), the peers' names do already. */
        String rowLabel() {
            return xaf() && sync == SyncMode.DILOCO ? endpointLabel() + " " + sync.configName() : endpointLabel();
        }

        String label() {
            return rowLabel() + " / " + mode.configName();
        }

        /** Kernel forwarding cannot cross IP families: its cells run on the same-form topology. */
        Path topology(Path crossForm, Path sameForm) {
            return mode.crossesIpFamilies() ? crossForm : sameForm;
        }
    }

    public record Run(String config, Cell cell, int run, String topology, TrainResult result) {}

    private final List<Config> configs;
    private final int runs;
    private final Path outDir;
    private final Path workRoot;
    private final PrintStream out;
    private double gatewayCpuShare = 1.0;
    private boolean runXaf = true;
    private boolean runDdpGloo;
    private boolean runDilocoGloo;
    private List<SyncMode> syncs = List.of(SyncMode.DDP);
    /** DiLoCo's settings for XAF's diloco cells and the diloco-gloo peer; null when neither runs. */
    private DilocoGlooPeer.Settings diloco;
    private boolean runPytorchXaf;
    private Function<List<String>, List<String>> agentCommand;
    /** The WAN profiles every configuration runs over, interleaved with the cells; empty: the configurations' own WAN. */
    private List<WanProfile> profiles = List.of();

    /**
     * Runs every configuration over each of {@code profiles} ({@code --wan-profile}), the profiles interleaved with
     * the cells run by run; each profile's cells get their own table, and a plot shows step time against round trip.
     */
    public TrainBench withWanProfiles(List<WanProfile> profiles) {
        this.profiles = List.copyOf(profiles);
        for (Config c : configs) variants(c); // a configuration without a WAN fails here, before anything runs
        return this;
    }

    /** What a run round takes for configuration {@code c}: {@code c} itself, or {@code c} over each WAN profile. */
    List<Config> variants(Config c) {
        return profiles.isEmpty() ? List.of(c) : profiles.stream().map(c::withProfile).toList();
    }

    /**
     * Which trainers run: XAF's workers (the modes and endpoints of each configuration) and/or DDP over Gloo
     * ({@link DdpGlooPeer}: kernel on the same-form topology, kernel-tunnel on the cross-form one), interleaved run
     * by run. By default XAF only.
     */
    public TrainBench withPeers(List<String> peers) {
        checkPeers(peers);
        runXaf = peers.contains(XAF);
        runDdpGloo = peers.contains(DdpGlooPeer.NAME);
        runDilocoGloo = peers.contains(DilocoGlooPeer.NAME);
        runPytorchXaf = peers.contains(PytorchXafPeer.NAME);
        return this;
    }

    /** How to start {@code xaf agent} with given options, for the {@code pytorch-xaf} peer (the CLI knows its main class). */
    public TrainBench withAgentCommand(Function<List<String>, List<String>> agentCommand) {
        this.agentCommand = agentCommand;
        return this;
    }

    /**
     * How XAF's workers synchronise, each a cell of its own ({@code --sync ddp,diloco}), and DiLoCo's settings for
     * XAF's diloco cells and the diloco-gloo peer (needed when either runs). With DiLoCo settings every job, DDP's
     * too, evaluates the whole validation split every {@link DilocoGlooPeer.Settings#evalEvery()} steps: the DiLoCo
     * table compares validation losses and the time to reach DDP's.
     */
    public TrainBench withSync(List<SyncMode> syncs, DilocoGlooPeer.Settings settings) {
        checkSyncs(syncs);
        this.syncs = List.copyOf(syncs);
        this.diloco = settings;
        return this;
    }

    /** Fails clearly on an empty or repeated list (an unknown word fails in {@link SyncMode#fromName}). */
    public static void checkSyncs(List<SyncMode> syncs) {
        if (syncs.isEmpty()) throw new IllegalArgumentException("--sync needs at least one of ddp, diloco");
        if (new HashSet<>(syncs).size() != syncs.size()) throw new IllegalArgumentException("--sync names a mode twice: " + syncs);
    }

    /** Parses {@code --sync}'s words (ddp, diloco) in order, refusing unknown and repeated ones. */
    public static List<SyncMode> parseSyncs(List<String> words) {
        List<SyncMode> syncs = words.stream().map(String::strip).map(SyncMode::fromName).toList();
        checkSyncs(syncs);
        return syncs;
    }

    /** Whether a DiLoCo cell runs: then every job evaluates, and the report gets its DiLoCo table. */
    boolean dilocoRuns() {
        return (runXaf && syncs.contains(SyncMode.DILOCO)) || runDilocoGloo;
    }

    /** Fails clearly on an empty list or an unknown peer name. */
    public static void checkPeers(List<String> peers) {
        if (peers.isEmpty()) throw new IllegalArgumentException("--peers needs at least one of " + PEERS);
        for (String p : peers)
            if (!PEERS.contains(p)) throw new IllegalArgumentException("unknown peer '" + p + "' (known: " + String.join(", ", PEERS) + ")");
    }

    /** The cells of {@code c} in the order a run round takes them: XAF's endpoints x modes, then the peer's. */
    List<Cell> cells(Config c) {
        List<Cell> cells = new ArrayList<>();
        if (runXaf)
            for (SyncMode sync : syncs)
                for (Endpoint endpoint : c.endpoints())
                    for (GatewayMode mode : c.modes()) cells.add(new Cell(endpoint, mode, sync));
        if (runDdpGloo) for (GatewayMode mode : DdpGlooPeer.MODES) cells.add(Cell.ddpGloo(mode));
        if (runDilocoGloo) for (GatewayMode mode : DdpGlooPeer.MODES) cells.add(Cell.dilocoGloo(mode));
        if (runPytorchXaf) for (GatewayMode mode : PytorchXafPeer.MODES) cells.add(Cell.pytorchXaf(mode));
        return cells;
    }

    /** Budgets the gateway's CPU to {@code share} in every job, the same for every mode ({@link CpuBudget}). */
    public TrainBench withGatewayCpu(double share) {
        if (!(share >= 0.05 && share <= 1)) throw new IllegalArgumentException("gateway CPU share must be 5% to 100%");
        this.gatewayCpuShare = share;
        return this;
    }

    public TrainBench(List<Config> configs, int runs, Path outDir, Path workRoot, PrintStream out) {
        if (runs < 1) throw new IllegalArgumentException("runs must be >= 1");
        this.configs = configs;
        this.runs = runs;
        this.outDir = outDir;
        this.workRoot = workRoot;
        this.out = out;
    }

    /** Why {@code cell} cannot run (an endpoint that cannot cross that mode), or null when it can. */
    static String unsupported(Cell cell, Path topology) {
        if (!cell.xaf()) return null; // DDP and DiLoCo over Gloo cross the kernel's paths, which join any IPv4/IPv6 topology
        try {
            GatewayMode mode = cell.mode();
            Endpoint endpoint = Endpoint.resolve(cell.endpoint(), mode);
            // Every rank's address book, as its worker would build it: fails where the endpoint cannot reach a peer.
            int world = RankNetwork.of(topology, "bchk", 1, 7, 0, mode, endpoint).worldSize();
            for (int rank = 0; rank < world; rank++)
                RankNetwork.of(topology, "bchk", 1, 7, rank, mode, endpoint).addressBook();
            return null;
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
    }

    /** Cells left out (config name + cell -> reason) and runs that failed (config name + cell -> reasons). */
    private final Map<String, String> skipped = new LinkedHashMap<>();
    private final Map<String, List<String>> failed = new LinkedHashMap<>();

    /** The BLAS libraries the torch peers' Python maps (empty when no torch peer runs), for the report. */
    private List<String> torchBlas = List.of();

    public List<Run> run() throws Exception {
        if (dilocoRuns() && diloco == null) throw new IllegalStateException("a DiLoCo cell runs without DiLoCo settings (withSync)");
        if (runDdpGloo || runDilocoGloo || runPytorchXaf) {
            // a torch peer on the reference BLAS computes ~19x slower: refuse the comparison before any cell runs
            torchBlas = TorchBlas.requireOptimised(PythonSetup.interpreter(System.getenv()));
            out.println("torch peers multiply on " + String.join(", ", torchBlas));
        }
        List<Run> all = new ArrayList<>();
        int total = 0, done = 0;
        for (Config c : configs.stream().flatMap(base -> variants(base).stream()).toList())
            for (Cell cell : cells(c)) {
                String why = unsupported(cell, cell.topology(c.crossForm(), c.sameForm()));
                if (why == null) total += runs;
                else if (skipped.putIfAbsent(cell.label(), why) == null)
                    out.printf(Locale.ROOT, "not run: %s (%s)%n", cell.label(), why);
            }
        Path corpus = workRoot.resolve("corpus.txt");
        for (Config base : configs) {
            Map<Config, Path[]> topologies = new LinkedHashMap<>(); // cross form, same form
            for (Config c : variants(base))
                topologies.put(c, new Path[]{topology(c, c.crossForm(), "-cross.yaml"), topology(c, c.sameForm(), "-same.yaml")});
            for (int r = 1; r <= runs; r++) {
                for (var variant : topologies.entrySet()) {
                    Config c = variant.getKey();
                    Path cross = variant.getValue()[0], same = variant.getValue()[1];
                    for (Cell cell : cells(c)) {
                        Endpoint endpoint = cell.endpoint();
                        GatewayMode mode = cell.mode();
                        if (skipped.containsKey(cell.label())) continue;
                        done++;
                        Path topology = cell.topology(cross, same);
                        out.printf(Locale.ROOT, "[%d/%d] %s: %s run %d ...%n", done, total, c.name(), cell.label(), r);
                        Path work = Files.createDirectories(workRoot.resolve(c.name() + "-" + cell.endpointLabel()
                                + (cell.xaf() && cell.sync() == SyncMode.DILOCO ? "-diloco" : "") + "-" + mode.configName() + "-" + r));
                        String prefix = "b" + Integer.toHexString(new Random().nextInt(0x100, 0x1000));
                        TrainJobSpec.Builder builder = TrainJobSpec.builder()
                                .topology(topology).prefix(prefix).gatewayMode(mode)
                                .endpoint(endpoint).workDir(work).rateLimit(c.wanRate())
                                .preset(c.preset()).data(corpus).steps(c.steps()).globalBatch(c.globalBatch()).seed(4242)
                                .learningRate(1e-3).warmupSteps(Math.max(1, c.steps() / 10))
                                .checksumEvery(Math.max(1, c.steps() / 4)).jobId(1).jobToken(0x5eed0002)
                                .threadsPerWorker(1).algorithm(Algorithm.HIERARCHICAL).bucketBytes(4L << 20);
                        // Beside DiLoCo every job evaluates the whole validation split at the same steps (outer steps).
                        if (dilocoRuns()) builder.evalEvery(diloco.evalEvery()).evalWindows(Integer.MAX_VALUE);
                        if (cell.xaf() && cell.sync() == SyncMode.DILOCO) xafDiloco(builder, diloco);
                        TrainJobSpec spec = builder.build();
                        TrainResult res;
                        try {
                            TrainingJob job = new TrainingJob(spec, new PrintStream(PrintStream.nullOutputStream()));
                            if (cell.peer().equals(DdpGlooPeer.NAME)) job.startingRanksWith(new DdpGlooPeer(spec));
                            if (cell.peer().equals(DilocoGlooPeer.NAME)) job.startingRanksWith(new DilocoGlooPeer(spec, diloco));
                            if (cell.peer().equals(PytorchXafPeer.NAME)) job.startingRanksWith(new PytorchXafPeer(spec, agentCommand));
                            res = job.placed(gatewayCpuShare).run();
                            // its scripts' done lines count TCP only: the agents' transports did the sending
                            if (cell.peer().equals(PytorchXafPeer.NAME)) res = PytorchXafPeer.withAgentCounters(res);
                            long expected = ModelConfig.preset(c.preset()).parameterCount();
                            if (res.parameterCount() != expected) {
                                throw new IllegalStateException(cell.label() + " trained " + res.parameterCount()
                                        + " parameters, preset " + c.preset() + " has " + expected);
                            }
                        } catch (Exception e) {
                            // One failed job must not throw away an hour of others: report it with the cell.
                            String why = String.valueOf(e.getMessage()).lines().findFirst().orElse(e.toString());
                            out.printf(Locale.ROOT, "    failed: %s (work directory %s)%n", why, work);
                            failed.computeIfAbsent(c.name() + ": " + cell.label(), k -> new ArrayList<>()).add("run " + r + ": " + why);
                            continue;
                        }
                        out.printf(Locale.ROOT, "    %.1f ms/step (compute %.1f, communication %.1f), final loss %.4f%n",
                                res.medianStepMs(), res.meanComputeMs(), res.meanCommMs(), res.finalLoss());
                        all.add(new Run(c.name(), cell, r, Topology.load(topology).name(), res));
                    }
                }
            }
        }
        write(all);
        return all;
    }

    /**
     * XAF's DiLoCo settings on a job: plain DiLoCo (one fragment, no sync delay), as the Gloo peer runs it, with the
     * bench's H, outer learning rate, momentum and outer number format.
     */
    static TrainJobSpec.Builder xafDiloco(TrainJobSpec.Builder builder, DilocoGlooPeer.Settings s) {
        return builder.diloco(new DilocoConfig(s.syncEvery(), 1, 0, s.outerLr(), s.outerMomentum()))
                .outerDtype(OuterDtype.fromName(s.outerDtype()));
    }

    /** The topology file {@code c}'s cells run on: with its profile applied, or with its WAN rate. */
    private Path topology(Config c, Path file, String suffix) throws IOException {
        return c.profile() != null ? c.profile().writeApplied(file, workRoot.resolve(c.name() + suffix))
                : withWanRate(file, c.wanRate(), c.name() + suffix);
    }

    /** A copy of a topology file with its WAN set to {@code rate} (validated by loading it); "none": the file as is. */
    private Path withWanRate(Path topology, String rate, String name) throws IOException {
        if (rate.equals(NO_WAN)) {
            if (Topology.load(topology).wan().isPresent()) {
                throw new IllegalArgumentException(topology + " has a wan: section but no rate was given");
            }
            return topology;
        }
        LinkLimit.parseRate(rate);
        String text = Files.readString(topology);
        if (Topology.load(topology).wan().isEmpty()) throw new IllegalArgumentException(topology + " has no wan: section");
        String changed = text.replaceFirst("(?m)^(\\s*rate:\\s*)\\S+", "$1" + rate);
        Path file = Files.createDirectories(workRoot).resolve(name);
        Files.writeString(file, changed);
        Topology.load(file); // fails clearly if the substitution broke the file
        return file;
    }

    // ------------------------------------------------------------------------------------------- figures per run

    /** XAF's step time relative to a peer's: negative when XAF's step is shorter (-0.3: 30% shorter). */
    static double vsPeer(double xafStepMs, double peerStepMs) {
        return (xafStepMs - peerStepMs) / peerStepMs;
    }

    static double commShare(TrainResult r) {
        return r.meanCommMs() / (r.meanComputeMs() + r.meanCommMs());
    }

    /** WAN utilisation: the busier direction's bits over the window, relative to the WAN rate. */
    static double wanUtilisation(TrainResult r) {
        Map<String, Long> c = r.gatewayCounters();
        long window = c.getOrDefault("window_ns", 0L);
        if (window <= 0 || r.spec().rateLimit().equals(NO_WAN)) return Double.NaN;
        long bytes = Math.max(c.getOrDefault("wan_bytes_to_dc", 0L), c.getOrDefault("wan_bytes_from_dc", 0L));
        return bytes * 8.0 / (LinkLimit.parseRate(r.spec().rateLimit()) * (window / 1e9));
    }

    /**
     * How busy a core was over the window (the workers' core or the gateway's: "worker" or "gateway"), 0..1; NaN
     * when not measured. Whichever is near 1 sets the pace of the job.
     */
    static double coreBusy(TrainResult r, String core) {
        Map<String, Long> c = r.gatewayCounters();
        long window = c.getOrDefault("window_ns", 0L);
        Long busy = c.get(core + "_core_busy_ns");
        return window <= 0 || busy == null ? Double.NaN : Math.min(1.0, (double) busy / window);
    }

    /**
     * How much of the CPU it may use the gateway's data path used over the window, 0..1: of its budget when the
     * gateway's CPU is budgeted ({@code share} < 1), else of its core. Near 1 the gateway sets the pace; unlike the
     * gateway's core busy, it leaves out the budget's own duty-cycle thread. NaN when not measured.
     */
    static double gatewayCpuUsed(TrainResult r, double share) {
        Map<String, Long> c = r.gatewayCounters();
        long window = c.getOrDefault("window_ns", 0L);
        Long cpu = c.get("gateway_cpu_ns");
        return window <= 0 || cpu == null ? Double.NaN : cpu / (window * share);
    }

    /** A share as a whole percentage, "-" when not measured (NaN: no WAN, or no placement). */
    static String percent(double share) {
        return Double.isNaN(share) ? "-" : String.format(Locale.ROOT, "%.0f%%", 100 * share);
    }

    /** Gateway CPU time per packet between the data centers (through the WAN, or out of the gateway's ports), in ns. */
    static double gatewayNsPerPacket(TrainResult r) {
        Map<String, Long> c = r.gatewayCounters();
        long packets = c.getOrDefault("wan_packets", 0L);
        return packets == 0 ? Double.NaN : (double) c.getOrDefault("gateway_cpu_ns", 0L) / packets;
    }

    /** Frames dropped on the way: the WAN queue's drops plus the gateway's own drop counters (xdp, relay, afxdp). */
    static long drops(TrainResult r) {
        long d = r.gatewayCounters().getOrDefault("wan_drops", 0L);
        for (var e : r.gatewayCounters().entrySet())
            if (e.getKey().startsWith("xaf_packets_total{drop")) d += e.getValue();
        return d;
    }

    static long retransmits(TrainResult r) {
        return r.gatewayCounters().getOrDefault("retransmits", 0L);
    }

    /** Compute alone: the mean of what the ranks report as compute per step (forward, backward, optimizer), step 1 left out. */
    static double computeAloneMs(TrainResult r) {
        return r.meanComputeMs();
    }

    /** Exposed communication: the median step beyond compute alone, the time a step waits on the network. */
    static double exposedCommMs(TrainResult r) {
        return Math.max(0, r.medianStepMs() - r.meanComputeMs());
    }

    /**
     * The time the WAN needs per step for the bytes this run moved through it: the busier direction's bytes from
     * the end of step 1 to the end, per step, over the WAN rate. NaN without a WAN or its counters.
     */
    static double wanMsPerStep(TrainResult r) {
        Map<String, Long> c = r.gatewayCounters();
        int steps = r.steps().size() - 1;
        Long to = c.get("wan_bytes_to_dc"), from = c.get("wan_bytes_from_dc");
        if (to == null || from == null || steps < 1 || r.spec().rateLimit().equals(NO_WAN)) return Double.NaN;
        return Math.max(to, from) * 8.0 / steps / LinkLimit.parseRate(r.spec().rateLimit()) * 1e3;
    }

    /**
     * The step's floor for this run's bytes: compute alone plus the WAN's time for the bytes of a step
     * ({@link #wanMsPerStep}), i.e. a step in which nothing overlaps and the WAN never idles. Overlap of compute and
     * communication can beat it; a step far above it left the WAN idle.
     */
    static double floorMs(TrainResult r) {
        return computeAloneMs(r) + wanMsPerStep(r);
    }

    /** The delay line's counters that are not the emulated loss: frames it could not hold, take in or send on. */
    static final List<String> DELAY_LINE_DROPS = List.of("ring_full", "oversize", "queue_drops", "send_errors", "socket_drops");

    /**
     * Frames the WAN's delay line lost on purpose (the profile's or the file's loss), both directions, over the whole
     * job; NaN without a delay line.
     */
    static double delayLineLost(TrainResult r) {
        return delayLineSum(r, List.of("lost"));
    }

    /** Frames the delay line dropped though no loss asked for it ({@link #DELAY_LINE_DROPS}), both directions; NaN without one. */
    static double delayLineDrops(TrainResult r) {
        return delayLineSum(r, DELAY_LINE_DROPS);
    }

    private static double delayLineSum(TrainResult r, List<String> names) {
        long sum = 0;
        boolean any = false;
        for (var e : r.gatewayCounters().entrySet()) {
            if (!e.getKey().startsWith("delay_line.")) continue;
            any = true;
            if (names.contains(e.getKey().substring(e.getKey().lastIndexOf('.') + 1))) sum += e.getValue();
        }
        return any ? sum : Double.NaN;
    }

    /** The slowest step of the run, the first one included (the median leaves it out). */
    static double slowestStepMs(TrainResult r) {
        return r.steps().stream().mapToDouble(TrainResult.Step::stepMs).max().orElse(Double.NaN);
    }

    private static double median(List<Run> runs, ToDoubleFunction<Run> f) {
        return TrainResult.median(runs.stream().mapToDouble(f).toArray());
    }

    private static String spread(List<Run> runs, ToDoubleFunction<Run> f, String format) {
        double[] v = runs.stream().mapToDouble(f).toArray();
        double min = Arrays.stream(v).min().orElse(Double.NaN), max = Arrays.stream(v).max().orElse(Double.NaN);
        return String.format(Locale.ROOT, format + " [" + format + ", " + format + "]", TrainResult.median(v), min, max);
    }

    private void write(List<Run> all) throws IOException {
        Files.createDirectories(outDir);
        StringBuilder md = new StringBuilder();
        md.append("# Training time: endpoint x gateway ablation\n\n");
        md.append("Produced by `").append(System.getProperty("xaf.bench.command", "./xaf bench train")).append("`.\n");
        md.append("Machine: ").append(Runtime.getRuntime().availableProcessors()).append(" CPUs, ")
                .append(System.getProperty("os.name")).append(' ').append(System.getProperty("os.version"))
                .append(", JDK ").append(Runtime.version()).append(". Cells run interleaved (A B C A B C ...); ")
                .append(runs).append(" run(s) each; figures are medians with [min, max] over runs.")
                .append(gatewayCpuShare < 1 ? String.format(Locale.ROOT, " The gateway's CPU is budgeted to %.0f%% in every job"
                        + " (a real-time duty-cycle thread on its CPU takes the rest; docs/bench/README.md).", gatewayCpuShare * 100) : "")
                .append(torchBlas.isEmpty() ? "" : " The torch peers' BLAS: " + String.join(", ", torchBlas) + ".")
                .append("\n\n");
        md.append(BenchTrainText.INTRO);
        List<Map<String, Object>> json = new ArrayList<>();
        for (Config c : configs.stream().flatMap(base -> variants(base).stream()).toList()) {
            md.append("## ").append(c.name()).append("\n\n").append(c.description())
                    .append(c.wanRate().equals(NO_WAN) ? " No WAN" : " WAN " + c.wanRate() + " per direction")
                    .append("; ").append(c.steps()).append(" steps, global batch ").append(c.globalBatch())
                    .append(", preset ").append(c.preset()).append(".\n\n");
            Map<Cell, List<Run>> byCell = new LinkedHashMap<>();
            for (Run r : all) if (r.config().equals(c.name())) byCell.computeIfAbsent(r.cell(), k -> new ArrayList<>()).add(r);
            List<GatewayMode> ddpModes = runDdpGloo ? DdpGlooPeer.MODES : List.of();
            md.append("| endpoint | gateway | topology | time per step, ms | communication share | WAN utilisation | workers' core busy | gateway's core busy | gateway CPU used | gateway CPU per packet, ns | drops | retransmissions | vs xdp |");
            for (GatewayMode m : ddpModes) md.append(" vs ddp-gloo ").append(m.configName()).append(" |");
            md.append("\n|---|---|---|---|---|---|---|---|---|---|---|---|---|").append("---|".repeat(ddpModes.size())).append('\n');
            for (var e : byCell.entrySet()) {
                List<Run> rs = e.getValue();
                List<Run> xdp = e.getKey().xaf() ? byCell.get(new Cell(e.getKey().endpoint(), GatewayMode.XDP, e.getKey().sync())) : null;
                double step = median(rs, r -> r.result().medianStepMs());
                String vsXdp = xdp == null || e.getKey().mode() == GatewayMode.XDP ? "-"
                        : String.format(Locale.ROOT, "%+.1f%%", 100 * (step - median(xdp, r -> r.result().medianStepMs())) / step);
                StringBuilder vsDdp = new StringBuilder();
                for (GatewayMode m : ddpModes) {
                    List<Run> ddp = byCell.get(Cell.ddpGloo(m));
                    vsDdp.append(' ').append(ddp == null || e.getKey().peer().equals(DdpGlooPeer.NAME) || e.getKey().peer().equals(DilocoGlooPeer.NAME) || e.getKey().sync() != SyncMode.DDP ? "-"
                            : String.format(Locale.ROOT, "%+.1f%%", 100 * vsPeer(step, median(ddp, r -> r.result().medianStepMs())))).append(" |");
                }
                md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s |%s%n",
                        e.getKey().rowLabel(), e.getKey().mode().configName(), rs.getFirst().topology(),
                        spread(rs, r -> r.result().medianStepMs(), "%.0f"),
                        percent(median(rs, r -> commShare(r.result()))), percent(median(rs, r -> wanUtilisation(r.result()))),
                        percent(median(rs, r -> coreBusy(r.result(), "worker"))),
                        percent(median(rs, r -> coreBusy(r.result(), "gateway"))),
                        percent(median(rs, r -> gatewayCpuUsed(r.result(), gatewayCpuShare))),
                        spread(rs, r -> gatewayNsPerPacket(r.result()), "%.0f"),
                        (long) median(rs, r -> drops(r.result())), (long) median(rs, r -> retransmits(r.result())), vsXdp, vsDdp));
                for (Run r : rs) json.add(jsonRun(c, r));
            }
            md.append("\n\"vs xdp\": how much shorter (+) or longer (-) the xdp gateway's median step is than this row's,"
                    + " relative to this row, same endpoint and sync.\n\n");
            md.append(floorTable(byCell));
            if (runDdpGloo) md.append(BenchTrainText.DDP_GLOO);
            if (dilocoRuns()) md.append(DilocoReport.section(c, byCell, diloco, outDir));
            for (var e : skipped.entrySet())
                md.append("Not run: ").append(e.getKey()).append(": ").append(e.getValue()).append(".\n\n");
            for (var e : failed.entrySet())
                if (e.getKey().startsWith(c.name() + ": "))
                    md.append("Failed runs, ").append(e.getKey()).append(" (left out of the row): ")
                            .append(String.join("; ", e.getValue())).append("\n\n");
            md.append("![time per step](train-").append(c.name()).append("-step.png) ![loss curves](train-")
                    .append(c.name()).append("-loss.png)\n\n");
            plots(c, byCell);
        }
        if (!profiles.isEmpty()) for (Config base : configs) md.append(profileSection(base, all));
        md.append(BenchTrainText.READING);
        Files.writeString(outDir.resolve("train.md"), md.toString());
        Files.writeString(outDir.resolve("train.json"), Json.pretty(json));
        out.println("wrote " + outDir.resolve("train.md"));
    }

    /**
     * The step against its floor, per row: median step [min, max] over runs and the slowest step of any run (the
     * first step included), compute alone, exposed communication, the WAN's time for the row's bytes, WAN
     * utilisation, the floor (compute alone + WAN time) and the step over it, retransmissions [min, max].
     */
    static String floorTable(Map<Cell, List<Run>> byCell) {
        StringBuilder md = new StringBuilder();
        md.append("| endpoint | gateway | step, ms | slowest step, ms | compute alone, ms | exposed communication, ms"
                + " | WAN time per step, ms | WAN utilisation | floor, ms | step / floor | retransmissions | delay line: lost / dropped |\n");
        md.append("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (var e : byCell.entrySet()) {
            List<Run> rs = e.getValue();
            double step = median(rs, r -> r.result().medianStepMs()), floor = median(rs, r -> floorMs(r.result()));
            double lost = median(rs, r -> delayLineLost(r.result())), dropped = median(rs, r -> delayLineDrops(r.result()));
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %s | %.0f | %s | %s | %s |%n",
                    e.getKey().rowLabel(), e.getKey().mode().configName(), spread(rs, r -> r.result().medianStepMs(), "%.0f"),
                    rs.stream().mapToDouble(r -> slowestStepMs(r.result())).max().orElse(Double.NaN),
                    median(rs, r -> computeAloneMs(r.result())), median(rs, r -> exposedCommMs(r.result())),
                    median(rs, r -> wanMsPerStep(r.result())), percent(median(rs, r -> wanUtilisation(r.result()))),
                    floor, Double.isNaN(floor) ? "-" : String.format(Locale.ROOT, "%.2fx", step / floor),
                    spread(rs, r -> retransmits(r.result()), "%.0f"),
                    Double.isNaN(lost) ? "-" : String.format(Locale.ROOT, "%.0f / %.0f", lost, dropped)));
        }
        md.append("\nFloor = compute alone + WAN time per step, where WAN time = the busier direction's WAN bytes per step"
                + " (from the end of step 1 to the end) x 8 / the WAN rate: the step if nothing overlapped and the WAN never"
                + " idled. Slowest step: the longest of any run, step 1 included (the median leaves step 1 out)."
                + " Retransmissions: every rank's transport (the agents' for pytorch-xaf), TCP's segments for the Gloo peers."
                + " Delay line: frames the WAN's delay line lost as its loss setting asks / dropped otherwise (ring full,"
                + " oversize, socket or send drops), both directions, whole job, median over runs; '-' without a delay line.\n\n");
        return md.toString();
    }

    /**
     * The cells of configuration {@code base} across the WAN profiles: median step and slowest step per profile,
     * and the plot of step time against round trip (one line per cell).
     */
    private String profileSection(Config base, List<Run> all) throws IOException {
        List<Config> variants = variants(base);
        Map<Cell, Map<WanProfile, List<Run>>> byCell = new LinkedHashMap<>();
        for (Config v : variants)
            for (Run r : all)
                if (r.config().equals(v.name()))
                    byCell.computeIfAbsent(r.cell(), k -> new LinkedHashMap<>()).computeIfAbsent(v.profile(), k -> new ArrayList<>()).add(r);
        StringBuilder md = new StringBuilder("## ").append(base.name()).append(" across WAN profiles\n\n");
        for (Config v : variants) md.append("- ").append(v.profile().describe()).append(": ").append(v.profile().emulates()).append('\n');
        md.append("\nMedian step, ms [min, max over runs] / slowest step of any run (step 1 included):\n\n| endpoint | gateway |");
        for (Config v : variants) md.append(' ').append(v.profile().name()).append(" |");
        md.append("\n|---|---|").append("---|".repeat(variants.size())).append('\n');
        XYSeriesCollection lines = new XYSeriesCollection();
        for (var e : byCell.entrySet()) {
            md.append("| ").append(e.getKey().rowLabel()).append(" | ").append(e.getKey().mode().configName()).append(" |");
            XYSeries line = new XYSeries(e.getKey().label());
            for (Config v : variants) {
                List<Run> rs = e.getValue().get(v.profile());
                if (rs == null) {
                    md.append(" - |");
                    continue;
                }
                md.append(' ').append(spread(rs, r -> r.result().medianStepMs(), "%.0f")).append(String.format(Locale.ROOT, " / %.0f |",
                        rs.stream().mapToDouble(r -> slowestStepMs(r.result())).max().orElse(Double.NaN)));
                line.add(v.profile().roundTripMs(), median(rs, r -> r.result().medianStepMs()));
            }
            md.append('\n');
            lines.addSeries(line);
        }
        System.setProperty("java.awt.headless", "true");
        JFreeChart chart = ChartFactory.createXYLineChart(base.name() + ": time per step against the WAN's round trip",
                "round trip added by the WAN, ms", "median time per step, ms", lines, PlotOrientation.VERTICAL, true, false, false);
        chart.getXYPlot().setRenderer(new XYLineAndShapeRenderer(true, true));
        String png = "train-" + base.name() + "-rtt.png";
        ChartUtils.saveChartAsPNG(outDir.resolve(png).toFile(), chart, 900, 500);
        md.append("\n![time per step against round trip](").append(png).append(")\n\n");
        return md.toString();
    }

    private Map<String, Object> jsonRun(Config c, Run r) {
        Map<String, Object> run = new LinkedHashMap<>();
        run.put("config", c.name());
        run.put("peer", r.cell().peer());
        run.put("endpoint", r.cell().endpointLabel());
        run.put("mode", r.cell().mode().configName());
        run.put("sync", r.cell().sync().configName());
        run.put("topology", r.topology());
        run.put("wan_rate", c.wanRate());
        run.put("gateway_cpu_share", gatewayCpuShare);
        run.put("run", r.run());
        run.put("median_step_ms", r.result().medianStepMs());
        run.put("compute_ms", r.result().meanComputeMs());
        run.put("comm_ms", r.result().meanCommMs());
        run.put("comm_share", commShare(r.result()));
        run.put("wan_utilisation", wanUtilisation(r.result()));
        run.put("workers_core_busy", coreBusy(r.result(), "worker"));
        run.put("gateway_core_busy", coreBusy(r.result(), "gateway"));
        run.put("gateway_cpu_used", gatewayCpuUsed(r.result(), gatewayCpuShare));
        run.put("gateway_ns_per_packet", gatewayNsPerPacket(r.result()));
        run.put("drops", drops(r.result()));
        run.put("retransmits", retransmits(r.result()));
        run.put("wan_profile", c.profile() == null ? null : c.profile().name());
        run.put("round_trip_ms", c.profile() == null ? null : c.profile().roundTripMs());
        run.put("compute_alone_ms", computeAloneMs(r.result()));
        run.put("exposed_comm_ms", exposedCommMs(r.result()));
        run.put("wan_ms_per_step", wanMsPerStep(r.result()));
        run.put("floor_ms", floorMs(r.result()));
        run.put("slowest_step_ms", slowestStepMs(r.result()));
        run.put("delay_line_lost", delayLineLost(r.result()));
        run.put("delay_line_drops", delayLineDrops(r.result()));
        run.put("step_ms", r.result().steps().stream().map(TrainResult.Step::stepMs).toList());
        run.put("training_s", r.result().trainingSeconds());
        run.put("final_loss", r.result().finalLoss());
        run.put("counters", r.result().gatewayCounters());
        run.put("losses", r.result().steps().stream().map(TrainResult.Step::loss).toList());
        run.put("gateway_bytes_per_step", DilocoReport.gatewayBytesPerStep(r.result()));
        run.put("validation", DilocoReport.curve(r.result()).stream().map(p -> Map.of("step", p.step(), "training_s", p.seconds(),
                "loss", p.validation().loss(), "standard_error", p.validation().standardError(), "windows", p.validation().windows())).toList());
        return run;
    }

    private void plots(Config c, Map<Cell, List<Run>> byCell) throws IOException {
        System.setProperty("java.awt.headless", "true");
        XYSeriesCollection losses = new XYSeriesCollection();
        DefaultCategoryDataset steps = new DefaultCategoryDataset();
        for (var e : byCell.entrySet()) {
            XYSeries s = new XYSeries(e.getKey().label());
            for (TrainResult.Step st : e.getValue().getFirst().result().steps()) s.add(st.step(), st.loss());
            losses.addSeries(s);
            steps.addValue(median(e.getValue(), r -> r.result().meanComputeMs()), "compute", e.getKey().label());
            steps.addValue(median(e.getValue(), r -> r.result().meanCommMs()), "communication", e.getKey().label());
        }
        JFreeChart loss = ChartFactory.createXYLineChart(c.name() + ": training loss", "step", "loss",
                losses, PlotOrientation.VERTICAL, true, false, false);
        ChartUtils.saveChartAsPNG(outDir.resolve("train-" + c.name() + "-loss.png").toFile(), loss, 800, 450);
        JFreeChart bars = ChartFactory.createStackedBarChart(c.name() + ": time per step (mean compute + communication)",
                "endpoint / gateway", "ms", steps, PlotOrientation.VERTICAL, true, false, false);
        ChartUtils.saveChartAsPNG(outDir.resolve("train-" + c.name() + "-step.png").toFile(), bars, 900, 450);
    }
}
