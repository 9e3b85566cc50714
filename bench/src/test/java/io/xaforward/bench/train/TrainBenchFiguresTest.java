package io.xaforward.bench.train;

import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.TrainResult;
import io.xaforward.collective.Algorithm;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.bench.WanProfile;
import io.xaforward.cluster.Endpoint;
import io.xaforward.cluster.RankRuntime;
import io.xaforward.cluster.WorkerLine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
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

    /**
     * The floor row of a comm-bound run: three steps, the first slow; the WAN carried 5 MB one way and 4 MB the other
     * after step 1 (two steps), at 200 Mbit/s: the busier direction's 2.5 MB per step takes 100 ms.
     */
    @Test
    void theFloorIsComputeAlonePlusTheBusierDirectionsBytesOverTheRate() {
        TrainJobSpec spec = TrainJobSpec.builder().topology(Path.of("topologies/two-dc-wan.yaml")).prefix("t1").rateLimit("200mbit")
                .gatewayMode(GatewayMode.XDP).algorithm(Algorithm.HIERARCHICAL).preset("wide").steps(3)
                .globalBatch(8).seed(4242).learningRate(1e-3).warmupSteps(1).evalEvery(0).checksumEvery(0)
                .data(Path.of("data")).jobId(1).jobToken(7).threadsPerWorker(1).bucketBytes(4 << 20)
                .workDir(Path.of("/tmp/work")).build();
        List<TrainResult.Step> steps = List.of(new TrainResult.Step(1, 5.6, null, 5200, 90, 5100, 100),
                new TrainResult.Step(2, 5.5, null, 400, 60, 340, 100), new TrainResult.Step(3, 5.4, null, 420, 64, 356, 100));
        TrainResult r = new TrainResult(spec, 4, steps, 8, Map.of("wan_bytes_to_dc", 5_000_000L, "wan_bytes_from_dc", 4_000_000L,
                "window_ns", 820_000_000L), 0xabcL, 1_000_000);
        assertEquals(62, TrainBench.computeAloneMs(r), 1e-9, "steps 2 and 3");
        assertEquals(410 - 62, TrainBench.exposedCommMs(r), 1e-9);
        assertEquals(100, TrainBench.wanMsPerStep(r), 1e-9);
        assertEquals(162, TrainBench.floorMs(r), 1e-9);
        assertEquals(5200, TrainBench.slowestStepMs(r), 1e-9, "step 1 counts for the slowest step");
        TrainResult noWan = new TrainResult(spec, 4, steps, 8, Map.of(), 0xabcL, 1_000_000);
        assertTrue(Double.isNaN(TrainBench.floorMs(noWan)), "no WAN counters, no floor");
        assertTrue(Double.isNaN(TrainBench.delayLineLost(noWan)) && Double.isNaN(TrainBench.delayLineDrops(noWan)), "no delay line");
        TrainResult delayed = new TrainResult(spec, 4, steps, 8, Map.of("delay_line.to-dc.lost", 4L, "delay_line.to-gateway.lost", 3L,
                "delay_line.to-dc.received", 9000L, "delay_line.to-dc.socket_drops", 20L, "delay_line.to-gateway.ring_full", 5L,
                "delay_line.to-gateway.reordered", 2L), 0xabcL, 1_000_000);
        assertEquals(7, TrainBench.delayLineLost(delayed), 1e-9, "the emulated loss, both directions");
        assertEquals(25, TrainBench.delayLineDrops(delayed), 1e-9, "drops no loss setting asked for");
    }

    @Test
    void aConfigurationOverAProfileTakesItsNameAndRateAndOneWithoutAWanRefusesIt() {
        TrainBench.Config c = new TrainBench.Config("comm-bound", Path.of("x.yaml"), Path.of("y.yaml"), "4gbit", "wide", 10, 8,
                List.of(Endpoint.UDP), List.of(GatewayMode.XDP), "test");
        WanProfile metro = WanProfile.parseList("metro").getFirst();
        TrainBench.Config m = c.withProfile(metro);
        assertEquals("comm-bound-metro", m.name());
        assertEquals("200mbit", m.wanRate());
        assertEquals(metro, m.profile());
        TrainBench.Config edge = new TrainBench.Config("edge", Path.of("x.yaml"), Path.of("y.yaml"), TrainBench.NO_WAN, "wide", 10, 8,
                List.of(Endpoint.UDP), List.of(GatewayMode.XDP), "test");
        TrainBench bench = new TrainBench(List.of(edge), 1, Path.of("out"), Path.of("work"), new PrintStream(PrintStream.nullOutputStream()));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> bench.withWanProfiles(List.of(metro))).getMessage()
                .contains("configuration edge has no WAN"));
        TrainBench two = new TrainBench(List.of(c), 1, Path.of("out"), Path.of("work"), new PrintStream(PrintStream.nullOutputStream()))
                .withWanProfiles(WanProfile.parseList("lan,continental"));
        assertEquals(List.of("comm-bound-lan", "comm-bound-continental"), two.variants(c).stream().map(TrainBench.Config::name).toList());
    }

    /**
     * pytorch-xaf's retransmissions are its agents': each agent's done line (agent-R.log) is summed into the row, the
     * scripts' own TCP count kept beside it; an agent log without a done line fails instead of reading as 0.
     */
    @Test
    void pytorchXafRowsCountTheirAgentsRetransmissions(@TempDir Path work) throws Exception {
        for (int rank = 0; rank < 2; rank++) {
            List<Object> done = new ArrayList<>(List.of("rank", rank, "pid", 100 + rank, "retransmits", 1000 * (rank + 1),
                    "resent_bytes", 1_400_000L * (rank + 1), "sent_bytes", 50_000_000L));
            for (String key : RankRuntime.LOSS_COUNTERS) done.addAll(List.of(key, rank + 1));
            Files.writeString(work.resolve("agent-" + rank + ".log"), String.join("\n", "xaf agent: rank " + rank + " serves pid 1",
                    WorkerLine.format("agent", "rank", rank, "size", 2), WorkerLine.format("done", done.toArray())) + "\n");
        }
        TrainJobSpec spec = TrainJobSpec.builder().topology(Path.of("topologies/two-dc-wan.yaml")).prefix("t1").rateLimit("200mbit")
                .gatewayMode(GatewayMode.XDP).algorithm(Algorithm.HIERARCHICAL).preset("wide").steps(1)
                .globalBatch(8).seed(4242).learningRate(1e-3).warmupSteps(1).evalEvery(0).checksumEvery(0)
                .data(Path.of("data")).jobId(1).jobToken(7).threadsPerWorker(1).bucketBytes(4 << 20).workDir(work).build();
        TrainResult scripts = new TrainResult(spec, 2, List.of(new TrainResult.Step(1, 5.6, null, 850, 200, 650, 1000)), 12,
                Map.of("retransmits", 5L, "window_ns", 1L), 0xabcL, 1_000_000);
        TrainResult r = PytorchXafPeer.withAgentCounters(scripts);
        assertEquals(3005, TrainBench.retransmits(r), "both agents' chunks resent plus the scripts' TCP segments");
        assertEquals(5L, r.gatewayCounters().get("tcp_retransmits"));
        assertEquals(4_200_000L, r.gatewayCounters().get("resent_bytes"));
        assertEquals(3L, r.gatewayCounters().get("timeout_losses"));
        assertEquals(1L, r.gatewayCounters().get("window_ns"), "the job's own counters stay");
        Files.writeString(work.resolve("agent-1.log"), "xaf agent: rank 1 serves pid 1\n");
        String why = assertThrows(IllegalStateException.class, () -> PytorchXafPeer.withAgentCounters(scripts)).getMessage();
        assertTrue(why.contains("rank 1's agent printed no done line") && why.contains("agent-1.log"), why);
    }
}
