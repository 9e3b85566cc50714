package io.xaforward.bench.allreduce;

import io.xaforward.bench.WanProfile;
import io.xaforward.testbed.CpuBudget;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.cluster.Endpoint;
import io.xaforward.cluster.ClusterRun;
import io.xaforward.collective.Algorithm;
import io.xaforward.testbed.LinkLimit;
import io.xaforward.testbed.Topology;
import io.xaforward.transport.WireSecurity;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * {@code xaf bench allreduce}: all-reduce bandwidth across the emulated data centers per size x gateway mode x
 * algorithm, reported as nccl-tests does (algbw = bytes / time, busbw = algbw · 2(n−1)/n), median of several runs
 * with min and max; plus WAN goodput on a rate-limited topology as a fraction of the configured link rate.
 *
 * <p>Runs are interleaved so that slow drift of a shared machine spreads over all cells: inside one job every run
 * goes through all sizes and algorithms; with several modes each job is one run of one mode, modes alternating.
 * Large sizes ({@code >= bigSizeBytes}) get their own jobs with {@code bigRuns} runs, to bound the wall time.
 */
public final class AllReduceBenchmark {

    /**
     * What to measure. {@code goodputTopology} null skips the goodput part; {@code endpoint} null gives every mode
     * its default endpoint (afxdp with the xdp gateway, udp otherwise); {@code gloo} adds PyTorch's Gloo
     * (torch.distributed over TCP) as a row, through kernel forwarding (same-form topology) or the kernel tunnel.
     * {@code flows}: UDP flows per worker, one row per count and mode ({@link ClusterRun.Spec#flows()}).
     * {@code wanProfiles}: every row runs over each of these WANs set on the topology's {@code wan:} section,
     * interleaved with the rows (empty: the topology as it is).
     */
    public record Options(Path topology, List<GatewayMode> modes, List<Algorithm> algorithms, List<Long> sizesBytes, int runs,
                          long bigSizeBytes, int bigRuns, int iterations, Path goodputTopology, long goodputBytes,
                          int goodputRepeats, double pacingFraction, Path workDir, Endpoint endpoint, boolean gloo,
                          List<WireSecurity> wireSecurities, List<Integer> flows, List<WanProfile> wanProfiles) {
        public Options {
            wanProfiles = List.copyOf(wanProfiles);
            if (!wanProfiles.isEmpty() && Topology.load(topology).wan().isEmpty())
                throw new IllegalArgumentException("--wan-profile sets a WAN's rate, delay and loss, but " + topology + " has no wan: section");
            wireSecurities = List.copyOf(wireSecurities);
            if (wireSecurities.isEmpty()) throw new IllegalArgumentException("no wire security given");
            flows = List.copyOf(flows);
            if (flows.isEmpty()) throw new IllegalArgumentException("no flow count given");
            for (GatewayMode mode : modes) {
                for (int n : flows) Endpoint.checkFlows(Endpoint.resolve(endpoint, mode), n); // before any job
            }
        }

        public Options(Path topology, List<GatewayMode> modes, List<Algorithm> algorithms, List<Long> sizesBytes, int runs,
                       long bigSizeBytes, int bigRuns, int iterations, Path goodputTopology, long goodputBytes,
                       int goodputRepeats, double pacingFraction, Path workDir, Endpoint endpoint, boolean gloo,
                       List<WireSecurity> wireSecurities, List<Integer> flows) {
            this(topology, modes, algorithms, sizesBytes, runs, bigSizeBytes, bigRuns, iterations, goodputTopology,
                    goodputBytes, goodputRepeats, pacingFraction, workDir, endpoint, gloo, wireSecurities, flows, List.of());
        }

        public Options(Path topology, List<GatewayMode> modes, List<Algorithm> algorithms, List<Long> sizesBytes, int runs,
                       long bigSizeBytes, int bigRuns, int iterations, Path goodputTopology, long goodputBytes,
                       int goodputRepeats, double pacingFraction, Path workDir, Endpoint endpoint, boolean gloo,
                       List<WireSecurity> wireSecurities) {
            this(topology, modes, algorithms, sizesBytes, runs, bigSizeBytes, bigRuns, iterations, goodputTopology,
                    goodputBytes, goodputRepeats, pacingFraction, workDir, endpoint, gloo, wireSecurities, List.of(1));
        }

        public Options(Path topology, List<GatewayMode> modes, List<Algorithm> algorithms, List<Long> sizesBytes, int runs,
                       long bigSizeBytes, int bigRuns, int iterations, Path goodputTopology, long goodputBytes,
                       int goodputRepeats, double pacingFraction, Path workDir, Endpoint endpoint, boolean gloo) {
            this(topology, modes, algorithms, sizesBytes, runs, bigSizeBytes, bigRuns, iterations, goodputTopology,
                    goodputBytes, goodputRepeats, pacingFraction, workDir, endpoint, gloo, List.of(WireSecurity.CRC32C));
        }

        public Options(Path topology, List<GatewayMode> modes, List<Algorithm> algorithms, List<Long> sizesBytes, int runs,
                       long bigSizeBytes, int bigRuns, int iterations, Path goodputTopology, long goodputBytes,
                       int goodputRepeats, double pacingFraction, Path workDir, Endpoint endpoint) {
            this(topology, modes, algorithms, sizesBytes, runs, bigSizeBytes, bigRuns, iterations, goodputTopology,
                    goodputBytes, goodputRepeats, pacingFraction, workDir, endpoint, false);
        }

        public Options(Path topology, List<GatewayMode> modes, List<Algorithm> algorithms, List<Long> sizesBytes, int runs,
                       long bigSizeBytes, int bigRuns, int iterations, Path goodputTopology, long goodputBytes,
                       int goodputRepeats, double pacingFraction, Path workDir) {
            this(topology, modes, algorithms, sizesBytes, runs, bigSizeBytes, bigRuns, iterations, goodputTopology,
                    goodputBytes, goodputRepeats, pacingFraction, workDir, (Endpoint) null);
        }
    }

    /**
     * One cell of the table: times over the runs, and the bandwidths derived from them. {@code profile}: the WAN
     * profile its jobs ran over (null: the topology's own); {@code retransmits}: every rank's retransmissions in each
     * job of the cell's row (a job runs every size and algorithm of its group, so cells of one row share them).
     */
    public record Cell(String mode, String algorithm, long bytes, int ranks, double[] seconds,
                       double[] cpuMicrosPerDatagram, double[] fabricMicrosPerDatagram, double[] gatewayMicrosPerDatagram,
                       WanProfile profile, long[] retransmits) {
        public Cell(String mode, String algorithm, long bytes, int ranks, double[] seconds,
                    double[] cpuMicrosPerDatagram, double[] fabricMicrosPerDatagram, double[] gatewayMicrosPerDatagram) {
            this(mode, algorithm, bytes, ranks, seconds, cpuMicrosPerDatagram, fabricMicrosPerDatagram, gatewayMicrosPerDatagram,
                    null, new long[0]);
        }

        public Cell(String mode, String algorithm, long bytes, int ranks, double[] seconds, double[] cpuMicrosPerDatagram) {
            this(mode, algorithm, bytes, ranks, seconds, cpuMicrosPerDatagram, new double[0], new double[0]);
        }

        public Cell(String mode, String algorithm, long bytes, int ranks, double[] seconds) {
            this(mode, algorithm, bytes, ranks, seconds, new double[0]);
        }

        /** Median endpoint CPU per datagram (us, all ranks' process CPU over their datagrams); NaN if unknown. */
        public double medianCpuMicrosPerDatagram() {
            return medianKnown(cpuMicrosPerDatagram);
        }

        /** Median CPU of the emulated fabric's NAPI threads per datagram (us, same datagram count); NaN if unknown. */
        public double medianFabricMicrosPerDatagram() {
            return medianKnown(fabricMicrosPerDatagram);
        }

        /** Median CPU of the gateway's data path per datagram (us, same datagram count); NaN if unknown. */
        public double medianGatewayMicrosPerDatagram() {
            return medianKnown(gatewayMicrosPerDatagram);
        }

        private static double medianKnown(double[] values) {
            return median(Arrays.stream(values).filter(v -> !Double.isNaN(v)).toArray());
        }
        public double medianSeconds() { return median(seconds); }
        public double minSeconds() { return Arrays.stream(seconds).min().orElse(Double.NaN); }
        public double maxSeconds() { return Arrays.stream(seconds).max().orElse(Double.NaN); }
        /** GB/s (1e9 bytes) at the median time. */
        public double algbw() { return bytes / medianSeconds() / 1e9; }
        public double busbw() { return AllReduceBench.busBandwidth(algbw(), ranks); }
        /** busbw at the slowest run. */
        public double busbwMin() { return AllReduceBench.busBandwidth(bytes / maxSeconds() / 1e9, ranks); }
        /** busbw at the fastest run. */
        public double busbwMax() { return AllReduceBench.busBandwidth(bytes / minSeconds() / 1e9, ranks); }
    }

    /**
     * Goodput: payload per direction, over the configured link rate on a rate-limited topology; on a topology without
     * rate limits ({@code linkBitsPerSecond} 0, unpaced) the line rate one stream each way reaches.
     */
    public record GoodputResult(Path topology, long linkBitsPerSecond, long pacingBytesPerSecond, long bytes,
                                double[] bitsPerSecond, long retransmits) {
        public double medianBitsPerSecond() { return median(bitsPerSecond); }
        public double fraction() { return rateLimited() ? medianBitsPerSecond() / linkBitsPerSecond : Double.NaN; }
        public boolean rateLimited() { return linkBitsPerSecond > 0; }
    }

    /** Everything {@link AllReduceReport} writes. */
    public record Result(Options options, int ranks, List<Cell> cells, GoodputResult goodput, double wallSeconds,
                         Map<String, Long> gatewayCounters) {}

    private final Options options;
    private double gatewayCpuShare = 1.0;

    /**
     * Budgets the gateway's CPU to {@code share} in every job, the same for every mode
     * ({@link CpuBudget}); 1 (the default) gives it its whole CPU. Every job is placed (the
     * gateway on its own CPU, the workers and the emulated fabric on the other) whatever the share.
     */
    public AllReduceBenchmark withGatewayCpu(double share) {
        if (!(share >= 0.05 && share <= 1)) throw new IllegalArgumentException("gateway CPU share must be 5% to 100%");
        this.gatewayCpuShare = share;
        return this;
    }
    private final PrintStream out;

    public AllReduceBenchmark(Options options, PrintStream out) {
        this.options = options;
        this.out = out;
    }

    public Result run() throws Exception {
        long start = System.nanoTime();
        Files.createDirectories(options.workDir());
        List<Long> small = options.sizesBytes().stream().filter(s -> s < options.bigSizeBytes()).toList();
        List<Long> big = options.sizesBytes().stream().filter(s -> s >= options.bigSizeBytes()).toList();
        Map<String, List<Double>> times = new LinkedHashMap<>();
        Map<String, List<Double>> cpuPerDatagram = new LinkedHashMap<>();
        Map<String, List<Double>> fabricPerDatagram = new LinkedHashMap<>();
        Map<String, List<Double>> gatewayPerDatagram = new LinkedHashMap<>();
        Map<String, Long> counters = new LinkedHashMap<>();
        int[] ranks = {0};
        int jobNo = 0;
        // Rows of the table: the gateway modes, then PyTorch's Gloo when asked for (through the kernel path that
        // fits the topology), interleaved like modes.
        GatewayMode glooMode = GlooPeer.kernelModeFor(options.topology());
        List<Row> plainRows = new ArrayList<>();
        for (GatewayMode mode : options.modes()) {
            for (WireSecurity ws : options.wireSecurities()) {
                for (int n : options.flows()) plainRows.add(new Row(label(mode, ws, n), mode, ws, false, n, null, options.topology()));
            }
        }
        if (options.gloo()) plainRows.add(new Row(GlooPeer.LABEL + " (" + glooMode.configName() + ")", glooMode, WireSecurity.CRC32C, true, 1,
                null, options.topology()));
        // With WAN profiles every row runs over each profile's copy of the topology, profiles taking turns like rows.
        List<Row> rows = new ArrayList<>();
        if (options.wanProfiles().isEmpty()) rows.addAll(plainRows);
        for (WanProfile p : options.wanProfiles()) {
            Path file = p.writeApplied(options.topology(), options.workDir().resolve("topology-" + p.name() + ".yaml"));
            for (Row row : plainRows)
                rows.add(new Row(row.label() + " @ " + p.name(), row.mode(), row.wireSecurity(), row.gloo(), row.flows(), p, file));
        }
        Map<String, List<Long>> retransmitsByRow = new LinkedHashMap<>();
        for (List<Long> group : List.of(small, big)) {
            if (group.isEmpty()) continue;
            int runs = group == big ? options.bigRuns() : options.runs();
            boolean interleaveModes = rows.size() > 1;
            int jobsPerMode = interleaveModes ? runs : 1;
            for (int j = 0; j < jobsPerMode; j++) {
                for (Row row : rows) {
                    jobNo++;
                    int runsInJob = interleaveModes ? 1 : runs;
                    boolean gloo = row.gloo();
                    String label = row.label();
                    out.printf("== job %d: %s, sizes %s, %d run(s) ==%n", jobNo, gloo ? label : "mode " + label, mb(group),
                            runsInJob);
                    AllReduceSpec spec = spec(row.topology(), row.mode(), group, runsInJob, 0, jobNo, row.wireSecurity(),
                            row.flows());
                    AllReduceJob job = new AllReduceJob(spec, out, Duration.ofMinutes(20)).gatewayCpu(gatewayCpuShare).onSample(s -> {
                        out.printf(Locale.ROOT, "  %-4s %-12s %8s  run %d  %9.1f ms%s%n", label, s.algorithm(),
                                mb(List.of(s.bytes())), s.run() + 1, s.seconds() * 1e3, s.verified() ? "  verified" : "");
                    });
                    if (gloo) job.startingRanksWith(new GlooPeer(spec, options.iterations()));
                    AllReduceJob.Outcome o = job.run();
                    ranks[0] = o.worldSize();
                    for (AllReduceJob.Sample s : o.samples()) {
                        times.computeIfAbsent(key(label, s.algorithm(), s.bytes()), k -> new ArrayList<>()).add(s.seconds());
                        cpuPerDatagram.computeIfAbsent(key(label, s.algorithm(), s.bytes()), k -> new ArrayList<>())
                                .add(s.cpuMicrosPerDatagram());
                        fabricPerDatagram.computeIfAbsent(key(label, s.algorithm(), s.bytes()), k -> new ArrayList<>())
                                .add(s.fabricMicrosPerDatagram());
                        gatewayPerDatagram.computeIfAbsent(key(label, s.algorithm(), s.bytes()), k -> new ArrayList<>())
                                .add(s.gatewayMicrosPerDatagram());
                    }
                    o.gatewayCounters().forEach((k, v) -> counters.merge(k, v, Long::sum));
                    retransmitsByRow.computeIfAbsent(label, k -> new ArrayList<>())
                            .add(o.done().values().stream().mapToLong(l -> l.integer("retransmits")).sum());
                }
            }
        }
        List<Cell> cells = new ArrayList<>();
        for (long size : options.sizesBytes()) {
            for (Row row : rows) {
                String label = row.label();
                List<String> algorithms = row.gloo() ? List.of(GlooPeer.ALGORITHM)
                        : options.algorithms().stream().map(Algorithm::configName).toList();
                for (String a : algorithms) {
                    List<Double> t = times.get(key(label, a, size / 4 * 4));
                    if (t == null) continue;
                    String k = key(label, a, size / 4 * 4);
                    cells.add(new Cell(label, a, size / 4 * 4, ranks[0], t.stream().mapToDouble(Double::doubleValue).toArray(),
                            values(cpuPerDatagram.get(k)), values(fabricPerDatagram.get(k)), values(gatewayPerDatagram.get(k)),
                            row.profile(), retransmitsByRow.getOrDefault(label, List.of()).stream().mapToLong(Long::longValue).toArray()));
                }
            }
        }
        GoodputResult goodput = options.goodputTopology() == null ? null : goodput(++jobNo);
        return new Result(options, ranks[0], cells, goodput, (System.nanoTime() - start) / 1e9, counters);
    }

    private static double[] values(List<Double> list) {
        return list.stream().mapToDouble(Double::doubleValue).toArray();
    }

    private GoodputResult goodput(int jobNo) throws Exception {
        Topology t = Topology.load(options.goodputTopology());
        // a topology without rate-limited links measures what one stream each way reaches unpaced (line rate)
        long link = t.links().stream().mapToLong(LinkLimit::bitsPerSecond).min().orElse(0);
        long pacing = link > 0 ? (long) (link / 8.0 * options.pacingFraction()) : 0;
        if (link > 0) {
            out.printf(Locale.ROOT, "== job %d: goodput on %s (links %.0f Mbit/s, pacing %.1f Mbit/s per rank) ==%n", jobNo,
                    t.name(), link / 1e6, pacing * 8 / 1e6);
        } else {
            out.printf(Locale.ROOT, "== job %d: goodput on %s (no rate limit, unpaced) ==%n", jobNo, t.name());
        }
        AllReduceSpec spec = spec(options.goodputTopology(), GatewayMode.XDP, List.of(), 1, pacing, jobNo, WireSecurity.CRC32C, 1);
        AllReduceJob.Outcome o = new AllReduceJob(spec, out, Duration.ofMinutes(10)).gatewayCpu(gatewayCpuShare).run();
        double[] bps = o.goodput().stream().mapToDouble(AllReduceJob.Goodput::bitsPerSecond).toArray();
        for (AllReduceJob.Goodput g : o.goodput()) {
            out.printf(Locale.ROOT, "  %d MB each way in %.2f s: %.1f Mbit/s per direction%s%n",
                    g.bytes() >> 20, g.seconds(), g.bitsPerSecond() / 1e6,
                    link > 0 ? String.format(Locale.ROOT, " (%.0f%% of the link)", 100 * g.bitsPerSecond() / link) : "");
        }
        long retransmits = o.done().values().stream().mapToLong(l -> l.integer("retransmits")).sum();
        return new GoodputResult(options.goodputTopology(), link, pacing, options.goodputBytes(), bps, retransmits);
    }

    /**
     * A row's label: the gateway mode, followed by the wire security when it is not crc32c ("xdp+mac"), so that
     * crc32c rows keep the labels of earlier reports.
     */
    static String label(GatewayMode mode, WireSecurity ws) {
        return ws == WireSecurity.CRC32C ? mode.configName() : mode.configName() + "+" + ws.configName();
    }

    /** {@link #label(GatewayMode, WireSecurity)}, followed by the flows per worker when more than one ("xdp (2 flows)"). */
    static String label(GatewayMode mode, WireSecurity ws, int flows) {
        return flows == 1 ? label(mode, ws) : label(mode, ws) + " (" + flows + " flows)";
    }

    /**
     * A row of the table: its label, the gateway mode, wire security and flows per worker of its jobs, whether
     * Gloo is the peer, and the WAN profile (null: none) and topology file its jobs run on.
     */
    private record Row(String label, GatewayMode mode, WireSecurity wireSecurity, boolean gloo, int flows,
                       WanProfile profile, Path topology) {}

    private AllReduceSpec spec(Path topology, GatewayMode mode, List<Long> sizes, int runs, long pacing, int jobNo,
                               WireSecurity wireSecurity, int flows) {
        String prefix = "b" + Integer.toHexString(new Random().nextInt(0x100, 0x1000));
        Path dir = options.workDir().resolve("job-" + jobNo);
        ClusterRun.Spec c = new ClusterRun.Spec(topology, prefix, mode, 3, 0x5eed0003, dir,
                Endpoint.resolve(options.endpoint(), mode), flows);
        return new AllReduceSpec(c, sizes, sizes.isEmpty() ? List.of() : options.algorithms(), 1, options.iterations(), runs,
                sizes.isEmpty() ? 0 : 1, InputPattern.Kind.RANDOM, 2024, 4L << 20, Duration.ofSeconds(120), pacing,
                sizes.isEmpty() ? options.goodputBytes() : 0, sizes.isEmpty() ? options.goodputRepeats() : 0, wireSecurity);
    }

    private static String key(String mode, String a, long bytes) {
        return mode + "/" + a + "/" + bytes;
    }

    static String mb(List<Long> sizes) {
        return sizes.stream().map(s -> s % (1 << 20) == 0 ? (s >> 20) + " MB" : s + " B").reduce((a, b) -> a + ", " + b).orElse("-");
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        int n = s.length;
        return n == 0 ? Double.NaN : n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }
}
