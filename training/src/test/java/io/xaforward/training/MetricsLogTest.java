package io.xaforward.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** JSON lines stay valid JSON (NaN becomes null), one line per step; a resumed run appends. */
class MetricsLogTest {

    @Test
    void linesParseAndCountSteps(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("metrics.jsonl");
        try (MetricsLog log = new MetricsLog(file, false)) {
            for (long s = 1; s <= 3; s++) {
                Map<String, Object> r = MetricsLog.record(s, 5.0 / s, s == 3 ? 1.5 : Double.NaN, 1e-3, 1000, 2.5, 7.5);
                r.put("note", "quote \" and tab \t");
                log.write(r);
            }
        }
        try (MetricsLog log = new MetricsLog(file, true)) {
            log.write(MetricsLog.record(4, Double.POSITIVE_INFINITY, 1.0, 1e-3, 1000, 2.5, 7.5));
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
    }
}
