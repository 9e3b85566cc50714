package io.xaforward.collective;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

/**
 * The plan map of {@link Collectives}: one plan per (algorithm, element count, wire format), built on first use and
 * handed back unchanged afterwards, so steady-state steps allocate no staging buffers.
 */
class AllReducePlansTest {
    /** Rank 0 of two one-rank data centers: the ring and the parameter server both stage a remote partial. */
    private static final int[][] TWO_DATACENTERS = {{0}, {1}};

    @Test
    void buildsOnePlanPerAlgorithmCountAndFormatAndReusesIt() {
        try (Arena arena = Arena.ofConfined()) {
            List<String> built = new ArrayList<>();
            AllReducePlans plans = new AllReducePlans((algorithm, count, wire) -> {
                built.add(algorithm + "/" + count + "/" + wire);
                return algorithm == Algorithm.PARAMETER_SERVER
                        ? new ParameterServerAllReduce(0, TWO_DATACENTERS, 7, count, 256, arena)
                        : new RingAllReduce(0, TWO_DATACENTERS, 7, count, 256, wire, 1024, arena);
            });

            AllReducePlan ring = plans.plan(Algorithm.HIERARCHICAL, 1000, WireDtype.FP32);
            assertSame(ring, plans.plan(Algorithm.HIERARCHICAL, 1000, WireDtype.FP32), "the same key reuses its plan");
            AllReducePlan int8 = plans.plan(Algorithm.HIERARCHICAL, 1000, WireDtype.INT8);
            AllReducePlan longer = plans.plan(Algorithm.HIERARCHICAL, 2000, WireDtype.FP32);
            AllReducePlan server = plans.plan(Algorithm.PARAMETER_SERVER, 1000, WireDtype.FP32);
            assertNotSame(ring, int8);
            assertNotSame(ring, longer);

            assertEquals(List.of("HIERARCHICAL/1000/FP32", "HIERARCHICAL/1000/INT8", "HIERARCHICAL/2000/FP32",
                    "PARAMETER_SERVER/1000/FP32"), built, "each key is built once, on first use");
            assertEquals(4, plans.size());
            assertEquals(ring.stagingBytes() + int8.stagingBytes() + longer.stagingBytes() + server.stagingBytes(),
                    plans.stagingBytes());

            plans.clear();
            assertEquals(0, plans.size());
            assertEquals(0, plans.stagingBytes());
        }
    }
}
