package io.xaforward.collective;

import io.xaforward.transport.LoopbackNetwork;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Broadcast delivers the root's bytes to every rank; no rank leaves a barrier before the last one entered it. */
class BroadcastBarrierTest {
    private static final int[] LAYOUT = {0, 0, 1, 1, 2};

    @Test
    void broadcastFromAnyRootReachesEveryRank() throws Exception {
        CollectiveConfig config = new CollectiveConfig(16 << 10, Algorithm.HIERARCHICAL, Duration.ofSeconds(20));
        var impairments = new LoopbackNetwork.Impairments(0.05, 0.05, 0.05, 0);
        try (Cluster cluster = Cluster.loopback(LAYOUT, impairments, 9, config,
                b -> b.retransmitTimeouts(Duration.ofMillis(5), Duration.ofMillis(1), Duration.ofMillis(100)));
             Arena arena = Arena.ofShared()) {
            int size = 100_003;
            for (int root : new int[]{3, 0, 4}) { // a non-leader, a leader, a one-rank DC
                byte[] payload = new byte[size];
                new Random(root).nextBytes(payload);
                MemorySegment[] buffers = new MemorySegment[cluster.size()];
                for (int r = 0; r < buffers.length; r++) {
                    buffers[r] = arena.allocate(size);
                    if (r == root) {
                        MemorySegment.copy(MemorySegment.ofArray(payload), 0, buffers[r], 0, size);
                    } else {
                        buffers[r].fill((byte) r);
                    }
                }
                cluster.onAllRanksOk(Duration.ofSeconds(30), c -> {
                    c.broadcast(buffers[c.group().rank()], root);
                    return null;
                });
                for (int r = 0; r < buffers.length; r++) {
                    assertEquals(-1L, MemorySegment.ofArray(payload).mismatch(buffers[r]),
                            "rank " + r + " after broadcast from " + root);
                }
            }
            // An empty broadcast is a valid no-op message exchange.
            cluster.onAllRanksOk(Duration.ofSeconds(10), c -> {
                c.broadcast(MemorySegment.ofArray(new byte[0]), 1);
                return null;
            });
        }
    }

    @Test
    void barrierHoldsEveryRankUntilTheLastArrives() throws Exception {
        CollectiveConfig config = new CollectiveConfig(4096, Algorithm.RING, Duration.ofSeconds(10));
        try (Cluster cluster = Cluster.loopback(LAYOUT, LoopbackNetwork.Impairments.NONE, 10, config, b -> b)) {
            for (int round = 0; round < 3; round++) {
                int late = (round * 2 + 1) % LAYOUT.length;
                long[] entered = new long[LAYOUT.length];
                List<Long> left = withOneLateRank(cluster, late, entered, Collectives::barrier);
                long lastEntry = entered[late];
                for (int r = 0; r < LAYOUT.length; r++) {
                    assertTrue(entered[r] <= lastEntry);
                    assertTrue(left.get(r) >= lastEntry, "rank " + r + " left barrier " + round
                            + " before rank " + late + " entered it");
                }
            }
        }
    }

    @Test
    void theGreetingHoldsEveryRankUntilTheLastArrivesAndLeavesBarriersIntact() throws Exception {
        CollectiveConfig config = new CollectiveConfig(4096, Algorithm.HIERARCHICAL, Duration.ofSeconds(10));
        try (Cluster cluster = Cluster.loopback(LAYOUT, LoopbackNetwork.Impairments.NONE, 13, config, b -> b)) {
            int late = 1;
            long[] entered = new long[LAYOUT.length];
            List<Long> left = withOneLateRank(cluster, late, entered, Collectives::greetPeers);
            for (int r = 0; r < LAYOUT.length; r++) {
                assertTrue(left.get(r) >= entered[late], "rank " + r + " left the greeting before rank " + late
                        + " entered it");
            }
            // Its messages are apart from the barriers' (the first barrier counts from 0 as before).
            long[] again = new long[LAYOUT.length];
            withOneLateRank(cluster, 0, again, Collectives::barrier);
        }
    }

    @Test
    void finishHoldsEveryRankUntilTheLastArrivesThenLingers() throws Exception {
        CollectiveConfig config = new CollectiveConfig(4096, Algorithm.RING, Duration.ofSeconds(10));
        try (Cluster cluster = Cluster.loopback(LAYOUT, LoopbackNetwork.Impairments.NONE, 12, config, b -> b)) {
            int late = 2;
            long[] entered = new long[LAYOUT.length];
            List<Long> left = withOneLateRank(cluster, late, entered, Collectives::finish);
            for (int r = 0; r < LAYOUT.length; r++) {
                assertTrue(left.get(r) >= entered[late], "rank " + r + " finished before rank " + late + " arrived");
                // the linger: answers for a second of silence after the barrier (at most five in all)
                long lingered = left.get(r) - entered[late];
                assertTrue(lingered >= 1_000_000_000L && lingered < 6_000_000_000L, "rank " + r + ": " + lingered + " ns");
            }
        }
    }

    interface RankCall {
        void call(Collectives c) throws Exception;
    }

    /**
     * Runs {@code call} on every rank, rank {@code late} 300 ms after the others; {@code entered[r]} is when rank r
     * made the call, and the result when it returned (System.nanoTime()).
     */
    private static List<Long> withOneLateRank(Cluster cluster, int late, long[] entered, RankCall call)
            throws InterruptedException {
        return cluster.onAllRanksOk(Duration.ofSeconds(20), c -> {
            int r = c.group().rank();
            if (r == late) {
                Thread.sleep(300);
            }
            entered[r] = System.nanoTime();
            call.call(c);
            return System.nanoTime();
        });
    }

    @Test
    void allReduceMeanAdapterCountsSteps() throws Exception {
        CollectiveConfig config = new CollectiveConfig(4096, Algorithm.HIERARCHICAL, Duration.ofSeconds(10));
        try (Cluster cluster = Cluster.loopback(LAYOUT, LoopbackNetwork.Impairments.NONE, 11, config, b -> b);
             Arena arena = Arena.ofShared()) {
            int n = LAYOUT.length;
            MemorySegment[] grads = new MemorySegment[n];
            for (int r = 0; r < n; r++) {
                grads[r] = arena.allocate(2000L * Float.BYTES);
            }
            for (int step = 0; step < 3; step++) {
                for (int r = 0; r < n; r++) {
                    for (int i = 0; i < 2000; i++) {
                        grads[r].setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (r * 10 + i % 7 + step));
                    }
                }
                cluster.onAllRanksOk(Duration.ofSeconds(10), c -> {
                    // The shape training's GradientReducer expects: a (MemorySegment, int) -> void method reference.
                    java.util.function.ObjIntConsumer<MemorySegment> reducer = c::allReduceMean;
                    reducer.accept(grads[c.group().rank()], 2000);
                    return null;
                });
                for (int r = 0; r < n; r++) {
                    for (int i = 0; i < 2000; i++) {
                        float sum = 0;
                        for (int k = 0; k < n; k++) {
                            sum += k * 10 + i % 7 + step;
                        }
                        assertEquals(sum / n, grads[r].getAtIndex(ValueLayout.JAVA_FLOAT, i));
                    }
                }
            }
            for (Collectives c : cluster.collectives) {
                assertEquals(3, c.trainingSteps());
            }
        }
    }
}
