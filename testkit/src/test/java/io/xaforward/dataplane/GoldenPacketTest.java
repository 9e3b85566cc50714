package io.xaforward.dataplane;

import io.xaforward.testkit.ProgTestRun;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static io.xaforward.dataplane.GoldenFixtures.outerLength;
import static io.xaforward.dataplane.SharedLayouts.FORM_IPV4;
import static io.xaforward.dataplane.SharedLayouts.FORM_IPV6;
import static io.xaforward.dataplane.TestFrames.getShort;
import static io.xaforward.dataplane.TestFrames.ipv4HeaderChecksum;
import static io.xaforward.dataplane.TestFrames.udpChecksum;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * Golden packets, Katran style: the fixtures in the data files under src/test/resources/golden/ (map setup, input
 * frame, expected action, expected output frame, expected counter; written by {@link GoldenFixtures}), each run
 * through BPF_PROG_TEST_RUN against the real compiled xaf_gateway.bpf.o. Checksums in forwarded frames are
 * additionally recomputed naively over the output bytes, payload included.
 */
class GoldenPacketTest {

    @TestFactory
    Stream<DynamicContainer> goldenPackets() {
        Map<String, List<GoldenFixture>> files = GoldenFixture.all();
        assertFalse(files.isEmpty(), "golden packet files");
        return files.entrySet().stream().map(e -> {
            assertFalse(e.getValue().isEmpty(), () -> e.getKey() + " holds no fixture");
            return DynamicContainer.dynamicContainer(e.getKey(),
                    e.getValue().stream().map(fx -> DynamicTest.dynamicTest(fx.name(), () -> runFixture(fx))));
        });
    }

    static void runFixture(GoldenFixture fx) {
        try (XafDataplane dp = XafDataplane.load()) {
            fx.setup().forEach(s -> s.apply(dp));
            CounterSnapshot before = dp.counters();
            PortCounterSnapshot portsBefore = dp.portCounters();
            ProgTestRun.Result r = ProgTestRun.run(dp.programFd(), fx.input(), GoldenFixture.IFINDEX, 0);
            CounterSnapshot delta = dp.counters().minus(before);
            PortCounterSnapshot ports = dp.portCounters().minus(portsBefore);

            assertEquals(fx.expectedAction(), r.action(), () -> "action was " + r.actionName() + "; counters " + delta);
            assertEquals(1, delta.packets(fx.counter()), () -> "counter " + fx.counter() + " in " + delta);
            assertEquals(fx.input().length, delta.bytes(fx.counter()), "bytes counted = ingress frame length");
            assertEquals(fx.isXaf() ? 1 : 0, delta.packets(Counter.RX_XAF), "RX_XAF");
            assertEquals(1, delta.totalFrames(), () -> "exactly one outcome counted: " + delta);
            // per port: an XAF frame counts on the slot of the port it arrived on, a forwarded one also on its tx slot
            assertEquals(delta.packets(Counter.RX_XAF), Arrays.stream(ports.rxPackets()).sum(), "port rx packets");
            assertEquals(delta.bytes(Counter.RX_XAF), Arrays.stream(ports.rxBytes()).sum(), "port rx bytes");
            assertEquals(delta.packets(Counter.FORWARDED), Arrays.stream(ports.txPackets()).sum(), "port tx packets");
            long tooBigForAPort = fx.counter() == Counter.DROP_TOO_BIG && fx.egressForm() != SharedLayouts.FORM_NONE ? 1 : 0;
            assertEquals(tooBigForAPort, Arrays.stream(ports.txTooBig()).sum(), "port tx too big");
            assertEquals(tooBigForAPort, ports.txTooBig(fx.routeTxSlot()), "too big counted on the egress port's slot");
            if (delta.packets(Counter.RX_XAF) == 1) {
                int slot = fx.ingressSlot();
                assertEquals(1, ports.rxPackets(slot), "rx counted on the ingress port's slot " + slot);
                assertEquals(fx.input().length, ports.rxBytes(slot));
            }
            if (delta.packets(Counter.FORWARDED) == 1) {
                assertEquals(1, ports.txPackets(fx.routeTxSlot()));
                assertEquals(r.frame().length, ports.txBytes(fx.routeTxSlot()), "tx bytes = egress frame length");
            }
            if (fx.expectedOutput() != null) {
                assertArrayEquals(fx.expectedOutput(), r.frame(), () -> "output frame\n expected " + HexFormat.of().formatHex(fx.expectedOutput())
                        + "\n actual   " + HexFormat.of().formatHex(r.frame()));
            }
            if (fx.payloadLength() >= 0) {
                checkForwarded(fx, r.frame());
            }
        }
    }

    /** Independent checks of a forwarded frame: checksums recomputed over the output, payload, hop limit. */
    static void checkForwarded(GoldenFixture fx, byte[] out) {
        int payloadAt = outerLength(fx.ingressForm()) + 48;
        byte[] payload = Arrays.copyOfRange(fx.input(), payloadAt, payloadAt + fx.payloadLength());
        int outer = outerLength(fx.egressForm());
        assertEquals(outer + 48 + payload.length, out.length, "no padding, no lost bytes");
        assertArrayEquals(payload, Arrays.copyOfRange(out, outer + 48, out.length), "payload byte-identical");
        assertEquals(8, out[outer + 5], "hop limit decremented from 9");
        if (fx.egressForm() == FORM_IPV4) {
            assertEquals(ipv4HeaderChecksum(out, 14), getShort(out, 24), "IPv4 header checksum");
            assertEquals(udpChecksum(out), getShort(out, 40), "UDP checksum (IPv4)");
        } else if (fx.egressForm() == FORM_IPV6) {
            assertEquals(udpChecksum(out), getShort(out, 60), "UDP checksum (IPv6)");
        }
    }
}
