package io.xaforward.collective;

import io.xaforward.transport.LoopbackNetwork;
import io.xaforward.transport.ReliableTransport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * All-reduce over a network that loses 10 %, duplicates 10 % and reorders 10 % of datagrams (and corrupts 1 %):
 * integer-valued inputs still sum exactly and identically on every rank, step after step.
 */
class LossyNetworkAllReduceTest {

    @ParameterizedTest
    @EnumSource(Algorithm.class)
    void integerSumsStayExact(Algorithm algorithm) throws Exception {
        int[] layout = {0, 0, 1, 1, 2};
        int count = 20_011;
        CollectiveConfig config = new CollectiveConfig(16 << 10, algorithm, Duration.ofSeconds(30));
        var impairments = new LoopbackNetwork.Impairments(0.10, 0.10, 0.10, 0.01);
        try (Cluster cluster = Cluster.loopback(layout, impairments, 77 + algorithm.ordinal(), config,
                b -> b.windowChunks(64).retransmitTimeouts(Duration.ofMillis(5), Duration.ofMillis(1),
                        Duration.ofMillis(100)));
             Arena arena = Arena.ofShared()) {
            int n = cluster.size();
            for (int step = 1; step <= 3; step++) {
                float[][] inputs = Tensors.inputs(n, count, step, true);
                float[][] results = cluster.allReduceSum(arena, inputs, step, Duration.ofSeconds(60));
                Tensors.assertAllReduced(inputs, results, false, true);
            }
            long retransmits = 0;
            long duplicates = 0;
            for (ReliableTransport t : cluster.transports) {
                retransmits += t.stats().retransmits();
                duplicates += t.stats().duplicatesDropped();
            }
            assertTrue(cluster.network.lost() > 0 && retransmits > 0, "the network must actually have lost data");
            assertTrue(cluster.network.duplicated() > 0 && duplicates > 0, "duplicates must have been dropped");
            assertTrue(cluster.network.reordered() > 0);
        }
    }
}
