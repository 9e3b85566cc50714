package io.xaforward.bench.allreduce;

import com.sun.management.OperatingSystemMXBean;
import io.xaforward.cluster.NetworkCpu;
import io.xaforward.cluster.RankNetwork;
import io.xaforward.cluster.RankRuntime;
import io.xaforward.cluster.WorkerLine;
import io.xaforward.collective.Algorithm;
import io.xaforward.collective.CollectiveConfig;
import io.xaforward.collective.CollectiveTimeoutException;
import io.xaforward.collective.Collectives;
import io.xaforward.transport.DatagramPort;
import io.xaforward.transport.MessageId;
import io.xaforward.transport.XskDatagramPort;
import io.xaforward.transport.ReliableTransport;
import io.xaforward.transport.TransportConfig;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One rank of an all-reduce job, run by {@link AllReduceJob} as its own JVM inside the rank's host namespace:
 * {@code AllReduceWorkerMain JOB.properties RANK}. Meets every peer once (a rendezvous that names the ranks that do
 * not answer), runs the schedule of {@link AllReduceSpec}, verifies results against {@link InputPattern}'s reference
 * and reports {@link WorkerLine}s: {@code ready}, {@code result} per size x algorithm x run, {@code goodput},
 * {@code done}; on failure {@code failed} and a "rank R failed: ..." line on stderr, then exit 1.
 */
public final class AllReduceWorkerMain {
    /** Message ids of the rendezvous and the goodput exchange: kind 3, which the collectives never use. */
    private static final int OWN_KIND = 3 << 30;

    private AllReduceWorkerMain() {}

    public static void main(String[] args) {
        RankRuntime.runMain(args, "AllReduceWorkerMain JOB.properties RANK", (spec, rank) -> run(AllReduceSpec.read(spec), rank),
                (rank, t) -> {
                    System.err.println("rank " + rank + " failed: " + t.getMessage());
                    t.printStackTrace();
                    int[] waiting = t instanceof CollectiveTimeoutException c ? c.waitingFor()
                            : t instanceof RendezvousException r ? r.missing : new int[0];
                    System.out.println(WorkerLine.format("failed", "rank", rank, "waiting_for",
                            Arrays.stream(waiting).mapToObj(Integer::toString).reduce((a, b) -> a + "," + b).orElse("-")));
                });
    }

    /** The rendezvous did not hear from (or was not acknowledged by) some ranks in time. */
    static final class RendezvousException extends RuntimeException {
        final int[] missing;

        RendezvousException(String message, int[] missing) {
            super(message);
            this.missing = missing;
        }
    }

    static void run(AllReduceSpec spec, int rank) throws Exception {
        var c = spec.cluster();
        RankNetwork net = RankNetwork.of(c.topology(), c.prefix(), c.jobId(), c.jobToken(), rank, c.gatewayMode(), c.endpoint(),
                c.flows());
        int world = net.worldSize();
        TransportConfig.Builder tc = net.transportConfig(spec.cluster().jobToken(), spec.operationTimeout());
        if (spec.pacingBytesPerSecond() > 0) tc.pacing(spec.pacingBytesPerSecond(), 0);
        spec.runKeys().apply(spec.wireSecurity(), tc);
        long maxBytes = spec.sizesBytes().stream().mapToLong(s -> s / Float.BYTES * Float.BYTES).max().orElse(Float.BYTES);
        InputPattern pattern = new InputPattern(spec.pattern(), spec.seed());
        // The emulated network's CPU is the same whoever reads it: rank 0 alone reports it.
        NetworkCpu network = rank == 0 ? NetworkCpu.read(spec.networkCpuFile()) : NetworkCpu.NONE;

        var port = net.openPort(spec.cluster().jobToken());
        try (Arena arena = Arena.ofShared();
             RankRuntime runtime = RankRuntime.start(net, tc.build(), port, CollectiveConfig.defaults()
                     .withBucketBytes(spec.bucketBytes()).withOperationTimeout(spec.operationTimeout()), System.out)) {
            ReliableTransport transport = runtime.transport();
            Collectives collectives = runtime.collectives();
            runtime.report("ready", "rank", rank, "form", net.self().form().configName(),
                    "endpoint", net.endpoint().configName(),
                    "dc", net.self().datacenter());
            rendezvous(transport, rank, world, c.jobId(), spec, port);

            MemorySegment buffer = arena.allocate(maxBytes, 64);
            int step = 0;
            for (int run = 0; run < spec.runs(); run++) {
                for (long size : spec.sizesBytes()) {
                    int count = (int) (size / Float.BYTES);
                    for (Algorithm algorithm : spec.algorithms()) {
                        pattern.fill(buffer, rank, count);
                        int warmup = run == 0 ? spec.warmup() : 0;
                        // SUM as nccl-tests times it; inputs are below 1 in magnitude, so 30 sums of up to 2^10
                        // ranks stay finite. Longer series use MEAN, which keeps values bounded.
                        Collectives.Op op = warmup + spec.iterations() <= 30 && world <= 1024 ? Collectives.Op.SUM : Collectives.Op.MEAN;
                        for (int i = 0; i < warmup; i++) {
                            collectives.allReduce(buffer, count, op, step++, algorithm);
                        }
                        collectives.barrier(); // all ranks start the timed part together
                        long fabricStart = network.fabricCpuNs(), gatewayStart = network.gatewayCpuNs();
                        long start = System.nanoTime();
                        long cpuStart = processCpuNanos();
                        long datagramsStart = transport.stats().packetsSent() + transport.stats().packetsReceived();
                        for (int i = 0; i < spec.iterations(); i++) {
                            collectives.allReduce(buffer, count, op, step++, algorithm);
                        }
                        double seconds = (System.nanoTime() - start) / 1e9 / spec.iterations();
                        double cpuSeconds = (processCpuNanos() - cpuStart) / 1e9 / spec.iterations();
                        long datagrams = (transport.stats().packetsSent() + transport.stats().packetsReceived()
                                - datagramsStart) / spec.iterations();
                        long fabricNs = (network.fabricCpuNs() - fabricStart) / spec.iterations();
                        long gatewayNs = (network.gatewayCpuNs() - gatewayStart) / spec.iterations();
                        List<Object> line = new ArrayList<>(List.of("rank", rank, "run", run, "bytes", (long) count * Float.BYTES,
                                "algorithm", algorithm.configName(),
                                "seconds", String.format(Locale.ROOT, "%.6f", seconds),
                                "cpu_seconds", String.format(Locale.ROOT, "%.6f", cpuSeconds),
                                "datagrams", datagrams));
                        if (network.placed()) {
                            line.addAll(List.of("fabric_cpu_ns", fabricNs, "gateway_cpu_ns", gatewayNs));
                        }
                        InputPattern.Check check = null;
                        if (run < spec.verifyRuns()) {
                            pattern.fill(buffer, rank, count);
                            collectives.allReduce(buffer, count, Collectives.Op.SUM, step++, algorithm);
                            check = pattern.verify(buffer, count, world);
                            line.addAll(List.of("verified", "true", "ok", check.ok(),
                                    "max_error", String.format(Locale.ROOT, "%.3e", check.maxError()),
                                    "checksum", Long.toHexString(InputPattern.checksum(buffer, count))));
                        } else {
                            line.addAll(List.of("verified", "false"));
                        }
                        runtime.report("result", line.toArray());
                        if (check != null && !check.ok()) {
                            throw new IllegalStateException(String.format(Locale.ROOT,
                                    "%s all-reduce of %d bytes gave a wrong result: element %d is %s, expected %s (%s input)",
                                    algorithm.configName(), (long) count * Float.BYTES, check.firstBadIndex(),
                                    check.badValue(), check.expectedValue(), spec.pattern().name().toLowerCase(Locale.ROOT)));
                        }
                    }
                }
            }
            if (spec.goodputBytes() > 0) goodput(runtime, net, spec, arena);
            var s = transport.stats();
            System.err.println("rank " + rank + " transport " + s + " port " + port); // diagnostics in the worker log
            System.err.println("rank " + rank + " peers " + transport.peerSummary());
            if (port instanceof XskDatagramPort x) {
                System.err.println("rank " + rank + " xsk " + x.socketStats() + " txRingFull " + x.txRingFull()
                        + " foreign " + x.foreignFrames() + " csum " + x.checksumFailures());
            }
            runtime.finish("bad_token_drops", badTokenDrops(transport, port));
        }
    }

    /** CPU time of this worker process (all threads, user + system): what one rank costs, whatever the load. */
    private static long processCpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** Wrong-token packets this rank dropped: in its transport, or (AF_XDP endpoint) in its XDP program. */
    private static long badTokenDrops(ReliableTransport transport, DatagramPort port) {
        return transport.stats().badTokenDrops() + (port instanceof XskDatagramPort x ? x.badTokenDrops() : 0);
    }

    /**
     * Every rank sends a small message to every other rank and expects one from each: proves that the whole group is
     * up and reachable before any timing starts, and names the ranks that are not, instead of a collective timing
     * out on whichever neighbour its algorithm happens to wait for.
     */
    private static void rendezvous(ReliableTransport transport, int rank, int world, int jobId, AllReduceSpec spec,
                                   DatagramPort port) throws InterruptedException {
        MessageId id = new MessageId(jobId, 0, OWN_KIND);
        MemorySegment mine = MemorySegment.ofArray(new int[]{rank});
        List<CompletableFuture<Void>> sends = new ArrayList<>(), receives = new ArrayList<>();
        int[][] inbox = new int[world][1];
        for (int peer = 0; peer < world; peer++) {
            if (peer == rank) {
                sends.add(CompletableFuture.completedFuture(null));
                receives.add(CompletableFuture.completedFuture(null));
                continue;
            }
            receives.add(transport.expect(peer, id, MemorySegment.ofArray(inbox[peer])));
            sends.add(transport.send(peer, id, mine));
        }
        long deadline = System.nanoTime() + spec.operationTimeout().toNanos();
        for (int peer = 0; peer < world; peer++) {
            for (CompletableFuture<Void> f : List.of(receives.get(peer), sends.get(peer))) {
                long left = deadline - System.nanoTime();
                try {
                    if (left > 0) f.get(left, TimeUnit.NANOSECONDS);
                } catch (TimeoutException | ExecutionException e) {
                    // collected below
                }
            }
        }
        TreeSet<Integer> missing = new TreeSet<>();
        for (int peer = 0; peer < world; peer++) {
            if (!receives.get(peer).isDone() || receives.get(peer).isCompletedExceptionally()
                    || !sends.get(peer).isDone() || sends.get(peer).isCompletedExceptionally()) {
                missing.add(peer);
            }
        }
        if (!missing.isEmpty()) {
            var s = transport.stats();
            throw new RendezvousException("no answer from rank" + (missing.size() > 1 ? "s " : " ") + missing
                    .toString().replaceAll("[\\[\\]]", "") + " within " + spec.operationTimeout().toMillis()
                    + " ms at start-up (not running, unreachable, or using another job token; this rank dropped "
                    + badTokenDrops(transport, port) + " packets with a wrong token)",
                    missing.stream().mapToInt(Integer::intValue).toArray());
        }
    }

    /**
     * Rank 0 and the first rank of another data center exchange {@code goodputBytes} in both directions at once; rank
     * 0 reports payload bytes per second per direction. Other ranks only take part in the barriers.
     */
    private static void goodput(RankRuntime runtime, RankNetwork net, AllReduceSpec spec, Arena arena) throws Exception {
        Collectives collectives = runtime.collectives();
        ReliableTransport transport = runtime.transport();
        int rank = net.rank();
        int dc0 = net.plan().datacenterOf(0);
        int partner = -1;
        for (int r = 0; r < net.worldSize() && partner < 0; r++) if (net.plan().datacenterOf(r) != dc0) partner = r;
        if (partner < 0) throw new IllegalArgumentException("goodput needs a second data center");
        MemorySegment out = arena.allocate(spec.goodputBytes(), 64), in = arena.allocate(spec.goodputBytes(), 64);
        out.fill((byte) 0x5a);
        for (int i = 0; i < spec.goodputRepeats(); i++) {
            collectives.barrier();
            if (rank != 0 && rank != partner) continue;
            int peer = rank == 0 ? partner : 0;
            MessageId id = new MessageId(net.plan().jobId(), i, OWN_KIND | 1);
            long start = System.nanoTime();
            CompletableFuture<Void> rx = transport.expect(peer, id, in), tx = transport.send(peer, id, out);
            long timeoutNanos = spec.operationTimeout().toNanos();
            rx.get(timeoutNanos, TimeUnit.NANOSECONDS);
            tx.get(timeoutNanos, TimeUnit.NANOSECONDS);
            double seconds = (System.nanoTime() - start) / 1e9;
            if (in.get(ValueLayout.JAVA_BYTE, spec.goodputBytes() - 1) != 0x5a) throw new IllegalStateException("goodput payload arrived corrupted");
            if (rank == 0) {
                runtime.report("goodput", "rank", rank, "peer", peer, "repeat", i,
                        "bytes", spec.goodputBytes(), "seconds", String.format(Locale.ROOT, "%.6f", seconds),
                        "retransmits", transport.stats().retransmits());
            }
        }
    }
}
