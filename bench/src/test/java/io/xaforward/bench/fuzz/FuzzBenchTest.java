package io.xaforward.bench.fuzz;

import io.xaforward.testkit.fuzz.DecisionFuzzer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

/** The bench's report path on a short run (root, as in CI): a clean run writes its numbers into fuzz.md. */
class FuzzBenchTest {
    @Test
    void aShortRunWritesACleanReport(@TempDir Path out) throws Exception {
        DecisionFuzzer.Report r = FuzzBench.run(5_000, 11, out, "xaf bench fuzz --frames 5000 --seed 11",
                new PrintStream(new ByteArrayOutputStream()));
        assertTrue(r.clean(), () -> String.join("\n", r.firstDisagreements()));
        String md = Files.readString(out.resolve("fuzz.md"));
        assertTrue(md.contains("| 5,000 | 11 |"), md);
        assertTrue(md.contains("| yes |"), md);
        assertTrue(md.contains(String.format(java.util.Locale.ROOT, "| forwarded | %,d | %,d |",
                r.referenceOutcomes()[io.xaforward.dataplane.Counter.FORWARDED.ordinal()],
                r.xdpCounterDeltas()[io.xaforward.dataplane.Counter.FORWARDED.ordinal()])), md);
    }
}
