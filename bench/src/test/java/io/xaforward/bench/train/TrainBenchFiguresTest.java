package io.xaforward.bench.train;

import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.TrainResult;
import io.xaforward.collective.Algorithm;
import io.xaforward.testbed.mode.GatewayMode;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The figures of a training bench row that say which resource set the pace: under a gateway CPU budget the gateway's
 * core is busy all the time (the budget's own thread runs there), so only the data path's use of its budget tells a
 * gateway-bound job from one the workers hold.
 */
class TrainBenchFiguresTest {
    private static TrainResult result(Map<String, Long> counters) {
        return result(counters, "4gbit");
    }

    private static TrainResult result(Map<String, Long> counters, String wanRate) {
        TrainJobSpec spec = TrainJobSpec.builder().topology(Path.of("topologies/two-dc-wan.yaml")).prefix("t1").rateLimit(wanRate)
                .gatewayMode(GatewayMode.XDP).algorithm(Algorithm.HIERARCHICAL).preset("wide").steps(10)
                .globalBatch(8).seed(4242).learningRate(1e-3).warmupSteps(2).evalEvery(0).checksumEvery(0)
                .data(Path.of("data")).jobId(1).jobToken(7).threadsPerWorker(1).bucketBytes(4 << 20)
                .workDir(Path.of("/tmp/work")).build();
        return new TrainResult(spec, 4, List.of(new TrainResult.Step(1, 5.6, null, 850, 200, 650, 1000)), 12,
                counters, 0xabcL, 1_000_000);
    }

    @Test
    void theGatewaysUseOfItsBudgetLeavesTheDutyCycleThreadOut() {
        // An xdp job under a 10% budget: the gateway's core busy throughout, its data path 0.28 s of 11.1 s.
        TrainResult xdp = result(Map.of("window_ns", 11_110_000_000L, "gateway_core_busy_ns", 11_000_000_000L,
                "gateway_cpu_ns", 278_000_000L, "wan_packets", 101_605L));
        assertEquals(0.99, TrainBench.coreBusy(xdp, "gateway"), 0.01);
        assertEquals(0.25, TrainBench.gatewayCpuUsed(xdp, 0.1), 0.01, "a quarter of its budget: not gateway-bound");
        assertEquals(0.025, TrainBench.gatewayCpuUsed(xdp, 1.0), 0.001, "without a budget: of the whole core");
        assertEquals(278e6 / 101_605, TrainBench.gatewayNsPerPacket(xdp), 1e-6);

        // A relay job under the same budget uses most of it.
        TrainResult relay = result(Map.of("window_ns", 18_230_000_000L, "gateway_cpu_ns", 1_420_000_000L));
        assertEquals(0.78, TrainBench.gatewayCpuUsed(relay, 0.1), 0.01);
    }

    @Test
    void figuresThatWereNotMeasuredAreNotANumber() {
        TrainResult none = result(Map.of());
        assertTrue(Double.isNaN(TrainBench.gatewayCpuUsed(none, 0.1)));
        assertTrue(Double.isNaN(TrainBench.coreBusy(none, "gateway")));
        assertTrue(Double.isNaN(TrainBench.gatewayNsPerPacket(none)));
        assertEquals("-", TrainBench.percent(Double.NaN));
        assertEquals("25%", TrainBench.percent(0.249));
    }

    @Test
    void withoutAWanThereIsNoWanUtilisationButPacketsStillCount() {
        Map<String, Long> c = Map.of("window_ns", 10_000_000_000L, "gateway_cpu_ns", 200_000_000L, "wan_packets", 100_000L,
                "wan_bytes_to_dc", 500_000_000L);
        assertEquals(0.1, TrainBench.wanUtilisation(result(c, "4gbit")), 1e-9, "500 MB in 10 s of a 4 Gbit/s WAN");
        TrainResult edge = result(c, TrainBench.NO_WAN);
        assertTrue(Double.isNaN(TrainBench.wanUtilisation(edge)));
        assertEquals(2000, TrainBench.gatewayNsPerPacket(edge), 1e-9);
    }
}
