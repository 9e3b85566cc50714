package io.xaforward.collective;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

/** Four ranks (2 DCs x 2) on real UDP sockets on 127.0.0.1 all-reduce 8 MB with 4 MB buckets. */
class UdpAllReduceTest {

    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = {"RING", "HIERARCHICAL"})
    void eightMegabytesOverUdpLoopback(Algorithm algorithm) throws Exception {
        int count = 2 << 20; // 8 MB of floats
        CollectiveConfig config = CollectiveConfig.defaults().withAlgorithm(algorithm)
                .withOperationTimeout(Duration.ofSeconds(60));
        try (Cluster cluster = Cluster.udp(new int[]{0, 0, 1, 1}, config, b -> b.windowChunks(96)
                .retransmitTimeouts(Duration.ofMillis(20), Duration.ofMillis(2), Duration.ofMillis(200)));
             Arena arena = Arena.ofShared()) {
            int n = cluster.size();
            float[][] inputs = Tensors.inputs(n, count, 8, true);
            MemorySegment[] buffers = new MemorySegment[n];
            for (int r = 0; r < n; r++) {
                buffers[r] = Tensors.segment(arena, inputs[r]);
            }
            long start = System.nanoTime();
            cluster.onAllRanksOk(Duration.ofSeconds(90), c -> {
                c.allReduce(buffers[c.group().rank()], count, Collectives.Op.SUM, 1);
                return null;
            });
            double seconds = (System.nanoTime() - start) / 1e9;
            float[][] results = new float[n][];
            for (int r = 0; r < n; r++) {
                results[r] = Tensors.read(buffers[r], count);
            }
            Tensors.assertAllReduced(inputs, results, false, true);
            System.out.printf("UDP %s all-reduce of 8 MB on 4 ranks: %.2f s, retransmits %d%n", algorithm, seconds,
                    cluster.transports[0].stats().retransmits());
        }
    }
}
