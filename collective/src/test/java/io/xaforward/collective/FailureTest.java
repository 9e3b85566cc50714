package io.xaforward.collective;

import io.xaforward.transport.LoopbackNetwork;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Bad conditions end in exceptions that name the culprit, within the configured time, and never hang. */
class FailureTest {
    private static final int[] LAYOUT = {0, 0, 1, 1};
    private static final int DEAD = 3;

    @ParameterizedTest
    @EnumSource(Algorithm.class)
    void silentRankIsNamedWhenTheOperationTimesOut(Algorithm algorithm) throws Exception {
        Duration timeout = Duration.ofMillis(1500);
        CollectiveConfig config = new CollectiveConfig(4096, algorithm, timeout);
        try (Cluster cluster = Cluster.loopback(LAYOUT, LoopbackNetwork.Impairments.NONE, 3, config, b -> b, DEAD);
             Arena arena = Arena.ofShared()) {
            List<Cluster.Outcome<Object>> outcomes = cluster.onAllRanks(Duration.ofSeconds(10), c -> {
                MemorySegment buffer = Tensors.segment(arena, new float[3000]);
                c.allReduce(buffer, 3000, Collectives.Op.SUM, 1);
                return null;
            });
            boolean someoneNamedTheDeadRank = false;
            for (int r = 0; r < LAYOUT.length; r++) {
                if (r == DEAD) {
                    continue;
                }
                Cluster.Outcome<Object> o = outcomes.get(r);
                CollectiveTimeoutException e = assertInstanceOf(CollectiveTimeoutException.class, o.error(),
                        "rank " + r);
                assertTrue(o.elapsedNanos() < timeout.toNanos() + 2_000_000_000L, "rank " + r + " took too long");
                assertTrue(e.getMessage().contains("on rank " + r + " timed out after 1500 ms"), e.getMessage());
                if (Arrays.stream(e.waitingFor()).anyMatch(x -> x == DEAD)) {
                    someoneNamedTheDeadRank = true;
                    assertTrue(e.getMessage().contains("from rank " + DEAD) || e.getMessage().contains("by rank "
                            + DEAD), e.getMessage());
                }
                // The instance refuses further work instead of mixing a broken step into the next one.
                IllegalStateException again = assertThrows(IllegalStateException.class, () -> cluster.collectives[0]
                        .allReduce(MemorySegment.ofArray(new float[4]), 4, Collectives.Op.SUM, 2));
                assertTrue(again.getMessage().contains("failed earlier"), again.getMessage());
            }
            assertTrue(someoneNamedTheDeadRank, "the ranks next to rank 3 must name it");
            // In the hierarchical ring rank 2 is rank 3's ring neighbour, and rank 1 its shard-exchange partner.
            if (algorithm == Algorithm.HIERARCHICAL) {
                for (int r : new int[]{1, 2}) {
                    var e = (CollectiveTimeoutException) outcomes.get(r).error();
                    assertTrue(Arrays.stream(e.waitingFor()).anyMatch(x -> x == DEAD), e.getMessage());
                }
            }
        }
    }

    @Test
    void transportGivingUpOnAPeerNamesThatRank() throws Exception {
        // The transport's 1 s acknowledgement timeout ends the sender's operation long before the 3 s operation
        // timeout, which ends everyone else's (receives have no transport timeout: they are posted up front).
        CollectiveConfig config = new CollectiveConfig(4096, Algorithm.RING, Duration.ofSeconds(3));
        try (Cluster cluster = Cluster.loopback(LAYOUT, LoopbackNetwork.Impairments.NONE, 4, config,
                b -> b.ackTimeout(Duration.ofSeconds(1)), DEAD);
             Arena arena = Arena.ofShared()) {
            List<Cluster.Outcome<Object>> outcomes = cluster.onAllRanks(Duration.ofSeconds(10), c -> {
                c.allReduce(Tensors.segment(arena, new float[1000]), 1000, Collectives.Op.SUM, 1);
                return null;
            });
            for (int r = 0; r < DEAD; r++) {
                assertInstanceOf(CollectiveTimeoutException.class, outcomes.get(r).error(), "rank " + r);
                assertTrue(outcomes.get(r).elapsedNanos() < 5_000_000_000L, "rank " + r + " took too long");
            }
            // Rank 2 sends to rank 3 in the ring: the transport gives up after 1 s and blames rank 3.
            CollectiveTimeoutException sender = (CollectiveTimeoutException) outcomes.get(2).error();
            assertEquals(DEAD, sender.rank(), sender.getMessage());
            assertTrue(sender.getMessage().contains("rank 3 did not acknowledge message"), sender.getMessage());
            // (the message above is the transport's, so its timeout came first: no wall-clock bound needed)
            // Rank 0 receives from rank 3: the operation timeout lists rank 3 among the ranks it waited for.
            CollectiveTimeoutException receiver = (CollectiveTimeoutException) outcomes.get(0).error();
            assertTrue(Arrays.stream(receiver.waitingFor()).anyMatch(x -> x == DEAD), receiver.getMessage());
        }
    }

    @Test
    void mismatchedElementCountsEndInAnExplainedTimeout() throws Exception {
        CollectiveConfig config = new CollectiveConfig(4096, Algorithm.RING, Duration.ofMillis(1500));
        try (Cluster cluster = Cluster.loopback(LAYOUT, LoopbackNetwork.Impairments.NONE, 5, config, b -> b);
             Arena arena = Arena.ofShared()) {
            List<Cluster.Outcome<Object>> outcomes = cluster.onAllRanks(Duration.ofSeconds(10), c -> {
                int count = c.group().rank() == 3 ? 1001 : 1000;
                c.allReduce(Tensors.segment(arena, new float[count]), count, Collectives.Op.SUM, 1);
                return null;
            });
            boolean explained = false;
            for (Cluster.Outcome<Object> o : outcomes) {
                assertInstanceOf(CollectiveException.class, o.error());
                explained |= o.error().getMessage().contains("do all ranks pass the same element count?");
            }
            assertTrue(explained, "some rank must point at the inconsistent sizes");
        }
    }

    @Test
    void inconsistentArgumentsAreRejectedUpFront() throws Exception {
        CollectiveConfig config = CollectiveConfig.defaults();
        try (Cluster cluster = Cluster.loopback(LAYOUT, LoopbackNetwork.Impairments.NONE, 6, config, b -> b)) {
            Collectives c = cluster.collectives[0];
            MemorySegment small = MemorySegment.ofArray(new float[4]);
            assertThrows(IllegalArgumentException.class, () -> c.allReduce(small, 5, Collectives.Op.SUM, 1));
            assertThrows(IllegalArgumentException.class, () -> c.broadcast(small, 4));
            assertThrows(IllegalArgumentException.class, () -> new Collectives(new CollectiveGroup(1, 4, LAYOUT),
                    cluster.transports[0], config));
            assertThrows(IllegalArgumentException.class, () -> new CollectiveGroup(0, 4, new int[]{0, 0, 1}));
            assertThrows(IllegalArgumentException.class, () -> new CollectiveConfig(6, Algorithm.RING,
                    Duration.ofSeconds(1)));
        }
    }
}
