package io.xaforward.bench.train;

import io.xaforward.bench.train.TrainBench.Cell;
import io.xaforward.bench.train.TrainBench.Config;
import io.xaforward.bench.train.TrainBench.Run;
import io.xaforward.cluster.Endpoint;
import io.xaforward.cluster.SyncMode;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.TrainResult;
import io.xaforward.collective.Algorithm;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.training.Evaluation;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The plumbing of {@code xaf bench train --sync ddp,diloco}: the words of {@code --sync}, the cells a run round
 * takes, and the DiLoCo table's figures (training time to DDP's final validation loss, the loss gap in DDP's
 * standard errors, WAN bytes per step), the targets marked from them, and the plot written.
 */
class TrainBenchDilocoTest {
    @TempDir
    Path dir;

    private static final DilocoGlooPeer.Settings SETTINGS = new DilocoGlooPeer.Settings(50, 0.7, 0.9, "fp32", 50);

    @Test
    void syncWordsAreParsedInOrderAndBadListsRefused() {
        assertEquals(List.of(SyncMode.DDP, SyncMode.DILOCO), TrainBench.parseSyncs(List.of("ddp", " diloco")));
        assertEquals(List.of(SyncMode.DILOCO), TrainBench.parseSyncs(List.of("local-sgd")), "torchft's other name");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> TrainBench.parseSyncs(List.of("ddp", "fsdp")))
                .getMessage().contains("unknown sync mode 'fsdp'"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> TrainBench.parseSyncs(List.of("ddp", "ddp")))
                .getMessage().contains("twice"));
        assertThrows(IllegalArgumentException.class, () -> TrainBench.parseSyncs(List.of()));
    }

    @Test
    void everySyncOfXafIsACellAndTheGlooPeersFollow() {
        Config c = new Config("comm-bound", Path.of("x.yaml"), Path.of("y.yaml"), "200mbit", "wide", 100, 8,
                List.of(Endpoint.UDP), List.of(GatewayMode.XDP, GatewayMode.KERNEL), "test");
        TrainBench bench = new TrainBench(List.of(c), 1, dir, dir, new PrintStream(PrintStream.nullOutputStream()))
                .withPeers(List.of("xaf", "ddp-gloo", "diloco-gloo")).withSync(List.of(SyncMode.DDP, SyncMode.DILOCO), SETTINGS);
        List<String> labels = bench.cells(c).stream().map(Cell::label).toList();
        assertEquals(List.of("udp / xdp", "udp / kernel", "udp diloco / xdp", "udp diloco / kernel", "ddp-gloo / kernel",
                "ddp-gloo / kernel-tunnel", "diloco-gloo / kernel", "diloco-gloo / kernel-tunnel"), labels);
        assertTrue(bench.dilocoRuns());
        TrainBench ddpOnly = new TrainBench(List.of(c), 1, dir, dir, new PrintStream(PrintStream.nullOutputStream()))
                .withPeers(List.of("xaf", "ddp-gloo"));
        assertTrue(!ddpOnly.dilocoRuns(), "without DiLoCo the bench evaluates nothing and adds no DiLoCo table");
    }

    private static TrainJobSpec spec() {
        return TrainJobSpec.builder().topology(Path.of("topologies/two-dc-wan.yaml")).prefix("t1").rateLimit("200mbit")
                .gatewayMode(GatewayMode.XDP).algorithm(Algorithm.HIERARCHICAL).preset("wide").steps(100)
                .globalBatch(8).seed(4242).learningRate(1e-3).warmupSteps(10).evalEvery(50).checksumEvery(0)
                .data(Path.of("data")).jobId(1).jobToken(7).threadsPerWorker(1).bucketBytes(4 << 20)
                .workDir(Path.of("/tmp/work")).build();
    }

    /** 100 steps of {@code stepMs} each, evaluated after steps 50 and 100, with the WAN's bytes of steps 2 to 100. */
    private static TrainResult result(double stepMs, double val50, double val100, long wanBytes) {
        List<TrainResult.Step> steps = new ArrayList<>();
        for (int s = 1; s <= 100; s++) {
            Evaluation e = s == 50 ? new Evaluation(val50, 0.01, 3125, 3125) : s == 100 ? new Evaluation(val100, 0.01, 3125, 3125) : null;
            steps.add(new TrainResult.Step(s, 3.0, e, stepMs, stepMs / 2, stepMs / 2, 1000));
        }
        return new TrainResult(spec(), 4, steps, 100, Map.of("wan_bytes_to_dc", wanBytes / 2, "wan_bytes_from_dc", wanBytes / 2,
                "window_ns", 1_000_000_000L), 0xabc, 1_900_000);
    }

    private static Map<Cell, List<Run>> byCell() {
        Map<Cell, List<Run>> m = new LinkedHashMap<>();
        Cell ddp = new Cell(Endpoint.UDP, GatewayMode.XDP), diloco = new Cell(Endpoint.UDP, GatewayMode.XDP, SyncMode.DILOCO);
        Cell gloo = Cell.dilocoGloo(GatewayMode.KERNEL_TUNNEL);
        // DDP: 800 ms a step, 15 MB through the WAN each step, 2.50 at the end.
        m.put(ddp, List.of(new Run("comm-bound", ddp, 1, "two-dc-wan", result(800, 2.70, 2.50, 99L * 15_000_000))));
        // DiLoCo: 200 ms a step, two outer syncs of 15 MB in 100 steps, DDP's 2.50 reached at step 50 already.
        m.put(diloco, List.of(new Run("comm-bound", diloco, 1, "two-dc-wan", result(200, 2.49, 2.505, 2 * 15_000_000L))));
        // DiLoCo over Gloo: 300 ms a step, never below 2.50.
        m.put(gloo, List.of(new Run("comm-bound", gloo, 1, "two-dc-wan", result(300, 2.6, 2.52, 2 * 16_000_000L))));
        return m;
    }

    @Test
    void theTableMeasuresDilocoAgainstTheDdpRun() {
        List<DilocoReport.Row> rows = DilocoReport.rows(byCell());
        DilocoReport.Row ddp = rows.get(0), diloco = rows.get(1), gloo = rows.get(2);
        assertEquals(80.0, ddp.secondsToDdpLoss(), 1e-9, "DDP reaches its own final loss at its end: 100 x 800 ms");
        assertEquals(15_000_000, ddp.bytesPerStep(), 1e-6);
        assertEquals(10.0, diloco.secondsToDdpLoss(), 1e-9, "the first evaluation at or below 2.50: step 50, 50 x 200 ms");
        assertEquals(8.0, diloco.speedUp(), 1e-9);
        assertEquals(0.5, diloco.gapInDdpErrors(), 1e-9, "2.505 against 2.50 with DDP's standard error 0.01");
        assertEquals(15_000_000 * 99.0 / 30_000_000, diloco.fewerBytes(), 1e-9);
        assertTrue(Double.isInfinite(gloo.secondsToDdpLoss()), "never reached");
        assertEquals(2.0, gloo.gapInDdpErrors(), 1e-9);
    }

    @Test
    void theSectionMarksTheTargetsAndWritesThePlot() throws Exception {
        Config c = new Config("comm-bound", Path.of("x.yaml"), Path.of("y.yaml"), "200mbit", "wide", 100, 8,
                List.of(Endpoint.UDP), List.of(GatewayMode.XDP), "test");
        String md = DilocoReport.section(c, byCell(), SETTINGS, dir);
        assertTrue(md.contains("| xaf udp | ddp | xdp | 800 | 80.0 | 2.5000 ± 0.0100 | +0.0 | 80.0 | 1.00x shorter | 15,000,000 | 1.00x |"), md);
        assertTrue(md.contains("| diloco-gloo | diloco (H 50, outer lr 0.7, momentum 0.9, fp32) | kernel-tunnel | 300 |"), md);
        assertTrue(md.contains("| not reached | - |"), md);
        // 49.5x fewer bytes: missed; gap 0.5 SE: met; 8x shorter: met; ahead of Gloo (200 against 300 ms): met.
        assertTrue(md.contains("- >= 100x fewer bytes through the gateway per step: **missed** (49.5x)."), md);
        assertTrue(md.contains("within 2 standard errors of DDP's: **met** (gap +0.5 SE)"), md);
        assertTrue(md.contains("time to DDP's final validation loss >= 2x shorter: **met** (8.00x)"), md);
        assertTrue(md.contains("DiLoCo over XAF ahead of DiLoCo over Gloo at the same H: **met** (200 against 300 ms"), md);
        Path png = dir.resolve("train-comm-bound-diloco-loss.png");
        assertTrue(Files.size(png) > 1000, "the plot of validation loss against training time");
    }
}
