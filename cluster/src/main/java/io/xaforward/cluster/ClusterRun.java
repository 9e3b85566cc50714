package io.xaforward.cluster;

import io.xaforward.cluster.WorkerLine;
import io.xaforward.cluster.world.NextHop;
import io.xaforward.cluster.world.RankAddress;
import io.xaforward.cluster.world.World;
import io.xaforward.testbed.CpuBudget;
import io.xaforward.testbed.GatewaySpec;
import io.xaforward.testbed.Layout;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.testbed.mode.GatewayRunner;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.Testbed;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The emulated cluster of one job: brings a topology's testbed up, starts its gateways in the chosen mode (see
 * {@link GatewayMode}), starts worker JVMs in the host namespaces of the ranks and turns their stdout into one
 * stream of {@link Event}s, and tears everything down again on {@link #close()}, on failure or on Ctrl-C (a
 * shutdown hook). Shared by {@code xaf train} and {@code xaf bench allreduce}, so that both set up and clean up
 * the same way.
 *
 * <p>Use: {@code try (ClusterRun c = new ClusterRun(spec, out)) { c.up(); c.startWorker(...); ... c.poll(...) }}.
 */
public final class ClusterRun implements AutoCloseable {
    /**
     * @param prefix    name prefix of the testbed's namespaces (unique per run)
     * @param jobToken  the token the gateways accept for this job
     * @param endpoint  the workers' {@link Endpoint}; null: the gateway mode's default
     * @param flows     UDP flows each worker sends from (its port and the ones after it), and the source-port span
     *                  of the XDP gateways' routes that keeps them apart; 1 by default (docs/TRANSPORT.md, "Flows per peer")
     */
    public record Spec(Path topology, String prefix, GatewayMode gatewayMode, int jobId, int jobToken,
                       Path workDir, Endpoint endpoint, int flows) {
        public Spec {
            Objects.requireNonNull(topology, "topology");
            Objects.requireNonNull(prefix, "prefix");
            Objects.requireNonNull(gatewayMode, "gatewayMode");
            Objects.requireNonNull(workDir, "workDir");
            endpoint = Endpoint.resolve(endpoint, gatewayMode);
            Endpoint.checkFlows(endpoint, flows);
        }

        /** One flow per worker. */
        public Spec(Path topology, String prefix, GatewayMode gatewayMode, int jobId, int jobToken,
                    Path workDir, Endpoint endpoint) {
            this(topology, prefix, gatewayMode, jobId, jobToken, workDir, endpoint, 1);
        }

        /** This spec with {@code n} flows per worker. */
        public Spec withFlows(int n) {
            return new Spec(topology, prefix, gatewayMode, jobId, jobToken, workDir, endpoint, n);
        }

        /** With the gateway mode's default endpoint. */
        public Spec(Path topology, String prefix, GatewayMode gatewayMode, int jobId, int jobToken, Path workDir) {
            this(topology, prefix, gatewayMode, jobId, jobToken, workDir, null);
        }

        /**
         * Writes these fields into a worker's job file ({@link JobProperties}), mode and endpoint as their config
         * names; every kind of job file (training, all-reduce) carries them under these keys.
         */
        public void writeTo(Properties p) {
            p.setProperty("topology", topology.toAbsolutePath().toString());
            p.setProperty("prefix", prefix);
            p.setProperty("gatewayMode", gatewayMode.configName());
            p.setProperty("jobId", Integer.toString(jobId));
            p.setProperty("jobToken", Integer.toString(jobToken));
            p.setProperty("endpoint", endpoint.configName());
            if (flows > 1) p.setProperty("flows", Integer.toString(flows));
            p.setProperty("workDir", workDir.toAbsolutePath().toString());
        }

        /** What {@link #writeTo} wrote. */
        public static Spec readFrom(Properties p) {
            String endpoint = p.getProperty("endpoint");
            return new Spec(Path.of(p.getProperty("topology")), p.getProperty("prefix"),
                    GatewayMode.fromName(p.getProperty("gatewayMode")), Integer.parseInt(p.getProperty("jobId")),
                    Integer.parseInt(p.getProperty("jobToken")),
                    Path.of(p.getProperty("workDir")), endpoint == null ? null : Endpoint.fromName(endpoint),
                    Integer.parseInt(p.getProperty("flows", "1")));
        }
    }

    /**
     * One thing a worker did: printed a line ({@code line} is its parse, null when it is not a protocol line) or
     * exited ({@code exitCode} non-null).
     */
    public record Event(int rank, WorkerLine line, String text, Integer exitCode) {
        public boolean exited() {
            return exitCode != null;
        }
    }

    private final Spec spec;
    private final PrintStream out;
    private final Testbed testbed = new Testbed();
    private final List<Process> workers = new ArrayList<>();
    private final List<GatewayHandle> gateways = new ArrayList<>();
    private final Placement placement = new Placement();
    private boolean placed;
    private double gatewayCpuShare = 1.0;
    private CpuBudget budget;
    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private final Thread hook = new Thread(this::teardown, "xaf-cluster-teardown");
    private Topology topology;
    private TestbedState state;
    private IdentifierPlan plan;
    private boolean hookAdded;

    public ClusterRun(Spec spec, PrintStream out) {
        this.spec = Objects.requireNonNull(spec, "spec");
        this.out = Objects.requireNonNull(out, "out");
    }

    public Spec spec() { return spec; }

    /** Brings the testbed and the gateways up; returns the identifier plan of the job. Needs root. */
    public IdentifierPlan up() throws Exception {
        if (!Netns.isRoot()) throw new IllegalStateException("jobs across emulated data centers need root (network namespaces, XDP)");
        if (topology != null) throw new IllegalStateException("already up");
        GatewayMode mode = spec.gatewayMode();
        Runtime.getRuntime().addShutdownHook(hook);
        hookAdded = true;
        Topology t = Topology.load(spec.topology()).withPrefix(spec.prefix());
        out.printf("xaf: bringing up %s (%d data centers, %d hosts) with prefix %s ...%n", t.name(),
                t.datacenters().size(), t.datacenters().stream().mapToInt(d -> d.hosts().size()).sum(), spec.prefix());
        topology = t;
        state = testbed.up(t);
        if (mode.needsXdpOnPortPeers()) testbed.attachXdpPass(state); // only where a mode needs it: fair baselines
        if (placed) {
            placement.placeNetwork(t);
            testbed.delayLinePid(t).ifPresent(placement::placeDelayLine);
        }
        plan = IdentifierPlan.build(state, spec.jobId(), spec.jobToken(), spec.flows());
        Files.createDirectories(spec.workDir());
        for (GatewaySpec gw : t.gateways()) {
            GatewayRunner runner = mode.newRunner();
            gateways.add(GatewayHandle.of(runner));
            runner.start(state, plan, gw.name());
            if (placed) {
                for (long pid : runner.processIds()) placement.placeGatewayProcess(pid, mode.forwardsInProcess());
                placement.placeGatewayNamespace(state.gatewayNamespace(gw.name())); // the tunnel's VXLAN devices
            }
        }
        if (spec.endpoint() == Endpoint.AFXDP) releaseHostInterfaces(state);
        if (placed) out.println("xaf: placement: " + placement.describe());
        if (placed && gatewayCpuShare < 1) {
            if (!placement.pinning()) throw new IllegalStateException("a gateway CPU budget needs two CPUs (the gateway's own CPU to budget)");
            budget = CpuBudget.start(Placement.GATEWAY_CPU, gatewayCpuShare);
            out.println("xaf: gateway CPU budget: " + budget);
        }
        out.printf("xaf: %d gateway(s) up in %s mode, %s endpoints%s%n", gateways.size(), mode.configName(), spec.endpoint().configName(),
                spec.flows() > 1 ? " with " + spec.flows() + " flows each" : "");
        return plan;
    }

    /**
     * A host wired straight to a gateway port got XDP_PASS on its interface from the testbed and the gateway (so
     * that redirected frames are accepted); an AF_XDP worker attaches the XAF program there itself, which serves the same purpose, so the
     * placeholder goes.
     */
    private void releaseHostInterfaces(TestbedState state) {
        Set<String> hostNamespaces = new HashSet<>();
        for (Node h : state.hosts()) hostNamespaces.add(h.namespace());
        for (Node port : state.gatewayPorts()) {
            if (hostNamespaces.contains(port.peerNamespace())) {
                testbed.detachXdp(state.topology().prefix(), port.peerNamespace(), port.peerIface());
            }
        }
    }

    /**
     * Places the job like real machines before {@link #up()}: the gateway on a CPU of its own, workers and the emulated
     * network on the other, every veth with threaded NAPI (see {@link Placement}); benchmarks do this so that every
     * mode runs under the same placement and the gateway's CPU time can be measured.
     */
    public ClusterRun placed() {
        if (topology != null) throw new IllegalStateException("placement must be chosen before up()");
        placed = true;
        return this;
    }

    /**
     * {@link #placed()}, with the gateway's CPU budgeted to {@code share} (0.05 to 1) while the job runs: a real-time
     * duty-cycle thread on the gateway CPU ({@link io.xaforward.testbed.CpuBudget}) holds the ports' NAPI kernel
     * threads and any gateway process alike. Needs two CPUs and root.
     */
    public ClusterRun placed(double gatewayCpuShare) {
        if (!(gatewayCpuShare >= 0.05 && gatewayCpuShare <= 1)) throw new IllegalArgumentException("gateway CPU share must be 5% to 100%");
        placed();
        this.gatewayCpuShare = gatewayCpuShare;
        return this;
    }

    /** The network's counters now (gateway CPU time, WAN bytes, packets and drops). */
    public NetworkSample sampleNetwork() {
        return NetworkSample.take(topology(), placement);
    }

    /** Where the gateway and the workers run; its {@link Placement#gatewayCpuNs()} is the gateway's CPU time. */
    public Placement placement() {
        return placement;
    }

    public IdentifierPlan plan() {
        if (plan == null) throw new IllegalStateException("the cluster is not up");
        return plan;
    }

    public Topology topology() {
        if (topology == null) throw new IllegalStateException("the cluster is not up");
        return topology;
    }

    /** What the testbed built: namespaces, hosts, gateway ports and their veth peers. */
    public TestbedState state() {
        if (state == null) throw new IllegalStateException("the cluster is not up");
        return state;
    }

    /** Starts the worker of {@code rank} in its host namespace; its stderr goes to {@link #workerLog}. */
    public void startWorker(int rank, List<String> jvmArgs, String mainClass, List<String> args) throws IOException {
        List<String> jvm = new ArrayList<>(inheritedSystemProperties());
        jvm.addAll(jvmArgs);
        startProcess(rank, Netns.javaProcessBuilder(plan().host(rank).namespace(), jvm, mainClass, args).command());
    }

    /**
     * The system properties of this JVM that every worker JVM of the job must share, as {@code -D} arguments: the
     * wire's AES-GCM library ({@code xaf.wire.crypto}), so that {@code java -Dxaf.wire.crypto=jdk ... xaf train}
     * measures what it names. Given first, so a worker's own arguments still win.
     */
    static List<String> inheritedSystemProperties() {
        List<String> out = new ArrayList<>();
        for (String name : INHERITED_PROPERTIES) {
            String value = System.getProperty(name);
            if (value != null) out.add("-D" + name + "=" + value);
        }
        return out;
    }

    private static final List<String> INHERITED_PROPERTIES = List.of("xaf.wire.crypto");

    /**
     * Starts {@code command} (already wrapped to run in the host namespace of {@code rank}, e.g. by
     * {@link Netns#processBuilder}) as that rank's worker, under the placement when the job is placed: its stdout
     * lines become {@link Event}s, its stderr goes to {@link #workerLog}.
     */
    public synchronized void startProcess(int rank, List<String> command) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(placedCommand(command)); // the affinity is inherited through exec by the process and its threads
        pb.redirectError(workerLog(rank).toFile());
        Process p = pb.start();
        workers.add(p);
        Thread.ofPlatform().daemon(true).name("worker-" + rank + "-out").start(() -> pump(rank, p));
    }

    /**
     * {@code command} (already wrapped to run in a host namespace) as a rank's process must run: under the job's
     * placement when it is placed. For processes a job starts and follows itself ({@link #stopOnTeardown}).
     */
    public List<String> placedCommand(List<String> command) {
        List<String> full = new ArrayList<>(placed ? placement.workerCommandPrefix() : List.of());
        full.addAll(command);
        return full;
    }

    /** Stops {@code process} with the workers on {@link #close()} (or Ctrl-C): a process a job started itself. */
    public synchronized void stopOnTeardown(Process process) {
        workers.add(process);
    }

    /**
     * The job's world as an operator would write it into a cluster file ({@link io.xaforward.cluster.world.ClusterFile}):
     * every rank's host address and each data center's gateway port. Processes that join a job as on real hosts
     * ({@code xaf worker}, {@code xaf agent}) read it.
     */
    public World world() {
        IdentifierPlan p = plan();
        List<RankAddress> ranks = new ArrayList<>();
        for (int r = 0; r < p.worldSize(); r++) {
            Node h = p.host(r);
            ranks.add(new RankAddress(r, h.datacenter(), h.form(), h.mtu(),
                    Optional.ofNullable(h.ip()), Optional.ofNullable(h.mac()), h.identity(),
                    Optional.of(h.iface())));
        }
        Map<String, NextHop> hops = new LinkedHashMap<>();
        for (Node port : state.gatewayPorts()) {
            hops.putIfAbsent(port.datacenter(), new NextHop(
                    Optional.ofNullable(port.ip()), Optional.ofNullable(port.mac())));
        }
        return new World(spec.jobId(), ranks, hops);
    }

    /** The namespaces of the gateways (where the edge firewall runs). */
    public List<String> gatewayNamespaces() {
        Layout layout = Layout.of(topology());
        return topology().gateways().stream().map(g -> layout.gatewayNamespace(g.name())).toList();
    }

    /** The next event, or null after {@code timeout}. */
    public Event poll(long timeout, TimeUnit unit) throws InterruptedException {
        return events.poll(timeout, unit);
    }

    public Path workerLog(int rank) {
        return spec.workDir().resolve("worker-" + rank + ".log");
    }

    /** The last {@code lines} lines of a worker's log. */
    public String logTail(int rank, int lines) {
        return tail(workerLog(rank), lines);
    }

    /**
     * The WAN delay line's counters since it started, per direction ({@code to-dc.lost}, {@code to-gateway.socket_drops},
     * ...; {@link Testbed#delayLineCounters}), as it last wrote them (every second); empty without a delay line.
     */
    public Map<String, Long> delayLineCounters() {
        return testbed.delayLineCounters(topology());
    }

    /** Counters of all gateways, summed per name; empty once torn down or when a gateway cannot be read. */
    public synchronized Map<String, Long> gatewayCounters() {
        Map<String, Long> counters = new LinkedHashMap<>();
        for (GatewayHandle g : gateways) {
            try {
                g.counters().forEach((k, v) -> counters.merge(k, v, Long::sum));
            } catch (RuntimeException e) {
                out.println("xaf: cannot read gateway counters: " + e.getMessage());
            }
        }
        return counters;
    }

    private void pump(int rank, Process p) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
            for (String line; (line = r.readLine()) != null; ) {
                events.add(new Event(rank, WorkerLine.parse(line), line, null));
            }
        } catch (IOException ignored) {
            // the process ended; its exit code tells
        }
        try {
            events.add(new Event(rank, null, null, p.waitFor()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public static String tail(Path file, int lines) {
        try {
            List<String> all = Files.readAllLines(file);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    /** Stops workers and gateways and removes the testbed; idempotent. */
    @Override
    public void close() {
        teardown();
        if (hookAdded) {
            hookAdded = false;
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException ignored) {
                // already shutting down
            }
        }
    }

    private synchronized void teardown() {
        if (budget != null) {
            budget.close();
            budget = null;
        }
        for (Process p : workers) p.destroyForcibly();
        for (Process p : workers) {
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        workers.clear();
        for (GatewayHandle g : gateways) {
            try {
                g.close();
            } catch (RuntimeException ignored) {
                // best effort: the namespace removal below takes whatever is left
            }
        }
        gateways.clear();
        if (topology != null) {
            try {
                testbed.down(topology);
            } catch (RuntimeException e) {
                out.println("xaf: teardown: " + e.getMessage());
            }
            topology = null;
            state = null;
        }
    }
}
