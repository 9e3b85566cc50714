package io.xaforward.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * {@code xaf bench forward --quick}: every mode, at a low paced rate, delivers every packet it was given, in order,
 * and every reported figure is positive; the report files are written.
 */
class ForwardBenchQuickTest {
    @Test
    @Timeout(120)
    void quickBenchDeliversEveryPacketInEveryMode() throws Exception {
        System.setProperty("java.awt.headless", "true");
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        ForwardBench.Options o = ForwardBench.Options.quick(List.of(ForwardBench.Mode.values()));
        ForwardBench.Result r = new ForwardBench(o, new PrintStream(log, true, StandardCharsets.UTF_8)).run("test");
        String progress = log.toString(StandardCharsets.UTF_8);
        assertFalse(r.samples().isEmpty(), progress);
        for (ForwardBench.Mode m : ForwardBench.Mode.values())
            assertTrue(r.samples().stream().anyMatch(s -> s.mode() == m), m + " has no samples\n" + progress);
        for (ForwardBench.Sample s : r.samples()) {
            String what = s.mode() + " " + s.flow() + " " + s.payload() + " B: ";
            assertTrue(s.sent() > 1000, what + "sent " + s.sent());
            assertEquals(s.sent(), s.delivered(), what + "every paced packet must arrive\n" + progress);
            assertEquals(0, s.gaps(), what + "gaps");
            assertEquals(0, s.reordered(), what + "reordered");
            assertTrue(s.pps() > 0 && s.gbps() > 0, what + "rates");
            if (s.mode() != ForwardBench.Mode.REFERENCE) assertTrue(s.gatewayCpuNs() > 0, what + "gateway CPU " + s.gatewayCpuNs());
        }
        assertFalse(r.rtts().isEmpty());
        for (ForwardBench.RttSample t : r.rtts()) assertTrue(t.rtt().medianUs() > 0 && t.rtt().p99Us() >= t.rtt().medianUs(), t.toString());
        Path dir = Files.createTempDirectory("xaf-bench-quick");
        BenchReport.write(r, dir);
        assertTrue(Files.readString(dir.resolve("forward.md")).contains("| xdp |"));
        assertTrue(Files.size(dir.resolve("forward-pps.png")) > 1000);
        assertTrue(Files.readString(dir.resolve("forward.json")).contains("\"delivered\""));
    }
}
