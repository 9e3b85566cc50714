package io.xaforward.cluster;

import io.xaforward.cluster.deploy.JoinSpec;
import io.xaforward.cluster.deploy.RunAgreement;
import io.xaforward.cluster.world.WorldNetwork;
import io.xaforward.collective.CollectiveConfig;
import io.xaforward.collective.Collectives;
import io.xaforward.training.StepStats;
import io.xaforward.transport.DatagramPort;
import io.xaforward.transport.ReliableTransport;
import io.xaforward.transport.RunNonce;
import io.xaforward.transport.TransportConfig;
import io.xaforward.transport.TransportStats;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.LongUnaryOperator;
import java.util.function.ToLongFunction;

/**
 * One rank's running parts, the same in every rank main (a training rank in the testbed, a training rank on a real
 * host, an all-reduce bench rank): the reliable transport on the rank's port, the collectives over it, its progress
 * as {@link WorkerLine}s, and the clean end ({@link #finish}: a barrier and a linger, then {@link #close}).
 *
 * <pre>{@code
 * try (RankRuntime rank = RankRuntime.start(wiring, transportConfig, port, collectiveConfig, System.out)) {
 *     rank.report("start", "rank", rank.rank());
 *     ... rank.collectives().allReduce(...) ...
 *     rank.finish("checksum", hex);      // the done line, then barrier + linger
 * }
 * }</pre>
 */
public final class RankRuntime implements AutoCloseable {
    private final RankWiring wiring;
    private final ReliableTransport transport;
    private final Collectives collectives;
    private final PrintStream out;
    /** The run's nonce the ranks agreed at start-up ({@link #join}); null: none (unauthenticated, or keys issued). */
    private final RunNonce runNonce;

    private RankRuntime(RankWiring wiring, ReliableTransport transport, Collectives collectives, PrintStream out,
                        RunNonce runNonce) {
        this.wiring = wiring;
        this.transport = transport;
        this.collectives = collectives;
        this.out = out;
        this.runNonce = runNonce;
    }

    /**
     * Starts the rank's transport on {@code port} (which it then owns: closed with the runtime, or at once when the
     * start fails) with the peers of {@code wiring}, and its collectives with {@code collectiveConfig}.
     */
    public static RankRuntime start(RankWiring wiring, TransportConfig transportConfig, DatagramPort port,
                                    CollectiveConfig collectiveConfig, PrintStream out) {
        return start(wiring, transportConfig, port, collectiveConfig, out, null);
    }

    /**
     * How a rank on a real host joins its job once it knows its world, the same for {@code xaf worker} and
     * {@code xaf agent}: opens its port with the spec's flows; under an authenticated wire security agrees the run's
     * nonce with every other rank ({@link RunAgreement}, waiting up to the start timeout), from which this run's
     * keys derive; then starts the transport (the job's settings, the wire security, the spec's pacing) and the
     * collectives (the spec's settings, its operation timeout).
     */
    public static RankRuntime join(WorldNetwork net, JoinSpec spec, PrintStream out) throws IOException {
        DatagramPort port = net.openPort(spec.flows());
        RunNonce run;
        try {
            // Every run (a start or a restart) gets keys of its own: the ranks agree its nonce first, on the wire.
            run = spec.wireSecurity().authenticated() ? RunAgreement.agree(net.group(),
                    () -> net.transportConfig(spec.token(), TransportConfig.JOB_ACK_TIMEOUT), spec.wireSecurity(),
                    spec.secret(), net.addressBook(), port, spec.startTimeout()) : null;
        } catch (RuntimeException e) {
            port.close();
            throw e;
        }
        TransportConfig.Builder tc = net.transportConfig(spec.token(), TransportConfig.JOB_ACK_TIMEOUT)
                .wireSecurity(spec.wireSecurity(), spec.secret(), run);
        long pacing = spec.collective().pacingBytesPerSecond();
        if (pacing > 0) tc.pacing(pacing, 0);
        return start(net, tc.build(), port, spec.collective().config(spec.opTimeout()), out, run);
    }

    private static RankRuntime start(RankWiring wiring, TransportConfig transportConfig, DatagramPort port,
                                     CollectiveConfig collectiveConfig, PrintStream out, RunNonce runNonce) {
        Objects.requireNonNull(out, "out");
        ReliableTransport transport;
        try {
            transport = new ReliableTransport(transportConfig, wiring.addressBook(), port).start();
        } catch (RuntimeException e) {
            port.close();
            throw e;
        }
        try {
            return new RankRuntime(wiring, transport, new Collectives(wiring.group(), transport, collectiveConfig), out,
                    runNonce);
        } catch (RuntimeException e) {
            transport.close();
            throw e;
        }
    }

    public int rank() { return wiring.rank(); }
    public ReliableTransport transport() { return transport; }
    /** The rank's collectives, with the configuration it was started with. */
    public Collectives collectives() { return collectives; }

    /**
     * Further collectives over the same transport that wait up to {@code operationTimeout} per operation (a start-up
     * agreement waits longer than a training step); the caller closes them before the rank's own are used.
     */
    public Collectives collectives(Duration operationTimeout) {
        return new Collectives(wiring.group(), transport, collectives.config().withOperationTimeout(operationTimeout));
    }

    /** The run nonce the ranks agreed when they joined ({@link #join}); null: none was agreed. */
    public RunNonce runNonce() { return runNonce; }

    /**
     * Runs a rank's first collective, which waits for every rank to be up (ranks, restarted ones above all, come up
     * at different times): {@code agreement} gets collectives whose operations wait up to {@code startTimeout},
     * closed after it. A peer with another secret or wire security mode looks like a silent peer, its datagrams
     * dropped; when the agreement fails and any datagram failed authentication, the error says so instead of only
     * "timed out".
     */
    public <T> T startUp(Duration startTimeout, Function<Collectives, T> agreement) {
        try (Collectives start = collectives(startTimeout)) {
            return agreement.apply(start);
        } catch (RuntimeException e) {
            throw explainAuthFailures(e);
        }
    }

    private RuntimeException explainAuthFailures(RuntimeException e) {
        long failures = transport.stats().authFailures();
        if (failures == 0) return e;
        return new IllegalStateException(e.getMessage() + "; " + failures + " datagrams failed authentication"
                + " (wire security " + transport.config().wireSecurity().configName() + "): the peers use another job"
                + " secret or --wire-security (every rank needs the same --secret-file and mode), or belong to another"
                + " run (datagrams of an earlier run, or a start-up exchange disturbed on the wire)", e);
    }

    /** Step space of the warm-up all-reduce: apart from the training's own (0, and SyncGroups' 1 and 2). */
    static final int WARM_UP_SPACE = Collectives.MAX_STEP_SPACE;
    /** The warm-up all-reduces at most this many floats (16 MB): enough for the JIT and a few round trips of data. */
    public static final int WARM_UP_MAX_FLOATS = 4 << 20;
    /** Warm-up all-reduces at most, however long some rank's JIT keeps compiling. */
    static final int WARM_UP_MAX_ROUNDS = 5;

    /**
     * Readies every path before the first step that counts: an empty message to and from every other rank
     * ({@link Collectives#greetPeers}), then all-reduces of {@code floats} zeros (at most 16 MB) in a step space of
     * their own, at least two and at most {@value #WARM_UP_MAX_ROUNDS}, until no rank's JIT compiler was busy during
     * the previous one ({@link CompilerActivity}). Returns the number of all-reduces, the same on every rank.
     *
     * <p>Why: in the first all-reduces of a job the four JVMs of a host compile their transport and reduction code
     * while they run it, and each peer's rate controller has yet to measure its path. One warm-up all-reduce cut the
     * first step from 9 s to 3 s, but the compiler went on for another 20-30 s: on a 40 ms, 0.1% loss WAN the C2
     * compiler threads took 37% of the workers' CPU during the first 64 MB exchange, which crossed at 75 Mbit/s where
     * the same JVMs' third exchange crossed at 117-138 Mbit/s ({@code WanRateControlTest}). Compiling belongs before
     * the steps that count, as it does for any JVM service before it takes traffic.
     *
     * <p>How the ranks agree without another message: each all-reduce carries in its first element whether this
     * rank's compiler was busy during the previous one (1) or not (0); the sum is the same on every rank, so every
     * rank stops after the same all-reduce. Nothing of the model is touched, so the steps and their losses are those
     * of a run without it. Every rank calls it once, after the start-up agreement (when every rank is up).
     */
    public int warmUp(int floats) {
        return warmUp(floats, new CompilerActivity());
    }

    /** {@link #warmUp(int)} with {@code compiling} telling whether this rank's JIT was busy since it was last asked. */
    int warmUp(int floats, BooleanSupplier compiling) {
        collectives.greetPeers();
        int n = Math.clamp(floats, 1, WARM_UP_MAX_FLOATS);
        try (Arena arena = Arena.ofShared(); // the transport thread reads and writes it
             Collectives warm = collectives.withStepSpace(WARM_UP_SPACE, collectives.config())) {
            MemorySegment buffer = arena.allocate((long) n * Float.BYTES, 64);
            compiling.getAsBoolean(); // from here on
            for (int round = 1; ; round++) {
                buffer.fill((byte) 0);
                // Round 1 has no previous all-reduce to report on: it asks for a second one.
                buffer.set(ValueLayout.JAVA_FLOAT, 0, round == 1 || compiling.getAsBoolean() ? 1f : 0f);
                warm.allReduce(buffer, n, Collectives.Op.SUM, round);
                if (round == WARM_UP_MAX_ROUNDS || buffer.get(ValueLayout.JAVA_FLOAT, 0) == 0f) {
                    return round;
                }
            }
        }
    }

    /**
     * Whether HotSpot's JIT compiled for more than {@value #BUSY_SHARE} of the wall time since the last call (its
     * total compilation time, summed over the compiler threads). False where the JVM does not report it.
     */
    static final class CompilerActivity implements BooleanSupplier {
        static final double BUSY_SHARE = 0.1;
        private final CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        private final boolean measured = jit != null && jit.isCompilationTimeMonitoringSupported();
        private long lastCompileMillis = measured ? jit.getTotalCompilationTime() : 0;
        private long lastNanos = System.nanoTime();

        @Override
        public boolean getAsBoolean() {
            if (!measured) {
                return false;
            }
            long compileMillis = jit.getTotalCompilationTime(), now = System.nanoTime();
            boolean busy = (compileMillis - lastCompileMillis) * 1e6 > BUSY_SHARE * (now - lastNanos);
            lastCompileMillis = compileMillis;
            lastNanos = now;
            return busy;
        }
    }

    /** Prints one progress line ({@link WorkerLine#format}) and flushes it: the launcher reads it at once. */
    public void report(String kind, Object... keyValues) {
        out.println(WorkerLine.format(kind, keyValues));
        out.flush();
    }

    /**
     * The {@code step} line of a training step: loss, time split, throughput, learning rate, what the transport sent
     * and retransmitted so far, the validation figures when the step had them, and the weight checksum every
     * {@code checksumEvery} steps and after the last of {@code steps} (none when {@code checksumEvery} is 0).
     */
    public void reportStep(StepStats s, long checksumEvery, long steps, LongSupplier weightChecksum) {
        reportStep(s, checksumEvery, steps, weightChecksum, null);
    }

    /**
     * As {@link #reportStep(StepStats, long, long, LongSupplier)}, for DiLoCo ({@code outerWanBytes} not null): the
     * line also carries this rank's own loss ({@code local_loss}: its data center's loss is not the global batch's)
     * and, after a step with outer sync activity, {@code outer_started}, {@code outer_applied} (fragments) and
     * {@code outer_bytes} (payload bytes the applied fragments' all-reduces sent between data centers, all
     * together); {@code weightChecksum} is then the global parameters' checksum, equal on every rank at every step.
     */
    public void reportStep(StepStats s, long checksumEvery, long steps, LongSupplier weightChecksum,
                           LongUnaryOperator outerWanBytes) {
        long step = s.step() + 1;
        StringBuilder line = new StringBuilder(WorkerLine.format("step", "step", step,
                "loss", String.format(Locale.ROOT, "%.6f", s.loss()),
                "ms", String.format(Locale.ROOT, "%.2f", s.computeMillis() + s.communicationMillis() + s.optimizerMillis()),
                "compute_ms", String.format(Locale.ROOT, "%.2f", s.computeMillis() + s.optimizerMillis()),
                "comm_ms", String.format(Locale.ROOT, "%.2f", s.communicationMillis()),
                "tok_s", String.format(Locale.ROOT, "%.1f", s.tokensPerSecond()),
                "lr", String.format(Locale.ROOT, "%.6g", s.learningRate()),
                "sent_bytes", transport.stats().bytesSent(), "retransmits", transport.stats().retransmits(),
                "resent_bytes", transport.stats().retransmittedBytes()));
        if (outerWanBytes != null) {
            line.append(' ').append(WorkerLine.values("local_loss", String.format(Locale.ROOT, "%.6f", s.localLoss())));
            if (s.outer().synced()) {
                line.append(' ').append(WorkerLine.values("outer_started", s.outer().started(),
                        "outer_applied", s.outer().applied(),
                        "outer_bytes", outerWanBytes.applyAsLong(s.outer().appliedFloats())));
            }
        }
        if (s.validation() != null) line.append(' ').append(WorkerLine.validationValues(s.validation()));
        if (checksumEvery > 0 && (step % checksumEvery == 0 || step == steps)) {
            line.append(" checksum=").append(Long.toHexString(weightChecksum.getAsLong()));
        }
        out.println(line);
        out.flush();
    }

    /**
     * The {@code done} line's figures of why chunks were sent twice, each key with the transport counter it reports:
     * chunks held because they came before their message was expected, dropped for want of room, resent on a NACK,
     * a timeout or a SACK gap, losses found spurious, duplicates received, datagrams dropped because they came from
     * another address than their rank's (a peer with more flows than this rank accepts, or a stranger).
     */
    private static final List<Map.Entry<String, ToLongFunction<TransportStats>>> LOSSES = List.of(
            Map.entry("early_held", TransportStats::earlyChunksHeld),
            Map.entry("unexpected_drops", TransportStats::unexpectedDrops),
            Map.entry("nack_losses", TransportStats::nackLosses),
            Map.entry("timeout_losses", TransportStats::timeoutLosses),
            Map.entry("sack_losses", TransportStats::sackLosses),
            Map.entry("spurious_losses", TransportStats::spuriousLosses),
            Map.entry("duplicates", TransportStats::duplicatesDropped),
            Map.entry("source_drops", TransportStats::sourceAddressDrops));
    /** Keys of those figures, which the job sums over ranks into its counters. */
    public static final List<String> LOSS_COUNTERS = LOSSES.stream().map(Map.Entry::getKey).toList();

    /**
     * Ends this rank's part: prints the {@code done} line (rank, {@code keyValues}, retransmissions, bytes sent and
     * the {@link #LOSS_COUNTERS}), then {@link Collectives#finish} (a barrier, so nobody closes while a peer may
     * still need an acknowledgement, and a linger for a peer whose last acknowledgement was lost). The last
     * collective of every rank.
     */
    public void finish(Object... keyValues) throws InterruptedException {
        List<Object> done = new ArrayList<>(List.of("rank", rank()));
        done.addAll(List.of(keyValues));
        TransportStats st = transport.stats();
        done.addAll(List.of("retransmits", st.retransmits(), "resent_bytes", st.retransmittedBytes(), "sent_bytes", st.bytesSent()));
        for (var loss : LOSSES) done.addAll(List.of(loss.getKey(), loss.getValue().applyAsLong(st)));
        report("done", done.toArray());
        collectives.finish();
    }

    /** Frees the collectives' buffers and closes the transport and its port. */
    @Override
    public void close() {
        try {
            collectives.close();
        } finally {
            transport.close();
        }
    }

    /** A rank main's work, given its spec file and rank. */
    @FunctionalInterface
    public interface Main {
        void run(Path spec, int rank) throws Exception;
    }

    /** How a rank main tells its launcher that it failed (the launcher reads stdout lines and the last stderr line). */
    @FunctionalInterface
    public interface FailureReport {
        void report(int rank, Throwable failure);
    }

    /**
     * The body of a rank process's {@code main(SPEC RANK)}: runs {@code main}, reports a failure with {@code onFailure},
     * flushes stdout and exits 0, 1 on failure, 2 on a wrong command line. The exit also ends the transport's threads.
     */
    public static void runMain(String[] args, String usage, Main main, FailureReport onFailure) {
        if (args.length != 2) {
            System.err.println("usage: " + usage);
            System.exit(2);
        }
        int rank;
        try {
            rank = Integer.parseInt(args[1]);
        } catch (NumberFormatException e) {
            System.err.println("usage: " + usage + " (RANK is a number, was " + args[1] + ")");
            System.exit(2);
            return;
        }
        int status = 0;
        try {
            main.run(Path.of(args[0]), rank);
        } catch (Throwable t) {
            onFailure.report(rank, t);
            status = 1;
        }
        System.out.flush();
        System.exit(status);
    }
}
