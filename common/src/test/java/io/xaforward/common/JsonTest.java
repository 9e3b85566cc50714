package io.xaforward.common;

import org.junit.jupiter.api.Test;

import java.math.BigInteger;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/** The one Json: how it writes (one line, indented, NaN as null) and the three ways it reads. */
class JsonTest {

    @Test
    void writesOneLineOrIndentedWithNansAsNullAndNullsKept() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("loss", Double.NaN);
        m.put("lr", 0.5);
        m.put("note", "a<b");   // no HTML escaping: the text stays as written
        m.put("none", null);
        assertEquals("{\"loss\":null,\"lr\":0.5,\"note\":\"a<b\",\"none\":null}", Json.line(m));
        assertEquals("{\n  \"loss\": null,\n  \"lr\": 0.5,\n  \"note\": \"a<b\",\n  \"none\": null\n}\n", Json.pretty(m));
    }

    @Test
    void readsPlainValuesTypedByTheirText() {
        // iproute2's -j output and the testbed's state files are walked as plain maps and lists; a number keeps its
        // kind (Gson's Object reading would make every number a Double).
        Object o = Json.readPlain("{\"ifindex\": 3, \"rate\": 1.5, \"big\": 99999999999, \"huge\": 123456789012345678901,"
                + " \"up\": true, \"name\": \"gw-a\", \"none\": null, \"list\": [1, 2]}");
        Map<?, ?> m = assertInstanceOf(Map.class, o);
        assertEquals(3, m.get("ifindex"));
        assertEquals(1.5, m.get("rate"));
        assertEquals(99999999999L, m.get("big"));
        assertEquals(new BigInteger("123456789012345678901"), m.get("huge"));
        assertEquals(true, m.get("up"));
        assertEquals("gw-a", m.get("name"));
        assertTrue(m.containsKey("none") && m.get("none") == null);
        assertEquals(List.of(1, 2), m.get("list"));
        assertNull(Json.readPlain(""));
    }

    @Test
    void readsAnArrayOfObjectsAndNothingAsEmpty() {
        List<Map<String, Object>> qdiscs = Json.readObjects("[{\"kind\": \"tbf\", \"handle\": \"1:\"}, {\"kind\": \"fq\"}]");
        assertEquals(2, qdiscs.size());
        assertEquals("tbf", qdiscs.getFirst().get("kind"));
        assertEquals(List.of(), Json.readObjects(""));
    }

    @Test
    void whatPrettyWritesReadsBackAsTheSameValues() {
        Map<String, Object> state = new LinkedHashMap<>();
        state.put("prefix", "xt");
        state.put("namespaces", List.of("xt-a1", "xt-gw"));
        state.put("xdp", List.of(Map.of("ns", "xt-gw", "dev", "gw-a", "ifindex", 7)));
        assertEquals(state, Json.readPlain(Json.pretty(state)));
    }

    @Test
    void parsesIntoRecordsWithNullAsNan() {
        record Point(String name, double value) {}
        assertEquals(new Point("a", 2.5), Json.parse("{\"name\":\"a\",\"value\":2.5}", Point.class));
        assertTrue(Double.isNaN(Json.parse(Json.line(new Point("b", Double.NaN)), Point.class).value()));
        assertEquals(3, Json.parse("{\"x\": 3}").getAsJsonObject().get("x").getAsInt());
    }
}
