package io.xaforward.collective;

import io.xaforward.transport.LoopbackNetwork;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The bench runs every size on all ranks, checks the result and reports nccl-tests' algbw and busbw. */
class AllReduceBenchTest {

    @Test
    void reportsBandwidthAsNcclTestsDefinesIt() throws Exception {
        CollectiveConfig config = new CollectiveConfig(64 << 10, Algorithm.HIERARCHICAL, Duration.ofSeconds(20));
        try (Cluster cluster = Cluster.loopback(new int[]{0, 0, 1, 1}, LoopbackNetwork.Impairments.NONE, 12, config,
                b -> b)) {
            long[] sizes = {4 << 10, 1 << 20};
            for (Algorithm algorithm : Algorithm.values()) {
                // the transports are shared across algorithms and refuse a reused message id: own step range each
                int firstStep = 1000 + 100 * algorithm.ordinal();
                AllReduceBench bench = new AllReduceBench(Arrays.asList(cluster.collectives), algorithm, firstStep);
                List<AllReduceBench.Result> results = bench.run(sizes, 1, 3);
                assertEquals(sizes.length, results.size());
                for (int i = 0; i < sizes.length; i++) {
                    AllReduceBench.Result r = results.get(i);
                    System.out.println(r);
                    assertEquals(sizes[i], r.bytes());
                    assertEquals(4, r.ranks());
                    assertTrue(r.correct(), r::toString);
                    assertTrue(r.seconds() > 0);
                    assertEquals(r.bytes() / r.seconds() / 1e9, r.algBandwidthGBps(), 1e-9 * r.algBandwidthGBps());
                    assertEquals(r.algBandwidthGBps() * 1.5, r.busBandwidthGBps(), 1e-9 * r.busBandwidthGBps());
                }
            }
        }
        assertEquals(7.0 / 4, AllReduceBench.busBandwidth(1.0, 8), 1e-12);
    }
}
