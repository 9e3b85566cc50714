package io.xaforward.bench.compute;

import io.xaforward.bench.compute.ComputeBench.Case;
import io.xaforward.bench.compute.ComputeBench.Row;
import io.xaforward.common.Json;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The compute bench's quick mode end to end: both trainers measured, the same work done, a report written. */
class ComputeBenchTest {

    @Test
    void quickModeReportsEveryTrainerWithSaneFiguresAndAgreeingLosses(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        ComputeBench.Result r = new ComputeBench(ComputeBench.Options.quick(), dir.resolve("work"), new PrintStream(log))
                .run("test");
        Case tiny = new Case("tiny", 2);
        for (String trainer : ComputeBench.TRAINERS) {
            Row row = r.row(tiny, 1, trainer);
            assertTrue(row != null, "no row for " + trainer + ": " + r.rows());
            // a tiny step takes milliseconds; zero, negative or a minute would mean a broken measurement
            assertTrue(row.medianMs() > 0 && row.medianMs() < 60_000, trainer + ": " + row);
            assertTrue(row.minMs() <= row.medianMs() && row.medianMs() <= row.maxMs(), trainer + ": " + row);
            assertTrue(Double.isFinite(row.firstLoss()) && row.firstLoss() > 0, trainer + ": " + row);
        }
        Row java = r.row(tiny, 1, ComputeBench.JAVA);
        Row torch = r.row(tiny, 1, ComputeBench.TORCH);
        assertTrue(java.forwardBackwardMs() > 0 && java.optimizerMs() > 0 && java.forwardBackwardMs() < java.medianMs() * 2, java.toString());
        // same initial weights and windows: the first step's loss is the same computation in both (ln 256 = 5.545)
        assertEquals(torch.firstLoss(), java.firstLoss(), 1e-4 * torch.firstLoss(), "java and torch compute different steps");
        assertTrue(r.torchBlas().stream().anyMatch(l -> l.contains("blas")), r.torchBlas().toString());
        assertEquals(ComputeBench.TRAINERS.size(), r.samples().size());
        for (var s : r.samples()) assertEquals(3, s.stepMillis().length);

        Path out = dir.resolve("out");
        ComputeReport.write(r, out);
        String md = Files.readString(out.resolve("compute.md"));
        assertTrue(md.contains("| tiny | 2 | 1 | "), md);
        assertTrue(Files.size(out.resolve("compute.png")) > 1000);
        Map<?, ?> json = (Map<?, ?>) Json.readPlain(Files.readString(out.resolve("compute.json")));
        assertEquals(ComputeBench.TRAINERS.size(), ((List<?>) json.get("rows")).size());
    }

    @Test
    void badCasesAreRefusedWithTheReason() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Case.parse("wide")).getMessage().contains("PRESET:BATCH"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Case.parse("wide:x")).getMessage().contains("not a number"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Case.parse("huge:2")).getMessage().contains("unknown model preset"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Case.parse("wide:0")).getMessage().contains("batch must be >= 1"));
        assertThrows(IllegalArgumentException.class, () -> new ComputeBench.Options(List.of(new Case("tiny", 2)), List.of(1),
                List.of("jax"), 1, 0, 1));
    }
}
