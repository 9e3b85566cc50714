package io.xaforward.training;

import io.xaforward.common.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** JSON lines stay valid JSON (NaN becomes null), one line per step with time and tokens; a resumed run appends. */
class MetricsLogTest {

    @Test
    void linesParseAndCountSteps(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("metrics.jsonl");
        try (MetricsLog log = new MetricsLog(file, false)) {
            for (long s = 1; s <= 3; s++) {
                Map<String, Object> r = MetricsLog.record(s, s * 512, 5.0 / s, s == 3 ? 1.5 : Double.NaN, 1e-3, 1000, 2.5, 7.5);
                r.put("note", "quote \" and tab \t");
                log.write(r);
            }
        }
        try (MetricsLog log = new MetricsLog(file, true)) {
            log.write(MetricsLog.record(4, 4 * 512, Double.POSITIVE_INFINITY, 1.0, 1e-3, 1000, 2.5, 7.5));
        }
        List<String> lines = Files.readAllLines(file);
        assertEquals(4, lines.size());
        for (int i = 0; i < lines.size(); i++) {
            JsonObject o = Json.parse(lines.get(i)).getAsJsonObject();
            assertEquals(i + 1, o.get("step").getAsLong());
            assertTrue(o.has("val_loss") && o.has("lr") && o.has("tokens_per_s") && o.has("comm_ms"), lines.get(i));
        }
        assertTrue(Json.parse(lines.get(0)).getAsJsonObject().get("val_loss").isJsonNull());
        assertEquals(1.5, Json.parse(lines.get(2)).getAsJsonObject().get("val_loss").getAsDouble());
        assertEquals("quote \" and tab \t", Json.parse(lines.get(0)).getAsJsonObject().get("note").getAsString());
        assertTrue(Json.parse(lines.get(3)).getAsJsonObject().get("loss").isJsonNull(), "infinity is not JSON");
        JsonObject third = Json.parse(lines.get(2)).getAsJsonObject();
        assertEquals(3 * 512, third.get("tokens").getAsLong());
        Instant stamped = Instant.parse(third.get("time").getAsString());
        assertTrue(Duration.between(stamped, Instant.now()).abs().toMinutes() < 5, "time stamp is now: " + stamped);
    }

    @Test
    void floatsAreWrittenWithSixSignificantDigits(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("metrics.jsonl");
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("step_ms", 1907.1575000000003);
        r.put("lr", 2.9999999999999997E-4);
        r.put("loss", 10.82478141784668f);
        r.put("wire_bytes", 123456789012L);
        try (MetricsLog log = new MetricsLog(file, false)) {
            log.write(r);
        }
        String line = Files.readString(file).strip();
        assertEquals("{\"step_ms\":1907.16,\"lr\":3.0E-4,\"loss\":10.8248,\"wire_bytes\":123456789012}", line);
        assertEquals(-0.00123457, MetricsLog.round(-0.001234567), 0);
        assertTrue(Double.isNaN(MetricsLog.round(Double.NaN)));
    }
}
