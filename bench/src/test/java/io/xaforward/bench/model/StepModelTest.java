package io.xaforward.bench.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.xaforward.collective.Algorithm;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The model's traffic and stage arithmetic on clusters whose answers can be worked out by hand. */
class StepModelTest {

    /** A calibration with round numbers: xdp 1000 ns, relay 10000 ns per packet, endpoints 2000 ns per event. */
    static Calibration cal() {
        Map<String, TreeMap<Integer, List<Double>>> gw = Map.of(
                "xdp", new TreeMap<>(Map.of(1400, List.of(1000.0))),
                "kernel", new TreeMap<>(Map.of(1400, List.of(2000.0))),
                "relay", new TreeMap<>(Map.of(1400, List.of(10000.0))));
        return new Calibration(gw, 2000, 0.7, 1, "xdp", 1.5, List.of(), 4, 2, List.of(), Calibration.TrainFit.NONE, List.of());
    }

    static ClusterSpec spec(String extra) {
        return ClusterSpec.parse("""
                datacenters: 2
                hosts_per_dc: 4
                mtu: 1500
                gateway: {modes: [xdp, relay], cores: 1}
                gradient_mb: 100
                compute_ms: 200
                """ + extra, null);
    }

    @Test
    void trafficOfTheThreeAlgorithms() {
        ClusterSpec h = spec("");
        StepModel.Traffic t = StepModel.traffic(h);
        double s = 100 * 1048576.0;
        assertEquals(1404, t.chunkPayload());
        assertEquals(1388, t.chunkData(), "mac takes 16 bytes of each chunk");
        // hierarchical, m = 4, D = 2: 2(m-1)/m S inside, S/m across
        assertEquals(1.5 * s + 0.25 * s, t.sentBytesPerRank(), 1);
        assertEquals(s, t.wanBytesPerDc(), 1);
        assertEquals(4, t.wanFlowsPerDc());
        assertEquals(2 * 1.75 * s / 1388 * (1 + 1.0 / 32), t.eventsPerRank(), 1);
        assertEquals(2 * s / 1388 * (1 + 1.0 / 32), t.gatewayPacketsPerGateway(), 1, "out and in through each DC's gateway");

        StepModel.Traffic r = StepModel.traffic(h.with(h.gradientBytes(), Algorithm.RING, h.modes()));
        assertEquals(2.0 * 7 / 8 * s, r.sentBytesPerRank(), 1);
        assertEquals(2.0 * 7 / 8 * s, r.wanBytesPerDc(), 1);
        assertEquals(1, r.wanFlowsPerDc(), "one ring edge leaves each DC");

        StepModel.Traffic p = StepModel.traffic(h.with(h.gradientBytes(), Algorithm.PARAMETER_SERVER, h.modes()));
        assertEquals(t.sentBytesPerRank(), p.sentBytesPerRank(), 1);
        assertEquals(2 * 0.05 + 0.2, p.phaseRttsMs(), 1e-9, "push, cross, pull");
        assertEquals(6 * 0.05 + 0.2, t.phaseRttsMs(), 1e-9, "3 + 3 ring steps inside, one exchange across");
        assertEquals(14 * 0.2, r.phaseRttsMs(), 1e-9, "every ring step waits for the WAN edge");
        assertEquals(0, StepModel.traffic(ClusterSpec.parse("datacenters: 1\nhosts_per_dc: 4\ngradient_mb: 4\n", null))
                .gatewayPacketsPerGateway(), "one DC: nothing crosses a gateway");
    }

    @Test
    void endpointBoundWithoutLimits() {
        StepModel.Prediction x = StepModel.predict(spec(""), cal(), "xdp");
        StepModel.Traffic t = x.traffic();
        assertEquals("endpoint", x.bound());
        assertEquals(t.eventsPerRank() * 2000e-9, x.stage("endpoint"), 1e-9);
        assertEquals(0, x.overheadSeconds(), "fixed time only where the file asks for it");
        assertEquals(0.2 + x.allreduceSeconds(), x.stepSeconds(), 1e-9);
        assertEquals(x.stage("endpoint") + (6 * 0.05 + 0.2) / 1e3, x.allreduceSeconds(), 1e-9);
    }

    @Test
    void slowGatewayBoundsAndMoreCoresHelp() {
        // relay: 10 us per packet, ~155k packets per gateway: 1.55 s on one core, more than the endpoints' 0.54 s.
        ClusterSpec c = spec("");
        StepModel.Prediction relay = StepModel.predict(c, cal(), "relay");
        assertEquals("gateway", relay.bound());
        assertEquals(relay.traffic().gatewayPacketsPerGateway() * 10e-6, relay.stage("gateway"), 1e-9);
        StepModel.Prediction four = StepModel.predict(spec("").with(c.gradientBytes(), c.algorithm(), c.modes()), cal(), "relay");
        ClusterSpec fourCores = ClusterSpec.parse("""
                datacenters: 2
                hosts_per_dc: 4
                gateway: {modes: [relay], cores: 4, core_efficiency: 0.5}
                gradient_mb: 100
                """, null);
        StepModel.Prediction r4 = StepModel.predict(fourCores, cal(), "relay");
        assertEquals(four.stage("gateway") / 2.5, r4.stage("gateway"), 1e-9, "1 + 3 x 0.5 cores");
        assertTrue(relay.gatewayUtilisation() > 0.9);
    }

    @Test
    void wanAndWindowBounds() {
        // 1 Gbit/s WAN: 100 MB out of each DC with 1388/1514 of the wire as gradient bytes.
        StepModel.Prediction w = StepModel.predict(spec("wan_gbps: 1\nwan_rtt_ms: 1\n"), cal(), "xdp");
        assertEquals("wan", w.bound());
        double wire = 100 * 1048576.0 * (1404 + 110) / 1388 * 8 / 1e9;
        assertEquals(wire, w.stage("wan"), 1e-9);
        // gateway cores to keep that WAN full: xdp needs 1 (1000 ns x ~155k packets = 0.155 s < 0.9 s)
        assertEquals(1, w.coresToFillWan());
        StepModel.Prediction relay = StepModel.predict(spec("wan_gbps: 1\nwan_rtt_ms: 1\n"), cal(), "relay");
        double need = relay.traffic().gatewayPacketsPerGateway() * 10e-6 / wire;
        assertEquals(Math.ceil(1 + (need - 1) / 0.9), relay.coresToFillWan());

        // 100 ms RTT: each of the 4 flows moves 25 MB at 512 x 1388 B per 100 ms.
        StepModel.Prediction far = StepModel.predict(spec("wan_rtt_ms: 100\nwindow_chunks: 512\n"), cal(), "xdp");
        assertEquals("window", far.bound());
        assertEquals(25 * 1048576.0 / (512 * 1388 / 0.1), far.stage("window"), 1e-9);
        StepModel.Prediction bigWindow = StepModel.predict(spec("wan_rtt_ms: 100\nwindow_chunks: 4096\n"), cal(), "xdp");
        assertEquals(far.stage("window") / 8, bigWindow.stage("window"), 1e-9);
    }

    @Test
    void overlapHidesCommunicationBehindBackward() {
        ClusterSpec c = spec("").withCompute(3000, false); // the file says 200 ms, and a key may appear only once
        StepModel.Prediction serial = StepModel.predict(c, cal(), "xdp");
        StepModel.Prediction overlapped = StepModel.predict(c.withCompute(3000, true), cal(), "xdp");
        assertTrue(overlapped.stepSeconds() < serial.stepSeconds());
        // backward (2 s) is longer than the all-reduce minus its last bucket: what is left is the last bucket.
        double tail = overlapped.stage("endpoint") * 4.0 / 100 + overlapped.latencySeconds();
        assertEquals(3.0 + tail, overlapped.stepSeconds(), 1e-9);
    }

    @Test
    void sharedCoresAddTheGatewayWork() {
        ClusterSpec tb = Calibration.testbed(4, 2, 64L << 20, Algorithm.HIERARCHICAL, "relay");
        StepModel.Prediction p = StepModel.predict(tb, cal(), "relay");
        StepModel.Traffic t = p.traffic();
        assertEquals((4 * t.eventsPerRank() * 2000e-9 + t.gatewayPacketsPerGateway() * 10e-6) / 2, p.stage("shared cores"), 1e-9);
        assertEquals(0, p.stage("gateway"));
        assertEquals(0.7, p.overheadSeconds());
    }

    @Test
    void unknownModeIsAClearError() {
        var e = assertThrows(IllegalArgumentException.class, () -> StepModel.predict(spec(""), cal(), "afxdp"));
        assertTrue(e.getMessage().contains("no gateway CPU per packet for mode afxdp"), e.getMessage());
        Calibration noTrain = new Calibration(cal().gatewayNs(), 500, 0, 1, "xdp", Double.NaN, List.of(), 4, 2, List.of(Path.of("f")), Calibration.TrainFit.NONE, List.of());
        var t = assertThrows(IllegalArgumentException.class, () -> noTrain.gatewayNsPerPacket("kernel-tunnel", 1400));
        assertTrue(t.getMessage().contains("train.json"), t.getMessage());
    }

    /** A training bench row as train.json has it (udp endpoints, the wide preset). */
    static com.google.gson.JsonObject trainRow(String config, String mode, String wan, double share, double stepMs,
                                               double computeMs, double gatewayNs) {
        com.google.gson.JsonObject r = new com.google.gson.JsonObject();
        r.addProperty("config", config);
        r.addProperty("endpoint", "udp");
        r.addProperty("mode", mode);
        r.addProperty("wan_rate", wan);
        if (share < 1) r.addProperty("gateway_cpu_share", share);
        r.addProperty("median_step_ms", stepMs);
        r.addProperty("compute_ms", computeMs);
        r.addProperty("gateway_ns_per_packet", gatewayNs);
        r.addProperty("preset", "wide");
        return r;
    }

    /**
     * The workers' core of the training testbeds, worked out by hand for the wide preset's gradient S (C = S / 1388
     * chunks, a = 1 + 1/32 for the ACKs): in the 2 x 2 testbed 12·C·a datagram events (4 ranks each sending 1.5·S and
     * receiving as much), 4·C·a frames inside the DCs over one bridge and 2·C·a between them over three, those 2·C·a
     * also across the WAN; on the edge testbed 4·C·a events and nothing else. A small set of measured cells made with
     * known costs (5 us per event, 1 us per bridge, 20 us per shaped frame) gives those costs back, and the edge cells
     * that were not fitted are predicted: the unbudgeted relay by the workers' core, the budgeted xdp by the gateway.
     */
    @Test
    void edgeTestbedFromMeasuredFigures() throws Exception {
        double c = io.xaforward.training.ModelConfig.preset("wide").gradientBytes() / 1388.0, a = 1 + 1.0 / 32;
        double e = 5000e-9, h = 1000e-9, p = 20_000e-9;
        double twoByTwo = 12 * c * a * e + (4 * c * a + 2 * c * a * 3) * h, edge = 4 * c * a * e;
        com.google.gson.JsonArray rows = new com.google.gson.JsonArray();
        // the WAN at 0.2 Gbit/s needs ~329 ms for the step's 7.5 MB, the core ~170 ms for those frames: it paces them
        rows.add(trainRow("comm-bound", "xdp", "200mbit", 1, 300 + (twoByTwo + 2 * c * a * p) * 1e3 + 0.3, 300, 5000));
        rows.add(trainRow("gateway-bound", "xdp", "4gbit", 1, 300 + twoByTwo * 1e3 + 0.3, 300, 5000));
        rows.add(trainRow("edge", "xdp", "none", 1, 110 + edge * 1e3 + 0.2, 110, 5000));
        rows.add(trainRow("edge", "relay", "none", 1, 333, 130, 8000));
        rows.add(trainRow("edge", "xdp", "none", 0.1, 444, 120, 3000));
        Calibration cal = cal().withTrain(Calibration.trainCells(rows));
        Calibration.TrainFit fit = cal.trainFit();
        assertEquals(3, fit.cells());
        assertEquals(1, fit.pacedCells());
        assertEquals(5000, fit.endpointNsPerEvent(), 1e-3);
        assertEquals(1000, fit.hopNsPerFrame(), 1e-3);
        assertEquals(20_000, fit.shapedWanNsPerFrame(), 1e-3);

        ClusterSpec bed = ClusterSpec.load(Path.of("..", "examples", "cluster", "testbed-train-edge.yaml"));
        Map<String, ModelReport.ValidationRow> byCell = new java.util.HashMap<>();
        for (ModelReport.ValidationRow r : ModelReport.validate(bed, cal)) byCell.put(r.what() + " " + r.mode(), r);
        assertEquals(3, byCell.size(), "the edge cells only");
        ModelReport.ValidationRow xdp = byCell.get("edge (no WAN) xdp");
        assertTrue(xdp.fitted());
        assertEquals(0.110 + edge + 0.2e-3, xdp.predictedSeconds(), 1e-9);
        ModelReport.ValidationRow relay = byCell.get("edge (no WAN) relay");
        assertTrue(!relay.fitted());
        assertEquals("endpoint", relay.bound(), "8 us x 2·C·a packets through the gateway is less than the ranks' work");
        assertEquals(0.130 + edge + 0.2e-3, relay.predictedSeconds(), 1e-9);
        ModelReport.ValidationRow budgeted = byCell.get("edge (no WAN, gateway CPU 10%) xdp");
        assertEquals("gateway", budgeted.bound());
        assertEquals(0.120 + 2 * c * a * 3000e-9 / 0.1 + 0.2e-3, budgeted.predictedSeconds(), 1e-9);
        assertEquals((0.120 + 2 * c * a * 3000e-9 / 0.1 + 0.2e-3 - 0.444) / 0.444, budgeted.error(), 1e-9);

        // The 2 x 2 file's workers' core adds the bridges, and the shaper's frames where the WAN sets the pace.
        ClusterSpec square = ClusterSpec.load(Path.of("..", "examples", "cluster", "testbed-train.yaml"));
        StepModel.Prediction slow = StepModel.predict(square.withWan(0.2, 300, List.of("xdp")), cal, "xdp");
        StepModel.Prediction fast = StepModel.predict(square.withWan(4, 300, List.of("xdp")), cal, "xdp");
        assertEquals(twoByTwo + 2 * c * a * p, slow.stage("endpoint"), 1e-9);
        assertEquals(twoByTwo, fast.stage("endpoint"), 1e-9);
        assertEquals(4 * c * a, slow.traffic().lanFrames(), 1e-6);
        assertEquals(2 * c * a, slow.traffic().wanFrames(), 1e-6);
    }

    /** gateway.cpu_share: a gateway with a quarter of its core takes four times as long per packet; bad shares refused. */
    @Test
    void aGatewayCpuShareDividesTheGatewaysRate() {
        StepModel.Prediction whole = StepModel.predict(spec(""), cal(), "relay");
        StepModel.Prediction quarter = StepModel.predict(spec("").withGatewayShare(0.25), cal(), "relay");
        assertEquals(4 * whole.stage("gateway"), quarter.stage("gateway"), 1e-9);
        assertEquals(4 * whole.gatewayNsPerPacket(), quarter.gatewayNsPerPacket(), 1e-9);
        StepModel.Prediction fromFile = StepModel.predict(ClusterSpec.parse("""
                datacenters: 2
                hosts_per_dc: 4
                mtu: 1500
                gateway: {modes: [xdp, relay], cores: 1, cpu_share: 0.25, cost_scale: {relay: 2}}
                gradient_mb: 100
                compute_ms: 200
                """, null), cal(), "relay");
        assertEquals(8 * whole.stage("gateway"), fromFile.stage("gateway"), 1e-9, "the share applies on top of the cost scale");
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> ClusterSpec.parse("datacenters: 2\nhosts_per_dc: 1\ngradient_mb: 1\ngateway: {cpu_share: 0.01}\n", null))
                .getMessage().contains("cpu_share"));
    }

    /**
     * Training cells with a gateway budget: grouped apart from the same configuration without one, left out of the
     * endpoint fit and of the unbudgeted per-packet costs, predicted with the budget applied and the per-packet cost
     * measured under that budget.
     */
    @Test
    void budgetedTrainingCellsArePredictedNotFitted() {
        com.google.gson.JsonArray rows = new com.google.gson.JsonArray();
        for (double share : new double[] {1.0, 0.1}) {
            for (String mode : List.of("xdp", "relay")) {
                com.google.gson.JsonObject r = new com.google.gson.JsonObject();
                r.addProperty("config", "gateway-bound");
                r.addProperty("endpoint", "udp");
                r.addProperty("mode", mode);
                r.addProperty("wan_rate", "4gbit");
                if (share < 1) r.addProperty("gateway_cpu_share", share);
                r.addProperty("median_step_ms", share < 1 ? 2000 : 800);
                r.addProperty("compute_ms", 200);
                r.addProperty("gateway_ns_per_packet", (mode.equals("xdp") ? 3000 : 14000) * (share < 1 ? 3 : 1));
                r.addProperty("preset", "wide");
                rows.add(r);
            }
        }
        List<Calibration.TrainCell> cells = Calibration.trainCells(rows);
        assertEquals(4, cells.size());
        Calibration c = cal().withTrain(cells);
        assertEquals(3000, c.trainGatewayNsPerPacket("xdp"), 1e-9, "the budgeted run's per-packet figure is not used");
        assertEquals(14000, c.trainGatewayNsPerPacket("relay"), 1e-9);
        Calibration unbudgetedOnly = cal().withTrain(cells.stream().filter(t -> t.gatewayCpuShare() >= 1).toList());
        assertEquals(unbudgetedOnly.trainFit(), c.trainFit(), "the fit ignores budgeted cells");
        Calibration.TrainCell budgeted = cells.stream().filter(t -> t.gatewayCpuShare() < 1 && t.mode().equals("relay")).findFirst().orElseThrow();
        assertEquals("gateway-bound (4 Gbit/s WAN, gateway CPU 10%)", budgeted.label());
        ClusterSpec bed = Calibration.trainTestbed(budgeted);
        assertEquals(10.0, bed.gatewayCostScale().get("relay"), 1e-9);

        assertEquals(9000, c.trainGatewayNsPerPacket("xdp", 0.1), 1e-9, "measured under the same budget");
        assertEquals(3000, c.trainGatewayNsPerPacket("xdp", 0.25), 1e-9, "no cell with that budget: the unbudgeted figure");
        assertEquals(30.0, bed.withGatewayShare(1.0, Map.of("relay", 3.0)).gatewayCostScale().get("relay"), 1e-9);
        // The validation predicts the budgeted relay cell with 42 us per packet under 10%, the unbudgeted with 14 us.
        ClusterSpec testbed = ClusterSpec.parse("""
                testbed: train
                datacenters: 2
                hosts_per_dc: 2
                gradient: wide
                compute_ms: 200
                gateway: {modes: [relay], placement: shared, cores: 1}
                endpoint: {shared_cores: 1, calibration: train}
                emulated_network: {lan_hops: 1, wan_hops: 3, wan_shaper: true}
                """, null);
        Map<String, ModelReport.ValidationRow> relayRows = new java.util.HashMap<>();
        for (ModelReport.ValidationRow r : ModelReport.validate(testbed, c)) if (r.mode().equals("relay")) relayRows.put(r.what(), r);
        ModelReport.ValidationRow free = relayRows.get("gateway-bound (4 Gbit/s WAN)"), held = relayRows.get(budgeted.label());
        double packets = StepModel.traffic(testbed).gatewayPacketsPerGateway();
        assertEquals(packets * 42_000e-9 / 0.1, StepModel.predict(testbed.withWan(4, 200, List.of("relay"))
                .withGatewayShare(0.1, Map.of("relay", 3.0)), c, "relay").stage("gateway"), 1e-9);
        assertTrue(held.predictedSeconds() - 0.2 >= packets * 42_000e-9 / 0.1 - 1e-9, "gateway-bound at 42 us x 10: " + held);
        assertTrue(free.predictedSeconds() < held.predictedSeconds());
    }
}
