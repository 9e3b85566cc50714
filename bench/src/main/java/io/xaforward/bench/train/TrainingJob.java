package io.xaforward.bench.train;

import io.xaforward.dataplane.gateway.GatewayMain;
import io.xaforward.testbed.GatewaySpec;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.Testbed;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.plan.IdentifierPlan;
import io.xaforward.training.SyntheticCorpus;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Runs one data-parallel training job across the emulated data centers of a topology: brings the testbed up,
 * starts the gateways of the chosen mode and one worker JVM per host (each in its own network namespace), streams
 * their progress into one {@link ProgressView}, checks that all ranks hold identical weights, and tears everything
 * down on success, failure or Ctrl-C.
 */
public final class TrainingJob {
    static final int METRICS_PORT = 9464;

    private final TrainJobSpec spec;
    private final PrintStream out;
    private final Testbed testbed = new Testbed();
    private final List<Process> workers = new ArrayList<>();
    private final List<GatewayHandle> gateways = new ArrayList<>();
    private Topology topology;

    public TrainingJob(TrainJobSpec spec, PrintStream out) {
        this.spec = spec;
        this.out = out;
    }

    /** Where rank 0 leaves the final weights (and optimizer state) of a finished job. */
    public static Path finalCheckpoint(TrainJobSpec spec) {
        return spec.workDir().resolve("final-rank0.ckpt");
    }

    /** A running gateway of some mode, as the job needs it: counters at the end, then stop. */
    public interface GatewayHandle extends AutoCloseable {
        Map<String, Long> counters();

        @Override
        void close();
    }

    /** A message from the worker threads to the launcher's loop. */
    private record Event(int rank, WorkerLine line, String text, Integer exitCode) {}

    public TrainResult run() throws Exception {
        if (!Netns.isRoot()) throw new IllegalStateException("training across emulated data centers needs root (network namespaces, XDP)");
        long start = System.nanoTime();
        Thread hook = new Thread(this::teardownQuietly, "xaf-train-teardown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            TrainResult r = runUp(start);
            return r;
        } finally {
            teardownQuietly();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException ignored) {
                // already shutting down
            }
        }
    }

    private TrainResult runUp(long start) throws Exception {
        topology = Topology.load(spec.topology()).withPrefix(spec.prefix());
        out.printf("xaf: bringing up %s (%d data centers, %d hosts) with prefix %s ...%n", topology.name(),
                topology.datacenters().size(), topology.datacenters().stream().mapToInt(d -> d.hosts().size()).sum(), spec.prefix());
        TestbedState state = testbed.up(topology);
        testbed.attachXdpPass(state);
        IdentifierPlan plan = IdentifierPlan.build(state, spec.jobId(), spec.jobToken());
        Files.createDirectories(spec.workDir());
        for (GatewaySpec gw : topology.gateways()) {
            gateways.add(startGateway(state, plan, gw.name()));
        }
        out.printf("xaf: %d gateway(s) up in %s mode%n", gateways.size(), spec.gatewayMode());

        if (!Files.exists(spec.data())) {
            SyntheticCorpus.write(spec.data(), spec.seed(), 2_000_000);
        }
        Path specFile = spec.workDir().resolve("job.properties");
        spec.write(specFile);

        int world = plan.worldSize();
        BlockingQueue<Event> events = new LinkedBlockingQueue<>();
        for (int r = 0; r < world; r++) {
            Node host = plan.host(r);
            List<String> jvm = List.of("-Xmx2g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=4",
                    "-Dai.djl.pytorch.num_threads=" + spec.threadsPerWorker(), "-Dai.djl.offline=true");
            ProcessBuilder pb = Netns.javaProcessBuilder(host.namespace(), jvm, WorkerMain.class.getName(),
                    List.of(specFile.toString(), Integer.toString(r)));
            pb.redirectError(spec.workDir().resolve("worker-" + r + ".log").toFile());
            Process p = pb.start();
            workers.add(p);
            int rank = r;
            Thread.ofPlatform().daemon(true).name("worker-" + r + "-out").start(() -> pump(rank, p, events));
        }
        out.printf("xaf: %d workers started (preset %s, %d steps, global batch %d, %s all-reduce)%n", world,
                spec.preset(), spec.steps(), spec.globalBatch(), spec.algorithm());

        ProgressView view = new ProgressView(out, spec.steps());
        Map<Long, Map<Integer, WorkerLine>> byStep = new TreeMap<>();
        List<TrainResult.Step> steps = new ArrayList<>();
        Map<Integer, WorkerLine> done = new HashMap<>();
        long parameterCount = 0;
        int exited = 0;
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(Math.max(5, spec.steps()));
        while (exited < world) {
            Event e = events.poll(5, TimeUnit.SECONDS);
            if (System.nanoTime() > deadline) throw new IllegalStateException("the job did not finish in time; worker logs in " + spec.workDir());
            if (e == null) continue;
            if (e.exitCode() != null) {
                exited++;
                if (e.exitCode() != 0 || !done.containsKey(e.rank())) {
                    throw new IllegalStateException("worker rank " + e.rank() + " failed (exit " + e.exitCode() + "):\n"
                            + tail(spec.workDir().resolve("worker-" + e.rank() + ".log"), 15));
                }
                continue;
            }
            if (e.line() == null) continue;
            switch (e.line().kind()) {
                case "start" -> parameterCount = e.line().integer("params");
                case "step" -> {
                    long s = e.line().integer("step");
                    Map<Integer, WorkerLine> at = byStep.computeIfAbsent(s, k -> new HashMap<>());
                    at.put(e.rank(), e.line());
                    if (at.size() == world) {
                        TrainResult.Step st = combine(s, at);
                        steps.add(st);
                        view.update(s, st.loss(), st.tokensPerSecond(), st.computeMs(), st.commMs(), st.stepMs());
                        byStep.remove(s);
                    }
                }
                case "done" -> done.put(e.rank(), e.line());
                default -> { }
            }
        }
        long checksum = Long.parseUnsignedLong(done.get(0).get("checksum"), 16);
        for (var d : done.entrySet()) {
            if (Long.parseUnsignedLong(d.getValue().get("checksum"), 16) != checksum) {
                throw new IllegalStateException("final weights differ: rank 0 0x" + Long.toHexString(checksum) + ", rank "
                        + d.getKey() + " 0x" + d.getValue().get("checksum"));
            }
        }
        Map<String, Long> counters = new LinkedHashMap<>();
        for (GatewayHandle g : gateways) {
            g.counters().forEach((k, v) -> counters.merge(k, v, Long::sum));
        }
        double wall = (System.nanoTime() - start) / 1e9;
        return new TrainResult(spec, world, steps, wall, counters, checksum, parameterCount);
    }

    /** Combines the ranks' reports of one step; weights must agree whenever ranks report a checksum. */
    private static TrainResult.Step combine(long step, Map<Integer, WorkerLine> at) {
        String checksum = null;
        double stepMs = 0, compute = 0, comm = 0, tps = 0;
        for (var e : at.entrySet()) {
            WorkerLine l = e.getValue();
            String c = l.values().get("checksum");
            if (c != null) {
                if (checksum != null && !checksum.equals(c)) {
                    throw new IllegalStateException("weights diverged at step " + step + ": ranks report checksums "
                            + checksum + " and " + c + " (rank " + e.getKey() + ")");
                }
                checksum = c;
            }
            stepMs = Math.max(stepMs, l.number("ms"));
            compute += l.number("compute_ms");
            comm += l.number("comm_ms");
            tps += l.number("tok_s");
        }
        WorkerLine any = at.values().iterator().next();
        double val = any.values().containsKey("val") ? any.number("val") : Double.NaN;
        // tokens/s is already global on every rank (global batch / step time): average, do not add up.
        return new TrainResult.Step(step, any.number("loss"), val, stepMs, compute / at.size(), comm / at.size(), tps / at.size());
    }

    private static void pump(int rank, Process p, BlockingQueue<Event> events) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
            for (String line; (line = r.readLine()) != null; ) {
                WorkerLine wl = WorkerLine.parse(line);
                events.add(new Event(rank, wl, line, null));
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

    private GatewayHandle startGateway(TestbedState state, IdentifierPlan plan, String gw) throws Exception {
        return switch (spec.gatewayMode()) {
            case "xdp" -> XdpGatewayProcess.start(state, plan, gw, spec.workDir(), METRICS_PORT);
            default -> throw new IllegalArgumentException("gateway mode '" + spec.gatewayMode() + "' is not available for training (use xdp)");
        };
    }

    static String tail(Path file, int lines) {
        try {
            List<String> all = Files.readAllLines(file);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    private synchronized void teardownQuietly() {
        for (Process p : workers) p.destroyForcibly();
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
        }
    }

    /** {@code xaf gateway} (the XDP gateway) as a process in the gateway's namespace. */
    static final class XdpGatewayProcess implements GatewayHandle {
        private final Process process;
        private final String namespace;
        private final int metricsPort;

        private XdpGatewayProcess(Process process, String namespace, int metricsPort) {
            this.process = process;
            this.namespace = namespace;
            this.metricsPort = metricsPort;
        }

        static XdpGatewayProcess start(TestbedState state, IdentifierPlan plan, String gw, Path workDir, int metricsPort) throws Exception {
            Path config = workDir.resolve("gateway-" + gw + ".yaml");
            Files.writeString(config, plan.gatewayYaml(gw, "127.0.0.1:" + metricsPort, 0));
            String ns = state.gatewayNamespace(gw);
            ProcessBuilder pb = Netns.javaProcessBuilder(ns, List.of("-Xmx256m", "-XX:+UseSerialGC"), GatewayMain.class.getName(),
                    List.of("--config", config.toString()));
            pb.redirectErrorStream(true);
            Process p = pb.start();
            BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()));
            StringBuilder log = new StringBuilder();
            long deadline = System.currentTimeMillis() + 60_000;
            String line;
            while ((line = r.readLine()) != null) {
                log.append(line).append('\n');
                if (line.equals(GatewayMain.READY)) break;
                if (System.currentTimeMillis() > deadline) break;
            }
            if (line == null || !line.equals(GatewayMain.READY)) {
                p.destroyForcibly();
                throw new IllegalStateException("gateway " + gw + " did not start:\n" + log);
            }
            Thread.ofPlatform().daemon(true).start(() -> r.lines().forEach(l -> { }));
            return new XdpGatewayProcess(p, ns, metricsPort);
        }

        @Override
        public Map<String, Long> counters() {
            return io.xaforward.testbed.mode.GatewayMetrics.scrape(namespace, "127.0.0.1", metricsPort);
        }

        @Override
        public void close() {
            if (!process.isAlive()) return;
            try {
                new ProcessBuilder("kill", "-TERM", Long.toString(process.pid())).start().waitFor();
                if (!process.waitFor(15, TimeUnit.SECONDS)) process.destroyForcibly();
            } catch (IOException | InterruptedException e) {
                process.destroyForcibly();
            }
        }
    }
}
