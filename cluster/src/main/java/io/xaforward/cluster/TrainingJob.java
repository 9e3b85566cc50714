package io.xaforward.cluster;

import io.xaforward.cluster.ClusterRun;
import io.xaforward.testbed.plan.IdentifierPlan;
import io.xaforward.training.Evaluation;
import io.xaforward.training.ModelConfig;
import io.xaforward.training.SyntheticCorpus;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * Runs one data-parallel training job across the emulated data centers of a topology: brings the testbed up,
 * starts the gateways of the chosen mode and one worker JVM per host (each in its own network namespace), streams
 * their progress into one {@link ProgressView}, checks that all ranks hold identical weights, and tears everything
 * down on success, failure or Ctrl-C. The cluster part (testbed, gateways, worker processes, teardown) is
 * {@link ClusterRun}.
 */
public final class TrainingJob {

    private final TrainJobSpec spec;
    private final PrintStream out;
    private boolean placed;
    private double gatewayCpuShare = 1.0;
    private RankStarter starter;

    /**
     * Starts the process of one rank once the cluster is up (in its host namespace, through
     * {@link ClusterRun#startProcess} so that the job's placement applies) and the job file is written. The process
     * speaks the worker-line protocol of {@link WorkerMain}: a {@code start} line with {@code params}, one {@code step}
     * line per step ({@code loss} as the ranks' mean, or {@code local_loss} as this rank's, which the job averages),
     * and a {@code done} line with {@code checksum} and {@code retransmits}.
     */
    @FunctionalInterface
    public interface RankStarter {
        void start(ClusterRun cluster, int rank, Path jobFile) throws Exception;
    }

    /** Starts other trainers than XAForward's workers: a baseline on the same cluster (the bench's DDP over Gloo). */
    public TrainingJob startingRanksWith(RankStarter starter) {
        this.starter = Objects.requireNonNull(starter, "starter");
        return this;
    }

    /** Runs the job {@linkplain ClusterRun#placed() placed}: gateway and workers on CPUs of their own. */
    public TrainingJob placed() {
        placed = true;
        return this;
    }

    /** {@link #placed()} with the gateway's CPU budgeted to {@code share} ({@link ClusterRun#placed(double)}). */
    public TrainingJob placed(double gatewayCpuShare) {
        placed = true;
        this.gatewayCpuShare = gatewayCpuShare;
        return this;
    }

    public TrainingJob(TrainJobSpec spec, PrintStream out) {
        this.spec = spec;
        this.out = out;
    }

    /** Where rank 0 leaves the final weights (and optimizer state) of a finished job. */
    public static Path finalCheckpoint(TrainJobSpec spec) {
        return CheckpointNames.jobFinal(spec.workDir());
    }

    public TrainResult run() throws Exception {
        long start = System.nanoTime();
        try (ClusterRun cluster = new ClusterRun(spec.cluster(), out)) {
            if (placed) cluster.placed(gatewayCpuShare);
            return runUp(cluster, start);
        }
    }

    private TrainResult runUp(ClusterRun cluster, long start) throws Exception {
        IdentifierPlan plan = cluster.up();

        if (!Files.exists(spec.data())) {
            SyntheticCorpus.write(spec.data(), spec.trainer().seed(), 2_000_000);
        }
        Path specFile = spec.workDir().resolve("job.properties");
        TrainJobCodec.write(spec, specFile);
        spec.runKeys().issue(spec.wireSecurity());

        int world = plan.worldSize();
        for (int r = 0; r < world; r++) {
            if (starter != null) {
                starter.start(cluster, r, specFile);
                continue;
            }
            List<String> jvm = List.of("-Xmx2g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=4",
                    "-Dai.djl.pytorch.num_threads=" + spec.trainer().threads(), "-Dai.djl.offline=true");
            cluster.startWorker(r, jvm, WorkerMain.class.getName(), List.of(specFile.toString(), Integer.toString(r)));
        }
        out.printf("xaf: %d workers started (preset %s, %d steps, global batch %d, %s all-reduce)%n", world,
                spec.trainer().preset(), spec.trainer().steps(), spec.trainer().globalBatch(), spec.collective().algorithm().configName());

        try (JobMetrics metrics = new JobMetrics(spec, cluster)) {
            return follow(cluster, world, start, metrics);
        }
    }

    /** One line for a worker that failed: its rank, exit status, the reason its log gives, and the log's path. */
    static String workerFailed(int rank, int exitCode, String logTail, Path log) {
        String status = exitCode > 128 ? "killed by signal " + (exitCode - 128) : "exit " + exitCode;
        return "worker rank " + rank + " failed (" + status + "): " + lastError(logTail) + " (its log: " + log + ")";
    }

    /**
     * The line of a worker's log that says why it failed, for a one-line error: its last "xaf: ..." line, else the last
     * exception line, else its last line.
     */
    static String lastError(String log) {
        List<String> lines = log.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
        for (int i = lines.size() - 1; i >= 0; i--) {
            if (lines.get(i).startsWith("xaf: ")) return lines.get(i).substring(5);
        }
        for (int i = lines.size() - 1; i >= 0; i--) {
            String l = lines.get(i);
            if (!l.startsWith("at ") && (l.contains("Exception") || l.contains("Error"))) return l;
        }
        return lines.isEmpty() ? "no output" : lines.getLast();
    }

    /** Per-step metrics as JSON lines: metrics.jsonl in the work directory. */
    public static Path metricsFile(TrainJobSpec spec) {
        return JobMetrics.file(spec);
    }

    private TrainResult follow(ClusterRun cluster, int world, long start, JobMetrics metrics) throws Exception {
        ProgressView view = new ProgressView(out, spec.trainer().steps());
        int contextLength = ModelConfig.preset(spec.trainer().preset()).contextLength();
        Map<Long, Map<Integer, WorkerLine>> byStep = new TreeMap<>();
        List<TrainResult.Step> steps = new ArrayList<>();
        Map<Integer, WorkerLine> done = new HashMap<>();
        long parameterCount = 0;
        int exited = 0;
        NetworkSample firstStep = null;
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(Math.max(5, spec.trainer().steps()));
        while (exited < world) {
            ClusterRun.Event e = cluster.poll(5, TimeUnit.SECONDS);
            if (System.nanoTime() > deadline) throw new IllegalStateException("the job did not finish in time; worker logs in " + spec.workDir());
            if (e == null) continue;
            if (e.exitCode() != null) {
                exited++;
                if (e.exitCode() != 0 || !done.containsKey(e.rank())) {
                    throw new IllegalStateException(workerFailed(e.rank(), e.exitCode(), cluster.logTail(e.rank(), 60),
                            cluster.workerLog(e.rank())));
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
                        if (firstStep == null) firstStep = cluster.sampleNetwork(); // after warm-up step 1
                        steps.add(st);
                        metrics.write(st, at);
                        view.update(s, st.loss(), st.tokensPerSecond(), st.computeMs(), st.commMs(), st.stepMs());
                        WorkerLine line0 = at.values().iterator().next();
                        if (line0.values().containsKey("outer_applied") && line0.integer("outer_applied") > 0) {
                            view.message(String.format(Locale.ROOT, "step %d: outer sync of %d fragment(s), "
                                    + "%.2f MB of pseudo-gradients between the data centers", s,
                                    line0.integer("outer_applied"), line0.integer("outer_bytes") / 1e6));
                        }
                        if (st.validation() != null) view.message("step " + s + ": validation loss " + st.validation().figure()
                                + " (standard error) over " + st.validation().coverage(contextLength));
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
        Map<String, Long> counters = new LinkedHashMap<>(cluster.gatewayCounters());
        // The network from the end of step 1 to the end, and every rank's retransmissions: what benchmarks report.
        if (firstStep != null) counters.putAll(cluster.sampleNetwork().since(firstStep));
        counters.put("retransmits", done.values().stream().mapToLong(l -> l.integer("retransmits")).sum());
        // The WAN's own losses and drops (whole job, up to a second old): tell emulated loss from an overrun delay line.
        cluster.delayLineCounters().forEach((k, v) -> counters.put("delay_line." + k, v));
        for (String key : RankRuntime.LOSS_COUNTERS) {
            if (done.values().stream().allMatch(l -> l.values().containsKey(key))) {
                counters.put(key, done.values().stream().mapToLong(l -> l.integer(key)).sum());
            }
        }
        double wall = (System.nanoTime() - start) / 1e9;
        return new TrainResult(spec, world, steps, wall, counters, checksum, parameterCount);
    }

    /** Combines the ranks' reports of one step; weights must agree whenever ranks report a checksum. */
    static TrainResult.Step combine(long step, Map<Integer, WorkerLine> at) {
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
        Evaluation val = any.values().containsKey("val") ? new Evaluation(any.number("val"), any.number("val_se"),
                any.integer("val_windows"), any.integer("val_split_windows")) : null;
        // A trainer that does not all-reduce its loss reports each rank's: the mean of equal micro-batches' losses is
        // the global batch's loss, what XAF's ranks report as "loss".
        double loss = at.values().stream().allMatch(l -> l.values().containsKey("local_loss"))
                ? at.values().stream().mapToDouble(l -> l.number("local_loss")).average().orElseThrow() : any.number("loss");
        // tokens/s is already global on every rank (global batch / step time): average, do not add up.
        return new TrainResult.Step(step, loss, val, stepMs, compute / at.size(), comm / at.size(), tps / at.size());
    }

    static String tail(Path file, int lines) {
        return ClusterRun.tail(file, lines);
    }
}
