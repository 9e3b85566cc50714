package io.xaforward.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import java.util.List;

import org.junit.jupiter.api.Test;

/** The forwarding report's JSON is valid (escaped strings, no NaN literal) and uses snake_case keys. */
class BenchJsonTest {

    @Test
    void forwardJsonIsValidWithQuotesAndNaN() {
        ForwardBench.Mode mode = ForwardBench.Mode.values()[0];
        ForwardBench.Sample sample = new ForwardBench.Sample(mode, ForwardBench.Sender.values()[0], "a\"b", 64, 120, 1,
                100, 99, 1, 0, 1.5, 1000, 2000);
        ForwardBench.RttSample rtt = new ForwardBench.RttSample(mode, "v4->v6", 1, new RttProbe.Rtt(Double.NaN, 12.5, 0));
        ForwardBench.Options options = new ForwardBench.Options(true, 1, List.of(64), List.of(mode), 1000, 0);
        String json = BenchReport.json(new ForwardBench.Result(options, List.of(sample), List.of(rtt), "2 CPUs\nlinux",
                "xaf bench forward --quick"));
        JsonObject o = JsonParser.parseString(json).getAsJsonObject();
        assertEquals("2 CPUs\nlinux", o.get("machine").getAsString());
        assertEquals(1000, o.get("duration_ms").getAsLong());
        JsonObject s = o.getAsJsonArray("samples").get(0).getAsJsonObject();
        assertEquals("a\"b", s.get("flow").getAsString());
        assertEquals(120, s.get("frame_bytes").getAsInt());
        JsonObject r = o.getAsJsonArray("rtt").get(0).getAsJsonObject();
        assertTrue(r.get("median_us").isJsonNull(), "NaN is written as null");
        assertEquals(12.5, r.get("p99_us").getAsDouble());
        assertTrue(!json.contains("NaN"), json);
    }
}
