package io.xaforward.dataplane;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.StructLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Compiles a C probe against xaf_shared.h with gcc and checks that every offset and size of struct xaf_route and
 * struct xaf_port and struct xaf_counters, and every enum xaf_counter value, agree with the Java mirrors.
 */
class SharedLayoutsTest {
    static final Path HEADER_DIR = Path.of("src/main/bpf").toAbsolutePath();
    static final List<String> ROUTE_FIELDS = List.of("tx_slot", "action", "egress_form", "src_port_span", "ingress_mask",
            "job_id", "job_token", "reserved0", "src_id", "src_mac", "dst_mac", "src_ip", "dst_ip", "src_port",
            "dst_port", "reserved1");
    static final List<String> PORT_FIELDS = List.of("slot", "form", "max_hop", "reserved");
    static final List<String> COUNTERS_FIELDS = List.of("packets", "bytes", "port_rx_packets", "port_rx_bytes", "port_tx_packets", "port_tx_bytes", "port_tx_too_big");
    static final List<String> C_COUNTERS = List.of("XAF_C_RX_XAF", "XAF_C_PASS_NON_XAF", "XAF_C_FORWARDED",
            "XAF_C_TO_LOCAL", "XAF_C_DROP_MALFORMED", "XAF_C_DROP_NO_ROUTE", "XAF_C_DROP_HOP_LIMIT",
            "XAF_C_DROP_BAD_TOKEN", "XAF_C_DROP_INGRESS", "XAF_C_DROP_REDIRECT",
            "XAF_C_DROP_BAD_FORM", "XAF_C_DROP_TOO_BIG", "XAF_C_DROP_HAIRPIN");

    static Map<String, Long> probe = new HashMap<>();

    @BeforeAll
    static void compileAndRunProbe(@TempDir Path dir) throws IOException {
        StringBuilder c = new StringBuilder("#include <stdio.h>\n#include <stddef.h>\n#include \"xaf_shared.h\"\n");
        c.append("#define F(s, f) printf(#s \".\" #f \".off %zu\\n\" #s \".\" #f \".size %zu\\n\", offsetof(struct s, f), sizeof(((struct s *)0)->f));\n");
        c.append("int main(void) {\n");
        c.append("printf(\"xaf_route.sizeof %zu\\nxaf_port.sizeof %zu\\nxaf_counters.sizeof %zu\\n\", sizeof(struct xaf_route), sizeof(struct xaf_port), sizeof(struct xaf_counters));\n");
        ROUTE_FIELDS.forEach(f -> c.append("F(xaf_route, ").append(f).append(")\n"));
        PORT_FIELDS.forEach(f -> c.append("F(xaf_port, ").append(f).append(")\n"));
        COUNTERS_FIELDS.forEach(f -> c.append("F(xaf_counters, ").append(f).append(")\n"));
        C_COUNTERS.forEach(e -> c.append("printf(\"").append(e).append(" %d\\n\", (int)").append(e).append(");\n"));
        c.append("printf(\"XAF_C__MAX %d\\nXAF_COUNTERS %d\\nXAF_MAX_PORTS %d\\nXAF_MAX_ROUTES %d\\nXAF_MAX_QUEUES %d\\n\", "
                + "(int)XAF_C__MAX, XAF_COUNTERS, XAF_MAX_PORTS, XAF_MAX_ROUTES, XAF_MAX_QUEUES);\n");
        c.append("printf(\"XAF_FORM_IPV4 %d\\nXAF_FORM_IPV6 %d\\nXAF_FORM_ID %d\\nXAF_ACT_FORWARD %d\\nXAF_ACT_LOCAL %d\\n\", "
                + "XAF_FORM_IPV4, XAF_FORM_IPV6, XAF_FORM_ID, XAF_ACT_FORWARD, XAF_ACT_LOCAL);\n");
        c.append("return 0; }\n");
        Path src = dir.resolve("probe.c");
        Path exe = dir.resolve("probe");
        Files.writeString(src, c);
        Sh.run("gcc", "-Wall", "-Werror", "-I" + HEADER_DIR, "-o", exe.toString(), src.toString());
        for (String line : Sh.run(exe.toString()).split("\n")) {
            String[] kv = line.trim().split(" ");
            probe.put(kv[0], Long.parseLong(kv[1]));
        }
    }

    static long c(String key) {
        Long v = probe.get(key);
        assertNotNull(v, "probe did not print " + key);
        return v;
    }

    static void compareStruct(String cName, StructLayout layout, List<String> fields) {
        assertEquals(c(cName + ".sizeof"), layout.byteSize(), cName + " size");
        for (String f : fields) {
            assertEquals(c(cName + "." + f + ".off"), SharedLayouts.offset(layout, f), cName + "." + f + " offset");
            assertEquals(c(cName + "." + f + ".size"), SharedLayouts.size(layout, f), cName + "." + f + " size");
        }
    }

    @Test
    void routeLayoutMatchesC() { compareStruct("xaf_route", SharedLayouts.ROUTE, ROUTE_FIELDS); }

    @Test
    void portLayoutMatchesC() { compareStruct("xaf_port", SharedLayouts.PORT, PORT_FIELDS); }

    @Test
    void countersLayoutMatchesC() { compareStruct("xaf_counters", SharedLayouts.COUNTERS_VALUE, COUNTERS_FIELDS); }

    @Test
    void counterOrdinalsMatchCEnum() {
        assertEquals(C_COUNTERS.size(), Counter.values().length, "one Java counter per C counter");
        assertEquals(c("XAF_C__MAX"), Counter.values().length, "XAF_C__MAX");
        for (Counter k : Counter.values()) {
            assertEquals(c("XAF_C_" + k.name()), k.code(), k + " code");
        }
    }

    @Test
    void constantsMatchC() {
        assertEquals(c("XAF_COUNTERS"), SharedLayouts.COUNTERS);
        assertEquals(c("XAF_MAX_PORTS"), SharedLayouts.MAX_PORTS);
        assertEquals(c("XAF_MAX_ROUTES"), SharedLayouts.MAX_ROUTES);
        assertEquals(c("XAF_MAX_QUEUES"), SharedLayouts.MAX_QUEUES);
        assertEquals(c("XAF_FORM_IPV4"), SharedLayouts.FORM_IPV4);
        assertEquals(c("XAF_FORM_IPV6"), SharedLayouts.FORM_IPV6);
        assertEquals(c("XAF_FORM_ID"), SharedLayouts.FORM_ID);
        assertEquals(c("XAF_ACT_FORWARD"), SharedLayouts.ACTION_FORWARD);
        assertEquals(c("XAF_ACT_LOCAL"), SharedLayouts.ACTION_LOCAL);
    }

    @Test
    void routeCodecRoundTrips() {
        Route r = Route.forward(7, SharedLayouts.FORM_IPV6, 0x8000_0000_0000_0001L, 0xDEADBEEF, 99, 0x01020304,
                TestFrames.mac(1), TestFrames.mac(2), TestFrames.ip6(3), TestFrames.ip6(4), 65531, 9450).withSrcPortSpan(5);
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            var seg = arena.allocate(SharedLayouts.ROUTE);
            RouteCodec.write(r, seg);
            assertEquals(r, RouteCodec.read(seg));
            // big-endian ports as in the C struct (__be16)
            long portOff = SharedLayouts.offset(SharedLayouts.ROUTE, "src_port");
            assertEquals((byte) 0xff, seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, portOff));
            long dstPortOff = SharedLayouts.offset(SharedLayouts.ROUTE, "dst_port");
            assertEquals((byte) (9450 >> 8), seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, dstPortOff));
        }
    }
}
