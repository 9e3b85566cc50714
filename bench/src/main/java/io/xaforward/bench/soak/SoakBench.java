package io.xaforward.bench.soak;

import io.xaforward.bench.soak.FaultSchedule.Component;
import io.xaforward.bench.soak.FaultSchedule.Fault;
import io.xaforward.cluster.WorkerLine;
import io.xaforward.gateway.GatewayMain;
import io.xaforward.gateway.GatewayMetrics;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.Testbed;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.plan.IdentifierPlan;
import io.xaforward.training.SyntheticCorpus;
import io.xaforward.transport.JobSecret;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

/**
 * {@code xaf bench soak}: a training job of four ranks in two emulated data centers, deployed as on real hosts (etcd
 * in the gateway host's namespace, the XDP gateway taking its routes from the ranks' etcd registrations with
 * {@code --follow-jobs}, one {@code xaf launch --max-restarts} per host), trains for a while as a schedule kills
 * ranks, the gateway and etcd. The soak restarts the gateway and etcd itself (as systemd would), the launchers
 * restart the ranks from the newest common checkpoint. It reports what the faults cost (steps recomputed, restarts,
 * bytes resent, gateway drops, time to recover) and checks what the faults must not change: every rank's steps
 * 1..N add up through its restarts, each exactly once ({@link StepLedger}); every record of a step, from any rank
 * and any run, carries the same loss and weights; and the job then trains again without faults, same seed and
 * configuration, to the same step, and its weights must be the soak's at every step and at the end. Ranks compared
 * only with each other agree even when a contribution was lost or counted twice; the fault-free reference does not.
 */
public final class SoakBench {
    static final int JOB = 11;
    static final int TOKEN = 0x50a4_0b11;
    /** The ranks train "forever"; the soak stops them at a checksummed step after its time is up. */
    static final long STEPS = 1_000_000;
    static final String JOBS_PREFIX = "/xaf/jobs/";
    static final int METRICS_PORT = 9464;
    /** How long etcd stays down after its kill before the soak starts it again. */
    static final Duration ETCD_DOWNTIME = Duration.ofSeconds(3);

    /**
     * @param seconds          how long the job trains, counted from its first step
     * @param topology         the two-DC topology file (two hosts per data center, one gateway)
     * @param xafMain          the main class of the {@code xaf} command ({@code xaf launch}, {@code xaf gateway})
     * @param opTimeout        the ranks' {@code --op-timeout}: how long a rank waits for a dead peer before it fails
     * @param restartDelay     the launchers' {@code --restart-delay} (at least the op timeout plus a margin)
     * @param command          the command line that reproduces the run, for the report
     */
    public record Options(double seconds, FaultSchedule schedule, long seed, Path topology, String preset,
                          int checkpointEvery, Duration opTimeout, Duration restartDelay, String xafMain, String command) {
        public Options {
            if (!(seconds > 0)) throw new IllegalArgumentException("--minutes must be > 0");
            if (checkpointEvery < 1) throw new IllegalArgumentException("--checkpoint-every must be >= 1");
        }
    }

    /** What one fault did. Times in seconds after the job's first step; null: did not happen before the end. */
    public record FaultOutcome(Fault fault, double executedAt, long stepAtFault, Double componentBackAfter,
                               Double trainingPastFaultAfter, long stepsLost, int rankRestarts) {}

    /** The whole soak. */
    public record Result(Options options, double trainedSeconds, long finalStep, Map<Integer, String> finalChecksums,
                         boolean identical, int checksummedSteps, List<String> mismatches, long stepsComputed,
                         long stepsLost, List<FaultOutcome> faults, Map<String, Integer> restarts,
                         long retransmits, long resentBytes, long sentBytes, long gatewayForwarded,
                         Map<String, Long> gatewayDrops, List<double[]> progress, String testbedPrefix,
                         StepLedger.Accounting accounting, Reference reference) {
        public long gatewayDropTotal() {
            return gatewayDrops.values().stream().mapToLong(Long::longValue).sum();
        }

        /**
         * The soak passed: the ranks agree at every step, every rank's steps add up, and the weights equal the
         * fault-free reference's at the final step (and at every step before).
         */
        public boolean passed() {
            return identical && accounting.complete() && reference.accounting().complete()
                    && reference.comparison().finalEqual() && reference.comparison().differences().isEmpty();
        }
    }

    /**
     * The fault-free run of the same job to the soak's final step: how long it took, its own accounting (its ranks'
     * steps must add up too), how many times its launchers restarted a rank (0 for a fault-free run), and the soak
     * compared with it step by step.
     */
    public record Reference(double seconds, int rankRestarts, StepLedger.Accounting accounting,
                            StepLedger.Comparison comparison) {}

    private final Options o;
    private final PrintStream out;
    private final Path work;

    public SoakBench(Options options, Path work, PrintStream out) {
        this.o = options;
        this.work = work;
        this.out = out;
    }

    // ---- what the ranks reported, read from the launchers' output ----

    private final Object lock = new Object();
    private final Map<Integer, Long> pid = new HashMap<>();
    private final Map<Integer, Long> lastStep = new HashMap<>();
    private final Map<Integer, Integer> starts = new HashMap<>();
    private final Map<Integer, Integer> launcherRestarts = new HashMap<>();
    /** Per rank: the resend counters of its ended processes, and the last ones its running process reported. */
    private final Map<Integer, long[]> countersDone = new HashMap<>(), countersNow = new HashMap<>();
    /** Every step record of every rank of the soak, run by run. */
    private final StepLedger ledger = new StepLedger(4);
    /** That of the fault-free reference run. */
    private final StepLedger referenceLedger = new StepLedger(4);
    private int referenceRestarts;
    private long maxStepRank0;
    private long stepsComputedRank0;
    private long lostSinceFault;
    private int restartsSinceFault;
    private long firstStepNanos;
    private final List<double[]> progress = new ArrayList<>();

    // ---- the gateway's counters, summed over its incarnations ----

    private final Map<String, Long> gatewayDone = new TreeMap<>();
    private volatile Map<String, Long> gatewayNow = Map.of();

    /** The prefix of every namespace and interface this soak creates. */
    private final String prefix = "k" + Integer.toHexString(new Random().nextInt(0x1000, 0x10000));

    public Result run() throws Exception {
        Topology topology = Topology.load(o.topology()).withPrefix(prefix);
        Testbed testbed = new Testbed(work.resolve("state"));
        List<Process> launchers = new ArrayList<>();
        EtcdServer etcd = null;
        Gateway[] gateway = new Gateway[1];
        Thread scraper = null;
        try {
            TestbedState state = testbed.up(topology);
            testbed.attachXdpPass(state);
            IdentifierPlan plan = IdentifierPlan.build(state, JOB, TOKEN);
            String gwNs = state.gatewayNamespace("gw");
            if (plan.worldSize() != 4) throw new IllegalArgumentException(o.topology() + ": the soak needs four hosts, found " + plan.worldSize());
            Path corpus = SyntheticCorpus.write(work.resolve("corpus.txt"), 5, 300_000);
            Path secret = work.resolve("job.secret");
            JobSecret.generate().writeTo(secret);

            etcd = new EtcdServer(gwNs, work.resolve("etcd"));
            etcd.start();
            out.println("soak: etcd serving in " + gwNs);
            Path config = writeGatewayConfig(state);
            gateway[0] = Gateway.start(o.xafMain(), gwNs, config, work.resolve("gateway-1.log"));
            out.println("soak: XDP gateway ready, routes follow " + JOBS_PREFIX);
            scraper = Thread.ofPlatform().daemon(true).name("soak-metrics").start(() -> scrape(gwNs));

            for (int r = 0; r < plan.worldSize(); r++) {
                launchers.add(launch(plan, state, r, corpus, secret, "checkpoints", ledger));
            }
            out.println("soak: one xaf launch per host started (" + plan.worldSize() + " ranks, --max-restarts "
                    + MAX_RESTARTS + ", --restart-delay " + o.restartDelay().toSeconds() + " s, --op-timeout "
                    + o.opTimeout().toSeconds() + " s); waiting for the first step");
            awaitCondition(() -> jobStep() >= 1, Duration.ofMinutes(5), "the job's first step", launchers);
            synchronized (lock) {
                firstStepNanos = System.nanoTime();
            }
            out.printf("soak: training; faults at %s (seconds after the first step)%n", o.schedule().word());

            List<FaultOutcome> outcomes = new ArrayList<>();
            Thread progressLine = Thread.ofPlatform().daemon(true).name("soak-progress").start(this::printProgress);
            try {
                for (Fault f : o.schedule().faults()) {
                    if (f.atSeconds() >= o.seconds()) {
                        out.printf("soak: %s falls after the end (%s s): not executed%n", f.word(), FaultSchedule.seconds(o.seconds()));
                        continue;
                    }
                    sleepUntil(f.atSeconds());
                    outcomes.add(inject(f, etcd, gateway, gwNs, config, launchers));
                }
                sleepUntil(o.seconds());
            } finally {
                progressLine.interrupt();
            }
            double trained = elapsed();
            // The end: the next step whose checksum every rank of the running job reports.
            long target = jobStep() + 1;
            out.printf("soak: time is up at step %d; stopping after step %d, once every rank has reported its checksum%n", jobStep(), target);
            awaitCondition(() -> currentChecksums(target).size() == plan.worldSize(), Duration.ofMinutes(5),
                    "every rank's checksum of step " + target, launchers);
            Map<Integer, String> finals = currentChecksums(target);
            stop(launchers);
            launchers.clear();
            scraper.interrupt();
            scraper.join(5000);
            gatewayDone(gateway[0]);
            Reference reference = reference(plan, state, corpus, secret, target, trained, launchers);
            return result(trained, target, finals, outcomes, reference);
        } finally {
            if (scraper != null) scraper.interrupt();
            stop(launchers);
            if (gateway[0] != null) gateway[0].close();
            if (etcd != null) etcd.close();
            testbed.down(topology);
            deleteTree(work.resolve("etcd"));
            deleteTree(work.resolve("checkpoints"));
            deleteTree(work.resolve("reference-checkpoints"));
            if (Netns.list().stream().anyMatch(n -> n.startsWith(topology.prefix() + "-"))) {
                out.println("soak: warning: namespaces of " + topology.prefix() + " left behind");
            }
        }
    }

    static final int MAX_RESTARTS = 1000;

    /**
     * Trains the same job again, same seed, corpus, preset and options, with no fault and fresh checkpoints, on the
     * same testbed (gateway and etcd as the soak left them), until every rank has reported its checksum of
     * {@code target}; then compares the soak with it.
     */
    private Reference reference(IdentifierPlan plan, TestbedState state, Path corpus, Path secret, long target,
                                double trained, List<Process> launchers) throws Exception {
        out.printf("soak: the fault-free reference: the same job, same seed, trains to step %d%n", target);
        long start = System.nanoTime();
        for (int r = 0; r < plan.worldSize(); r++) {
            launchers.add(launch(plan, state, r, corpus, secret, "reference-checkpoints", referenceLedger));
        }
        awaitCondition(() -> {
            synchronized (lock) {
                return referenceLedger.currentChecksums(target).size() == plan.worldSize();
            }
        }, Duration.ofSeconds(300 + (long) (3 * trained)), "every reference rank's checksum of step " + target, launchers);
        double seconds = (System.nanoTime() - start) / 1e9;
        stop(launchers);
        synchronized (lock) {
            Reference ref = new Reference(seconds, referenceRestarts, referenceLedger.account(target),
                    ledger.compare(referenceLedger, target));
            out.printf(Locale.ROOT, "soak: reference at step %d after %.0f s: checksum %s, the soak's %s; %d of %d steps equal%n",
                    target, seconds, ref.comparison().referenceChecksum(), ref.comparison().checksum(),
                    ref.comparison().stepsEqual(), target);
            return ref;
        }
    }

    /** Starts {@code rank}'s {@code xaf launch}, whose step records go to {@code into}. */
    private Process launch(IdentifierPlan plan, TestbedState state, int rank, Path corpus, Path secret,
                           String checkpoints, StepLedger into) throws IOException {
        Node host = plan.host(rank);
        Node port = state.gatewayPort("gw", host.datacenter());
        String gw = port.ip().getHostAddress();
        String etcdUrl = "http://" + (gw.contains(":") ? "[" + gw + "]" : gw) + ":" + EtcdServer.CLIENT_PORT;
        String every = Integer.toString(o.checkpointEvery());
        List<String> args = new ArrayList<>(List.of("launch", "--local-ranks", Integer.toString(rank),
                "--max-restarts", Integer.toString(MAX_RESTARTS), "--restart-delay", Long.toString(o.restartDelay().toSeconds()),
                "--", "--job", Integer.toString(JOB), "--world", Integer.toString(plan.worldSize()),
                "--interface", host.iface(), "--form", host.form().configName(), "--token", String.format("0x%08x", TOKEN),
                "--data", corpus.toString(), "--preset", o.preset(), "--steps", Long.toString(STEPS), "--batch", "8",
                "--seed", Long.toString(o.seed()), "--warmup", "2",
                "--checkpoint-dir", work.resolve(checkpoints).resolve("rank" + rank).toString(),
                // A checksum after every step: each step recomputed after a restart is compared with its first run.
                "--checkpoint-every", every, "--checksum-every", "1",
                "--op-timeout", Long.toString(o.opTimeout().toSeconds()), "--start-timeout", "240",
                "--secret-file", secret.toString(), "--etcd", etcdUrl, "--datacenter", host.datacenter(),
                "--gateway", gw, "--rendezvous-timeout", "240"));
        ProcessBuilder pb = Netns.javaProcessBuilder(host.namespace(), List.of("-Xmx256m", "-XX:+UseSerialGC"), o.xafMain(), args);
        pb.redirectError(work.resolve(checkpoints.replace("checkpoints", "launch") + "-rank" + rank + ".log").toFile());
        Process p = pb.start();
        Thread.ofPlatform().daemon(true).name("soak-rank-" + rank).start(() -> read(rank, p, into));
        return p;
    }

    private Path writeGatewayConfig(TestbedState state) throws IOException {
        StringBuilder y = new StringBuilder("metrics: 127.0.0.1:" + METRICS_PORT + "\nports:\n");
        for (Node p : state.gatewayPorts("gw")) {
            y.append("  - {interface: ").append(p.iface()).append(", form: ").append(p.form().configName())
                    .append(", datacenter: ").append(p.datacenter()).append("}\n");
        }
        Path f = work.resolve("gateway.yaml");
        Files.writeString(f, y.append("routes: []\n").toString());
        return f;
    }

    /**
     * Reads one launcher's output: its own lines and its rank's protocol lines. The soak's lines feed every figure;
     * the reference's only its ledger (and the pids, to stop it).
     */
    private void read(int rank, Process p, StepLedger into) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                if (line.startsWith("xaf launch: rank ") && line.contains("restarting")) {
                    synchronized (lock) {
                        if (into == ledger) {
                            launcherRestarts.merge(rank, 1, Integer::sum);
                            restartsSinceFault++;
                        } else {
                            referenceRestarts++;
                        }
                    }
                    continue;
                }
                WorkerLine l = WorkerLine.parse(line);
                if (l != null) onLine(rank, l, into);
            }
        } catch (IOException ignored) {
            // the launcher ended
        }
    }

    private void onLine(int rank, WorkerLine l, StepLedger into) {
        synchronized (lock) {
            if (into != ledger) {
                switch (l.kind()) {
                    case "launched" -> pid.put(rank, l.integer("pid"));
                    case "start" -> into.start(rank, l.integer("from_step"));
                    case "step" -> into.step(rank, l.integer("step"), l.values().get("loss"), l.values().get("checksum"));
                    default -> { }
                }
                return;
            }
            switch (l.kind()) {
                case "launched" -> {
                    pid.put(rank, l.integer("pid"));
                    long[] now = countersNow.remove(rank);
                    if (now != null) {
                        long[] done = countersDone.computeIfAbsent(rank, k -> new long[3]);
                        for (int i = 0; i < 3; i++) done[i] += now[i];
                    }
                }
                case "start" -> {
                    long from = l.integer("from_step");
                    int n = starts.merge(rank, 1, Integer::sum);
                    if (rank == 0 && n > 1) lostSinceFault += Math.max(0, maxStepRank0 - from);
                    lastStep.put(rank, from);
                    ledger.start(rank, from);
                }
                case "step" -> {
                    long step = l.integer("step");
                    lastStep.put(rank, step);
                    countersNow.put(rank, new long[]{l.integer("retransmits"), optional(l, "resent_bytes"), l.integer("sent_bytes")});
                    if (rank == 0) {
                        maxStepRank0 = Math.max(maxStepRank0, step);
                        stepsComputedRank0++;
                    }
                    ledger.step(rank, step, l.values().get("loss"), l.values().get("checksum"));
                }
                default -> { }
            }
        }
    }

    private static long optional(WorkerLine l, String key) {
        String v = l.values().get(key);
        return v == null ? 0 : Long.parseLong(v);
    }

    /** The step every rank of the running job has completed (the ranks step together). */
    private long jobStep() {
        synchronized (lock) {
            if (lastStep.size() < 4) return 0;
            return lastStep.values().stream().mapToLong(Long::longValue).min().orElse(0);
        }
    }

    /** The checksums of {@code step} reported by the ranks' current runs. */
    private Map<Integer, String> currentChecksums(long step) {
        synchronized (lock) {
            return ledger.currentChecksums(step);
        }
    }

    private double elapsed() {
        synchronized (lock) {
            return (System.nanoTime() - firstStepNanos) / 1e9;
        }
    }

    private void sleepUntil(double seconds) throws InterruptedException {
        long ms = (long) ((seconds - elapsed()) * 1000);
        if (ms > 0) Thread.sleep(ms);
    }

    private void printProgress() {
        try {
            while (true) {
                Thread.sleep(1000);
                double t = elapsed();
                long step = jobStep();
                int samples;
                synchronized (lock) {
                    progress.add(new double[]{t, step});
                    samples = progress.size();
                }
                if (samples % 15 == 0) {
                    Map<String, Long> g = gatewayNow;
                    out.printf(Locale.ROOT, "soak: %5.0f s  step %6d  recomputed %4d  rank restarts %3d  gateway forwarded %d%n",
                            t, step, stepsLostSoFar(), launcherRestarts.values().stream().mapToInt(Integer::intValue).sum(),
                            sum(gatewayDone, "xaf_packets_total{forwarded}") + g.getOrDefault("xaf_packets_total{forwarded}", 0L));
                }
            }
        } catch (InterruptedException ignored) {
            // the soak ended
        }
    }

    private long stepsLostSoFar() {
        synchronized (lock) {
            return stepsComputedRank0 - maxStepRank0;
        }
    }

    /** Breaks {@code f}'s component, brings it back, and waits until the job trains past the step it was at. */
    private FaultOutcome inject(Fault f, EtcdServer etcd, Gateway[] gateway, String gwNs, Path config,
                                List<Process> launchers) throws Exception {
        long stepAtFault = jobStep();
        double at = elapsed();
        synchronized (lock) {
            lostSinceFault = 0;
            restartsSinceFault = 0;
        }
        out.printf(Locale.ROOT, "soak: %6.1f s  FAULT %s at step %d%n", at, f.word(), stepAtFault);
        Double back = null;
        switch (f.component()) {
            case WORKER -> {
                long victim;
                int runs;
                synchronized (lock) {
                    victim = pid.get(f.rank());
                    runs = starts.getOrDefault(f.rank(), 0);
                }
                ProcessHandle.of(victim).ifPresent(h -> {
                    h.destroyForcibly();
                    h.onExit().join();
                });
                // Back: the rank's next run has started training (it joined the world and agreed the resume step).
                if (awaitQuietly(() -> {
                    synchronized (lock) {
                        return starts.getOrDefault(f.rank(), 0) > runs;
                    }
                }, Duration.ofMinutes(5))) back = elapsed() - at;
            }
            case GATEWAY -> {
                gateway[0].kill();
                gatewayDone(gateway[0]);
                gateway[0] = null;
                gateway[0] = startGatewayRetrying(gwNs, config);
                back = elapsed() - at;
            }
            case ETCD -> {
                etcd.kill();
                Thread.sleep(ETCD_DOWNTIME.toMillis());
                etcd.start();
                // Back: the gateway's watch of the registrations is up again.
                if (awaitQuietly(() -> gatewayNow.getOrDefault("xaf_registry_up", 0L) == 1
                        && gatewayNow.getOrDefault("xaf_registry_resyncs_total", 0L) > 1, Duration.ofMinutes(2))) {
                    back = elapsed() - at;
                }
            }
        }
        Double past = null;
        if (awaitQuietly(() -> jobStep() > stepAtFault, Duration.ofMinutes(5))) past = elapsed() - at;
        long lost;
        int restarts;
        synchronized (lock) {
            lost = lostSinceFault;
            restarts = restartsSinceFault;
        }
        out.printf(Locale.ROOT, "soak: %6.1f s  %s: component back after %s s, training past step %d after %s s, %d steps recomputed, %d rank restarts%n",
                elapsed(), f.word(), format(back), stepAtFault, format(past), lost, restarts);
        if (past == null) throw new IllegalStateException("the job did not recover from " + f.word() + " within 5 minutes");
        return new FaultOutcome(f, at, stepAtFault, back, past, lost, restarts);
    }

    private Gateway startGatewayRetrying(String gwNs, Path config) throws Exception {
        RuntimeException last = null;
        for (int attempt = 1; attempt <= 5; attempt++) {
            try {
                return Gateway.start(o.xafMain(), gwNs, config, work.resolve("gateway-" + (++gatewayStarts) + ".log"));
            } catch (RuntimeException e) {
                last = e;
                out.println("soak: gateway start failed (" + e.getMessage().lines().findFirst().orElse("") + "), retrying");
                Thread.sleep(2000);
            }
        }
        throw last;
    }

    private int gatewayStarts = 1;

    private void scrape(String gwNs) {
        while (!Thread.currentThread().isInterrupted()) {
            try {
                Thread.sleep(1000);
                gatewayNow = GatewayMetrics.scrape(gwNs, "127.0.0.1", METRICS_PORT);
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                // the gateway is down (a fault): its last counters stay in gatewayNow until it is folded
            }
        }
    }

    /** Adds the counters of a gateway incarnation that has ended (its last scrape) to the totals. */
    private void gatewayDone(Gateway g) {
        Map<String, Long> last = gatewayNow;
        gatewayNow = Map.of();
        for (var e : last.entrySet()) {
            if (e.getKey().startsWith("xaf_packets_total{")) gatewayDone.merge(e.getKey(), e.getValue(), Long::sum);
        }
    }

    private static long sum(Map<String, Long> m, String key) {
        return m.getOrDefault(key, 0L);
    }

    private Result result(double trained, long finalStep, Map<Integer, String> finals, List<FaultOutcome> faults,
                          Reference reference) {
        synchronized (lock) {
            List<String> mismatches = new ArrayList<>();
            Map<Long, Map<String, List<String>>> checksums = ledger.checksumsByStep();
            for (var e : checksums.entrySet()) {
                if (e.getValue().size() > 1) mismatches.add("step " + e.getKey() + ": " + e.getValue());
            }
            boolean identical = mismatches.isEmpty() && finals.size() == 4 && finals.values().stream().distinct().count() == 1;
            long[] totals = new long[3];
            for (Map<Integer, long[]> m : List.of(countersDone, countersNow)) {
                for (long[] c : m.values()) for (int i = 0; i < 3; i++) totals[i] += c[i];
            }
            Map<String, Long> drops = new TreeMap<>();
            for (var e : gatewayDone.entrySet()) {
                if (e.getKey().startsWith("xaf_packets_total{drop_") && e.getValue() > 0) {
                    drops.put(e.getKey().substring("xaf_packets_total{".length(), e.getKey().length() - 1), e.getValue());
                }
            }
            Map<String, Integer> restarts = new LinkedHashMap<>();
            for (Component c : Component.values()) {
                restarts.put(c.word() + " faults", (int) faults.stream().filter(x -> x.fault().component() == c).count());
            }
            restarts.put("rank restarts (by xaf launch)", launcherRestarts.values().stream().mapToInt(Integer::intValue).sum());
            restarts.put("gateway restarts (by the soak)", (int) faults.stream().filter(x -> x.fault().component() == Component.GATEWAY).count());
            restarts.put("etcd restarts (by the soak)", (int) faults.stream().filter(x -> x.fault().component() == Component.ETCD).count());
            restarts.put("job runs (rank 0 starts)", starts.getOrDefault(0, 0));
            return new Result(o, trained, finalStep, finals, identical, checksums.size(), mismatches, stepsComputedRank0,
                    stepsComputedRank0 - maxStepRank0, faults, restarts, totals[0], totals[1], totals[2],
                    sum(gatewayDone, "xaf_packets_total{forwarded}"), drops, List.copyOf(progress), prefix,
                    ledger.account(finalStep), reference);
        }
    }

    private void awaitCondition(BooleanSupplier done, Duration timeout, String what, List<Process> launchers)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!done.getAsBoolean()) {
            for (Process p : launchers) {
                if (!p.isAlive()) throw new IllegalStateException("an xaf launch ended (exit " + p.exitValue() + ") while waiting for " + what
                        + "; its log: " + work.resolve("launch-rank" + launchers.indexOf(p) + ".log"));
            }
            if (System.nanoTime() > deadline) throw new IllegalStateException("timed out after " + timeout.toSeconds() + " s waiting for " + what);
            Thread.sleep(200);
        }
    }

    private static boolean awaitQuietly(BooleanSupplier done, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) return false;
            Thread.sleep(100);
        }
        return true;
    }

    /** SIGTERM to every launcher (each stops its ranks), SIGKILL after 15 s, and any rank still alive. */
    private void stop(List<Process> launchers) throws InterruptedException {
        for (Process p : launchers) p.destroy();
        for (Process p : launchers) {
            if (!p.waitFor(15, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
        List<Long> ranks;
        synchronized (lock) {
            ranks = List.copyOf(pid.values());
        }
        for (long id : ranks) {
            ProcessHandle.of(id).ifPresent(h -> {
                h.destroyForcibly();
                h.onExit().orTimeout(10, TimeUnit.SECONDS).exceptionally(t -> h).join();
            });
        }
    }

    static String format(Double seconds) {
        return seconds == null ? "-" : String.format(Locale.ROOT, "%.1f", seconds);
    }

    /** Deletes a directory tree, best effort. */
    public static void deleteTree(Path dir) {
        if (!Files.exists(dir)) return;
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException ignored) {
            // best effort; the caller reports what is left
        }
    }

    /** The XDP gateway as its own {@code xaf gateway} process, routes from the job registrations in etcd. */
    static final class Gateway implements AutoCloseable {
        private final Process process;

        private Gateway(Process process) {
            this.process = process;
        }

        static Gateway start(String xafMain, String ns, Path config, Path log) throws IOException, InterruptedException {
            ProcessBuilder pb = Netns.javaProcessBuilder(ns, List.of("-Xmx256m", "-XX:+UseSerialGC"), xafMain,
                    List.of("gateway", "--config", config.toString(), "--registry", "http://127.0.0.1:" + EtcdServer.CLIENT_PORT,
                            "--follow-jobs", JOBS_PREFIX));
            pb.redirectErrorStream(true).redirectOutput(log.toFile());
            Gateway g = new Gateway(pb.start());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (!Files.readString(log).contains(GatewayMain.READY)) {
                if (!g.process.isAlive() || System.nanoTime() > deadline) {
                    g.kill();
                    String text = Files.readString(log).strip();
                    throw new IllegalStateException("xaf gateway did not become ready: "
                            + (text.length() > 1500 ? "..." + text.substring(text.length() - 1500) : text));
                }
                Thread.sleep(100);
            }
            return g;
        }

        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }

        @Override
        public void close() throws InterruptedException {
            process.destroy(); // SIGTERM: the gateway detaches its programs
            if (!process.waitFor(10, TimeUnit.SECONDS)) kill();
        }
    }
}
