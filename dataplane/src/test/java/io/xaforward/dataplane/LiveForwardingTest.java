package io.xaforward.dataplane;

import io.xaforward.dataplane.sys.PacketSocket;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static io.xaforward.dataplane.GoldenFixtures.*;
import static io.xaforward.dataplane.TestFrames.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * End to end on real interfaces: sa0 -> [sa1: gateway, native XDP] -devmap-> sb1 -> sb0, all in a namespace made
 * here. An IPv4-form XAF frame written to sa0 must come out of sb0 rebuilt in IPv6 form, byte for byte as the golden
 * tests expect, and be counted as FORWARDED.
 */
class LiveForwardingTest {
    @Test
    void frameCrossesTheGatewayBetweenVeths() throws Throwable {
        try (NetNs ns = NetNs.create("xafdf-" + ProcessHandle.current().pid(),
                n -> n.vethPair("sa0", "sa1").vethPair("sb0", "sb1"))) {
            ns.call(() -> {
                try (XafDataplane dp = XafDataplane.load()) {
                    int sa1 = LibBpf.ifNameToIndex("sa1"), sb1 = LibBpf.ifNameToIndex("sb1");
                    dp.attach("sa1", false);
                    dp.attach("sb0", false); // a veth only accepts redirected XDP frames when its peer runs XDP
                    dp.setPort(sa1, IN_SLOT, SharedLayouts.FORM_IPV4);
                    dp.setTxPort(TX_SLOT, sb1);
                    dp.putRoute(NET, route(SharedLayouts.FORM_IPV6));

                    Xaf x = Xaf.of(9, NET, JOB, TOKEN, payload(1001, 77));
                    byte[] frame = ingress(SharedLayouts.FORM_IPV4, x.bytes());
                    byte[] expected = expectedEgress(SharedLayouts.FORM_IPV6, x.withHop(8).bytes());
                    try (PacketSocket tx = new PacketSocket("sa0", PacketSocket.ETH_P_ALL);
                         PacketSocket rx = new PacketSocket("sb0", PacketSocket.ETH_P_ALL);
                         Arena arena = Arena.ofConfined()) {
                        MemorySegment out = arena.allocateFrom(ValueLayout.JAVA_BYTE, frame);
                        MemorySegment in = arena.allocate(65536);
                        CounterSnapshot before = dp.counters();
                        PortCounterSnapshot portsBefore = dp.portCounters();
                        tx.send(out, frame.length);
                        byte[] got = null;
                        long deadline = System.nanoTime() + 5_000_000_000L;
                        while (got == null && System.nanoTime() < deadline) {
                            int n = rx.receive(in, 200);
                            byte[] f = n < 0 ? null : in.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
                            // skip the namespace's own chatter (IPv6 ND/MLD): ours carries the route's MACs
                            if (f != null && f.length == expected.length && getShort(f, 12) == ETH_IPV6
                                    && java.util.Arrays.equals(f, 6, 12, R_SMAC, 0, 6)) {
                                got = f;
                            }
                        }
                        assertNotNull(got, () -> "nothing arrived at sb0 within 5 s; counters " + dp.counters().minus(before));
                        assertArrayEquals(expected, got);
                        assertEquals(1, dp.counters().minus(before).packets(Counter.FORWARDED));
                        // per port: what went in on sa1 (slot IN_SLOT) and out of sb1 (slot TX_SLOT), and nothing else
                        PortCounterSnapshot ports = dp.portCounters().minus(portsBefore);
                        assertEquals(1, ports.rxPackets(IN_SLOT));
                        assertEquals(frame.length, ports.rxBytes(IN_SLOT));
                        assertEquals(1, ports.txPackets(TX_SLOT));
                        assertEquals(expected.length, ports.txBytes(TX_SLOT));
                        assertEquals(1, java.util.Arrays.stream(ports.rxPackets()).sum(), "no other port received XAF");
                        assertEquals(1, java.util.Arrays.stream(ports.txPackets()).sum(), "no other port sent");
                    }
                }
                return null;
            });
        }
    }
}
