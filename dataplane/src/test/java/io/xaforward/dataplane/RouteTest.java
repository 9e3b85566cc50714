package io.xaforward.dataplane;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link Route}'s UDP source-port span: its limits, its rule and its place in struct xaf_route. */
class RouteTest {
    static Route ipv4(int srcPort) {
        return Route.forward(2, SharedLayouts.FORM_IPV4, 0, 7, 8, 0, TestFrames.mac(1), TestFrames.mac(2),
                TestFrames.ip4(10, 0, 0, 1), TestFrames.ip4(10, 0, 0, 2), srcPort, 9450);
    }

    @Test
    void spanIsOneUnlessSet() {
        assertEquals(1, ipv4(9450).srcPortSpan());
        assertEquals(1, Route.local(0, 1, 2).srcPortSpan());
        assertEquals(4, ipv4(9450).withSrcPortSpan(4).srcPortSpan());
    }

    @Test
    void theSpanStaysWithinSixteenBits() {
        assertEquals(65535, ipv4(65532).withSrcPortSpan(4).srcPort() + 4 - 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ipv4(65533).withSrcPortSpan(4));
        assertTrue(e.getMessage().contains("65533..65536"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ipv4(1).withSrcPortSpan(65536));
        assertThrows(IllegalArgumentException.class, () -> ipv4(1).withSrcPortSpan(-1));
        ipv4(65535).withSrcPortSpan(1);
        ipv4(65535).withSrcPortSpan(0);
        ipv4(1).withSrcPortSpan(65535);
    }

    @Test
    void egressSourcePortRule() {
        assertEquals(9450, Route.egressSourcePort(9450, 0, 3, 9453));
        assertEquals(9450, Route.egressSourcePort(9450, 1, 3, 9453));
        assertEquals(9450 + (3 + 9453) % 4, Route.egressSourcePort(9450, 4, 3, 9453));
        assertEquals(9450 + 6 % 4, Route.egressSourcePort(9450, 4, 6, 0));
        assertEquals(9450 + (65535 + 65535) % 7, Route.egressSourcePort(9450, 7, 65535, 65535));
    }

    @Test
    void theSpanRoundTripsInHostOrderAtOffsetSix() {
        Route r = ipv4(9450).withSrcPortSpan(0x0102);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(SharedLayouts.ROUTE);
            RouteCodec.write(r, seg);
            assertEquals(r, RouteCodec.read(seg));
            assertEquals(6, SharedLayouts.offset(SharedLayouts.ROUTE, "src_port_span"));
            assertEquals((byte) 0x02, seg.get(ValueLayout.JAVA_BYTE, 6), "host order (x86-64): low byte first");
            assertEquals((byte) 0x01, seg.get(ValueLayout.JAVA_BYTE, 7));
            assertEquals(88, SharedLayouts.ROUTE.byteSize());
        }
    }
}
