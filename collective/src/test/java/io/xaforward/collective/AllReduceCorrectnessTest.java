package io.xaforward.collective;

import io.xaforward.transport.LoopbackNetwork;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every all-reduce algorithm on uneven multi-DC layouts over a clean in-memory network: results match a double
 * reference within the float summation bound (exactly for integer-valued inputs), are bitwise identical on all ranks,
 * and repeated steps reuse the staging buffers. Element counts divide neither the world size nor the bucket size.
 */
class AllReduceCorrectnessTest {
    private static final long BUCKET_BYTES = 4096; // 1024 floats: 5003 floats make 5 buckets, the last one partial
    private static final int[] COUNTS = {3, 5003};

    static Stream<Arguments> cases() {
        int[][] layouts = {
                {0, 0, 1, 1},       // 2 DCs x 2 ranks
                {0, 0, 1, 1, 2},    // 3 DCs: 2 + 2 + 1
                {5, 9, 5, 7},       // 3 DCs: 2 + 1 + 1, sparse ids, members not contiguous
        };
        List<Arguments> cases = new ArrayList<>();
        for (Algorithm algorithm : Algorithm.values()) {
            for (int[] layout : layouts) {
                cases.add(Arguments.of(algorithm, layout));
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} on {1}")
    @MethodSource("cases")
    void sumsAndMeansAgreeBitwiseOnAllRanks(Algorithm algorithm, int[] layout) throws Exception {
        CollectiveConfig config = new CollectiveConfig(BUCKET_BYTES, algorithm, Duration.ofSeconds(20));
        try (Cluster cluster = Cluster.loopback(layout, LoopbackNetwork.Impairments.NONE, 1, config, b -> b);
             Arena arena = Arena.ofShared()) {
            int n = cluster.size();
            int step = 100;
            for (int count : COUNTS) {
                long stagingAfterFirst = -1;
                for (int round = 0; round < 4; round++) {
                    boolean integral = round % 2 == 1;
                    boolean mean = round == 3;
                    float[][] inputs = Tensors.inputs(n, count, 31L * count + round, integral);
                    MemorySegment[] buffers = new MemorySegment[n];
                    for (int r = 0; r < n; r++) {
                        buffers[r] = Tensors.segment(arena, inputs[r]);
                    }
                    int thisStep = step++;
                    cluster.onAllRanksOk(Duration.ofSeconds(30), c -> {
                        c.allReduce(buffers[c.group().rank()], count, mean ? Collectives.Op.MEAN : Collectives.Op.SUM,
                                thisStep);
                        return null;
                    });
                    float[][] results = new float[n][];
                    for (int r = 0; r < n; r++) {
                        results[r] = Tensors.read(buffers[r], count);
                        Tensors.assertSpareBytesUntouched(buffers[r], count);
                    }
                    Tensors.assertAllReduced(inputs, results, mean, integral);
                    long staging = cluster.collectives[0].stagingBytes();
                    if (stagingAfterFirst < 0) {
                        stagingAfterFirst = staging;
                    }
                    assertEquals(stagingAfterFirst, staging, "staging buffers must be reused across steps");
                }
            }
            for (Collectives c : cluster.collectives) {
                assertEquals(COUNTS.length, c.planCount(), "one plan per element count");
            }
            if (algorithm != Algorithm.RING) {
                assertTrue(cluster.collectives[0].stagingBytes() > 0, "multi-DC algorithms stage remote partials");
            }
        }
    }
}
