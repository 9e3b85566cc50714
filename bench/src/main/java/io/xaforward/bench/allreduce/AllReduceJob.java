package io.xaforward.bench.allreduce;

import io.xaforward.cluster.ClusterRun;
import io.xaforward.cluster.NetworkCpu;
import io.xaforward.cluster.WorkerLine;
import io.xaforward.collective.Algorithm;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Runs one {@link AllReduceSpec} across the emulated data centers: a {@link ClusterRun} (testbed, gateways), one
 * {@link AllReduceWorkerMain} JVM per rank, and the collection of their reports into {@link Sample}s (per run, size
 * and algorithm: the slowest rank's time, since an all-reduce is done when its last rank is). Fails with an
 * {@link AllReduceJobException} naming the failed ranks and their errors, and carrying the gateway counters read
 * before teardown, when a worker fails, results differ between ranks, or the job outlives its time limit.
 */
public final class AllReduceJob {

    /**
     * One size x algorithm x run: the slowest rank's mean time per all-reduce. {@code algorithm} is the name the
     * workers report: "hierarchical", "ring", "ps" ({@link AllReduceSpec#name}) or "gloo" ({@link GlooPeer}).
     */
    /**
     * One timed all-reduce as all ranks saw it: the slowest rank's time; {@code cpuSeconds} and {@code datagrams}
     * summed over the ranks (the worker processes' CPU, user and kernel time in their own threads; datagrams sent
     * plus received), NaN and 0 when the ranks do not report them (Gloo). {@code fabricCpuSeconds} and
     * {@code gatewayCpuSeconds}: what the emulated network's NAPI threads (hosts', switches' and WAN veths) and the
     * gateway's data path ran over the same interval, per all-reduce ({@link NetworkCpu}), NaN
     * when not measured.
     */
    public record Sample(int run, long bytes, String algorithm, double seconds, boolean verified, double maxError,
                         double cpuSeconds, long datagrams, double fabricCpuSeconds, double gatewayCpuSeconds) {
        public Sample(int run, long bytes, String algorithm, double seconds, boolean verified, double maxError,
                      double cpuSeconds, long datagrams) {
            this(run, bytes, algorithm, seconds, verified, maxError, cpuSeconds, datagrams, Double.NaN, Double.NaN);
        }

        public Sample(int run, long bytes, String algorithm, double seconds, boolean verified, double maxError) {
            this(run, bytes, algorithm, seconds, verified, maxError, Double.NaN, 0);
        }

        /** Endpoint CPU per datagram in microseconds, NaN when not reported. */
        public double cpuMicrosPerDatagram() {
            return perDatagram(cpuSeconds);
        }

        /** The emulated fabric's CPU per datagram (the endpoints' datagram count), in microseconds; NaN when not measured. */
        public double fabricMicrosPerDatagram() {
            return perDatagram(fabricCpuSeconds);
        }

        /** The gateway's CPU per datagram (the endpoints' datagram count), in microseconds; NaN when not measured. */
        public double gatewayMicrosPerDatagram() {
            return perDatagram(gatewayCpuSeconds);
        }

        private double perDatagram(double cpu) {
            return datagrams > 0 ? cpu * 1e6 / datagrams : Double.NaN;
        }
    }

    /** Starts the worker process of one rank once the cluster is up. */
    @FunctionalInterface
    public interface RankStarter {
        /** @return whether a process was started for {@code rank}; the job waits only for the ranks started */
        boolean start(ClusterRun cluster, int rank) throws Exception;
    }

    /** One goodput exchange: bytes each way, seconds until both directions were done. */
    public record Goodput(int repeat, long bytes, double seconds, long retransmits) {
        public double bitsPerSecond() {
            return bytes * 8 / seconds;
        }
    }

    /** Everything a finished job measured. */
    public record Outcome(int worldSize, List<Sample> samples, List<Goodput> goodput, Map<String, Long> gatewayCounters,
                          Map<Integer, WorkerLine> done, double wallSeconds) {}

    /** The job failed: {@link #failures()} says which rank failed how. */
    public static final class AllReduceJobException extends IllegalStateException {
        private final Map<Integer, String> failures;
        private final Map<String, Long> gatewayCounters;

        AllReduceJobException(String message, Map<Integer, String> failures, Map<String, Long> gatewayCounters) {
            super(message);
            this.failures = Map.copyOf(failures);
            this.gatewayCounters = Map.copyOf(gatewayCounters);
        }

        /** Rank -> its error message ("rank R failed: ..."), for every rank that failed. */
        public Map<Integer, String> failures() { return failures; }

        /** Gateway counters, summed over gateways, read just before teardown. */
        public Map<String, Long> gatewayCounters() { return gatewayCounters; }
    }

    private final AllReduceSpec spec;
    private final PrintStream out;
    private final Duration jobTimeout;
    private Consumer<Sample> onSample = s -> { };
    private RankStarter starter;
    private double gatewayCpuShare = 1.0;

    /** @param jobTimeout the whole job, start-up included, must finish within this */
    public AllReduceJob(AllReduceSpec spec, PrintStream out, Duration jobTimeout) {
        this.spec = Objects.requireNonNull(spec, "spec");
        this.out = Objects.requireNonNull(out, "out");
        this.jobTimeout = Objects.requireNonNull(jobTimeout, "jobTimeout");
    }

    /** Starts other workers than XAForward's (a baseline that prints the same result lines, e.g. {@link GlooPeer}). */
    public AllReduceJob startingRanksWith(RankStarter starter) {
        this.starter = Objects.requireNonNull(starter, "starter");
        return this;
    }

    /**
     * Budgets the gateway's CPU to {@code share} ({@link ClusterRun#placed(double)}); 1 (the default) gives it the
     * whole of its CPU. Every job is placed as the training bench places it, whatever the share.
     */
    public AllReduceJob gatewayCpu(double share) {
        this.gatewayCpuShare = share;
        return this;
    }

    /** Called for every sample as soon as all ranks reported it (progress output). */
    public AllReduceJob onSample(Consumer<Sample> listener) {
        this.onSample = Objects.requireNonNull(listener, "listener");
        return this;
    }

    public Outcome run() throws Exception {
        long start = System.nanoTime();
        try (ClusterRun cluster = new ClusterRun(spec.cluster(), out)) {
            // Placed as the training bench is: every veth's NAPI in a pinned kernel thread of its own, the gateway's
            // on the gateway CPU, the rest (the emulated fabric) with the workers, so that the fabric's and the
            // gateway's work is counted apart from the endpoints' instead of running as softirqs in the workers'
            // threads (docs/TRANSPORT.md, "Where an endpoint's CPU goes").
            cluster.placed(gatewayCpuShare);
            IdentifierPlan plan = cluster.up();
            Path specFile = spec.cluster().workDir().resolve("allreduce.properties");
            spec.write(specFile);
            cluster.placement().networkCpu().write(spec.networkCpuFile());
            spec.runKeys().issue(spec.wireSecurity());
            int world = plan.worldSize();
            int started = 0;
            for (int r = 0; r < world; r++) {
                if (starter == null) {
                    startXafWorker(cluster, r);
                } else if (!starter.start(cluster, r)) {
                    out.printf("xaf: rank %d is not started%n", r);
                    continue;
                }
                started++;
            }
            out.printf("xaf: %d all-reduce workers started%n", started);
            return collect(cluster, world, started, start);
        }
    }

    /**
     * Starts rank {@code rank} as XAForward's all-reduce worker ({@link AllReduceWorkerMain}) on the job file this job
     * wrote; what runs when no other {@link RankStarter} is given, and what one can call to start XAForward's ranks.
     */
    public boolean startXafWorker(ClusterRun cluster, int rank) throws IOException {
        return startXafWorker(cluster, rank, spec.cluster().workDir().resolve("allreduce.properties"));
    }

    /** As {@link #startXafWorker(ClusterRun, int)}, the rank reading its job from {@code specFile}. */
    public boolean startXafWorker(ClusterRun cluster, int rank, Path specFile) throws IOException {
        long maxBytes = spec.sizesBytes().stream().mapToLong(Long::longValue).max().orElse(0);
        String xmx = "-Xmx" + Math.max(256, 64 + maxBytes / (1 << 20)) + "m";
        cluster.startWorker(rank, List.of(xmx, "-XX:+UseSerialGC"), AllReduceWorkerMain.class.getName(),
                List.of(specFile.toString(), Integer.toString(rank)));
        return true;
    }

    private Outcome collect(ClusterRun cluster, int world, int started, long start) throws Exception {
        Map<String, Map<Integer, WorkerLine>> pending = new HashMap<>();
        List<Sample> samples = new ArrayList<>();
        List<Goodput> goodput = new ArrayList<>();
        Map<Integer, WorkerLine> done = new TreeMap<>();
        Map<Integer, String> failures = new TreeMap<>();
        String mismatch = null;
        int exited = 0;
        long deadline = start + jobTimeout.toNanos();
        long graceEnd = Long.MAX_VALUE;
        while (exited < started) {
            long now = System.nanoTime();
            if (now > deadline || now > graceEnd) break;
            ClusterRun.Event e = cluster.poll(200, TimeUnit.MILLISECONDS);
            if (e == null) continue;
            if (e.exited()) {
                exited++;
                if (e.exitCode() != 0 || !done.containsKey(e.rank())) {
                    failures.put(e.rank(), errorOf(cluster, e.rank(), e.exitCode()));
                    // The others will fail too, within their own timeouts: give them that long to say why.
                    graceEnd = Math.min(graceEnd, System.nanoTime() + spec.operationTimeout().toNanos() + TimeUnit.SECONDS.toNanos(15));
                }
                continue;
            }
            WorkerLine l = e.line();
            if (l == null) continue;
            switch (l.kind()) {
                case "result" -> {
                    String key = l.get("run") + "/" + l.get("bytes") + "/" + l.get("algorithm");
                    Map<Integer, WorkerLine> at = pending.computeIfAbsent(key, k -> new TreeMap<>());
                    at.put(e.rank(), l);
                    if (at.size() == world) {
                        pending.remove(key);
                        String differs = checksumsDiffer(at);
                        if (differs != null && mismatch == null) mismatch = differs;
                        Sample s = combine(at);
                        samples.add(s);
                        onSample.accept(s);
                    }
                }
                case "goodput" -> goodput.add(new Goodput((int) l.integer("repeat"), l.integer("bytes"), l.number("seconds"),
                        l.integer("retransmits")));
                case "done" -> done.put(e.rank(), l);
                default -> { }
            }
        }
        Map<String, Long> counters = cluster.gatewayCounters();
        Map<String, Long> delayLine = cluster.delayLineCounters();
        if (!delayLine.isEmpty()) {
            out.println("xaf: WAN delay line: " + delayLine); // losses on the WAN told from losses elsewhere
        }
        double wall = (System.nanoTime() - start) / 1e9;
        if (!failures.isEmpty() || exited < started || mismatch != null) {
            StringBuilder m = new StringBuilder();
            if (exited < started && failures.isEmpty()) {
                m.append("the all-reduce job did not finish within ").append(jobTimeout.toSeconds()).append(" s");
            } else if (!failures.isEmpty()) {
                m.append("all-reduce job failed after ").append(String.format("%.1f", wall)).append(" s:");
                failures.forEach((r, msg) -> m.append("\n  ").append(msg));
                if (exited < started) m.append("\n  (").append(started - exited).append(" worker(s) still running were stopped)");
            }
            if (mismatch != null) m.append(m.isEmpty() ? "" : "\n").append(mismatch);
            m.append("\n  worker logs in ").append(spec.cluster().workDir());
            throw new AllReduceJobException(m.toString(), failures, counters);
        }
        return new Outcome(world, samples, goodput, counters, done, wall);
    }

    private static String errorOf(ClusterRun cluster, int rank, int exitCode) {
        try {
            for (String line : Files.readAllLines(cluster.workerLog(rank))) {
                if (line.startsWith("rank " + rank + " failed:")) return line;
            }
        } catch (IOException ignored) {
            // fall through to the tail
        }
        return "rank " + rank + " failed (exit " + exitCode + "): " + cluster.logTail(rank, 5).replace('\n', ' ');
    }

    /** Null when all ranks that verified report the same result checksum, else a message. */
    private static String checksumsDiffer(Map<Integer, WorkerLine> at) {
        String first = null;
        for (var e : at.entrySet()) {
            String c = e.getValue().values().get("checksum");
            if (c == null) continue;
            if (first == null) first = c;
            else if (!first.equals(c)) {
                WorkerLine l = e.getValue();
                return "results differ between ranks: " + l.get("algorithm") + " all-reduce of " + l.get("bytes")
                        + " bytes, run " + l.get("run") + ": rank " + e.getKey() + " has checksum " + c + ", rank "
                        + at.keySet().iterator().next() + " " + first;
            }
        }
        return null;
    }

    private static Sample combine(Map<Integer, WorkerLine> at) {
        double seconds = 0, maxError = 0, cpu = 0, fabric = Double.NaN, gateway = Double.NaN;
        long datagrams = 0;
        boolean verified = true, cpuReported = true;
        WorkerLine any = null;
        for (WorkerLine l : at.values()) {
            any = l;
            seconds = Math.max(seconds, l.number("seconds"));
            if (l.values().containsKey("cpu_seconds") && l.values().containsKey("datagrams")) {
                cpu += l.number("cpu_seconds");
                datagrams += l.integer("datagrams");
            } else {
                cpuReported = false;
            }
            // One rank (rank 0) reads the network's counters around its timed interval: they are the same for all.
            if (l.values().containsKey("fabric_cpu_ns")) fabric = l.integer("fabric_cpu_ns") / 1e9;
            if (l.values().containsKey("gateway_cpu_ns")) gateway = l.integer("gateway_cpu_ns") / 1e9;
            verified &= Boolean.parseBoolean(l.get("verified"));
            if (l.values().containsKey("max_error")) maxError = Math.max(maxError, l.number("max_error"));
        }
        return new Sample((int) any.integer("run"), any.integer("bytes"), any.get("algorithm"), seconds, verified, maxError,
                cpuReported ? cpu : Double.NaN, cpuReported ? datagrams : 0, fabric, gateway);
    }
}
