package io.xaforward.collective;

import io.xaforward.transport.LoopbackNetwork;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * DiLoCo's two collectives on one transport: a data center's sub-group (numbered 0..n-1, mapped to the transport's
 * ranks) all-reduces every step while an all-rank instance in another step space all-reduces at the same time, over
 * a lossy network. Each must get its own group's sums, bitwise the same on the ranks that share them.
 */
class SubGroupTest {
    private static final int[] LAYOUT = {0, 0, 1, 1, 1};
    private static final int COUNT = 20_011;

    private static float value(int round, int rank, int i) {
        return (float) ((round + 1) * 0.25 + rank * 1.5 + (i % 97) * 0.125);
    }

    @Test
    void datacenterGroupAndOuterGroupRunConcurrentlyWithoutMixingMessages() throws Exception {
        CollectiveConfig config = new CollectiveConfig(16 << 10, Algorithm.HIERARCHICAL, Duration.ofSeconds(30));
        var impairments = new LoopbackNetwork.Impairments(0.03, 0.03, 0.03, 0);
        int innerRounds = 6;
        int outerRounds = 3;
        try (Cluster cluster = Cluster.loopback(LAYOUT, impairments, 21, config,
                b -> b.retransmitTimeouts(Duration.ofMillis(5), Duration.ofMillis(1), Duration.ofMillis(100)));
             Arena arena = Arena.ofShared()) {
            int n = cluster.size();
            float[][][] inner = new float[n][innerRounds][];
            float[][][] outer = new float[n][outerRounds][];
            cluster.onAllRanksOk(Duration.ofSeconds(60), c -> {
                int rank = c.group().rank();
                try (Collectives dc = c.datacenterGroup(1, config.withAlgorithm(Algorithm.RING));
                     Collectives all = c.withStepSpace(2, config)) {
                    assertEquals(rank, dc.transportRank(dc.group().rank()));
                    // A thread of its own per rank: the common pool may have a single worker on a small machine.
                    CompletableFuture<Void> outerThread = new CompletableFuture<>();
                    Thread.ofPlatform().daemon().start(() -> {
                        try {
                            MemorySegment buf = arena.allocate((long) COUNT * Float.BYTES);
                            for (int round = 0; round < outerRounds; round++) {
                                for (int i = 0; i < COUNT; i++) buf.setAtIndex(ValueLayout.JAVA_FLOAT, i, value(round, rank, i));
                                all.allReduce(buf, COUNT, Collectives.Op.SUM, round);
                                outer[rank][round] = buf.toArray(ValueLayout.JAVA_FLOAT);
                            }
                            outerThread.complete(null);
                        } catch (Throwable t) {
                            outerThread.completeExceptionally(t);
                        }
                    });
                    MemorySegment buf = arena.allocate((long) COUNT * Float.BYTES);
                    for (int round = 0; round < innerRounds; round++) {
                        for (int i = 0; i < COUNT; i++) buf.setAtIndex(ValueLayout.JAVA_FLOAT, i, value(round, rank, i));
                        dc.allReduceMean(buf, COUNT);
                        inner[rank][round] = buf.toArray(ValueLayout.JAVA_FLOAT);
                    }
                    outerThread.join();
                    // A sub-group's broadcast and barrier address group ranks: root 1 is the second member.
                    byte[] payload = new byte[333];
                    if (dc.group().rank() == 1) java.util.Arrays.fill(payload, (byte) (10 + rank));
                    MemorySegment bytes = arena.allocate(payload.length);
                    MemorySegment.copy(MemorySegment.ofArray(payload), 0, bytes, 0, payload.length);
                    dc.broadcast(bytes, 1);
                    int expectedRoot = LAYOUT[rank] == 0 ? 1 : 3;
                    assertEquals((byte) (10 + expectedRoot), bytes.get(ValueLayout.JAVA_BYTE, 0));
                    dc.barrier();
                }
                return null;
            });
            for (int r = 0; r < n; r++) {
                int[] members = LAYOUT[r] == 0 ? new int[]{0, 1} : new int[]{2, 3, 4};
                for (int round = 0; round < innerRounds; round++) {
                    for (int i = 0; i < COUNT; i += 1009) {
                        double sum = 0;
                        for (int m : members) sum += value(round, m, i);
                        assertEquals(sum / members.length, inner[r][round][i], 1e-4, "rank " + r + " round " + round);
                    }
                    assertArrayEquals(inner[members[0]][round], inner[r][round], "same DC, same bits");
                }
                for (int round = 0; round < outerRounds; round++) {
                    for (int i = 0; i < COUNT; i += 1009) {
                        double sum = 0;
                        for (int m = 0; m < n; m++) sum += value(round, m, i);
                        assertEquals(sum, outer[r][round][i], 1e-3, "rank " + r + " outer round " + round);
                    }
                    assertArrayEquals(outer[0][round], outer[r][round], "every rank, same bits");
                }
            }
        }
    }

    @Test
    void anInstanceRefusesItsOwnStepSpaceForAnother() throws Exception {
        CollectiveConfig config = new CollectiveConfig(4096, Algorithm.RING, Duration.ofSeconds(10));
        try (Cluster cluster = Cluster.loopback(LAYOUT, LoopbackNetwork.Impairments.NONE, 3, config, b -> b)) {
            Collectives c = cluster.collectives[0];
            assertThrows(IllegalArgumentException.class, () -> c.withStepSpace(0, config));
            assertThrows(IllegalArgumentException.class, () -> c.withStepSpace(Collectives.MAX_STEP_SPACE + 1, config));
        }
    }
}
