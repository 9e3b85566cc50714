package io.xaforward.testbed.mode;

import io.xaforward.protocol.MessageType;
import io.xaforward.protocol.PayloadIntegrity;
import io.xaforward.protocol.XafHeader;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.plan.IdentifierPlan;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * On topologies/three-dc-min.yaml (an IPv4, an IPv6 and an identifier-native DC behind one gateway), the XDP
 * gateway, the user-space relay and the AF_XDP gateway each carry XAF packets between all six ordered host pairs,
 * translating forms, with every byte intact.
 */
@Timeout(180)
class ThreeDcModesTest {
    static final int PACKETS = 150;
    static ModeTestbeds bed;
    static IdentifierPlan plan;

    @BeforeAll
    static void up() throws Exception {
        bed = new ModeTestbeds(Path.of("..", "topologies", "three-dc-min.yaml"));
        plan = IdentifierPlan.build(bed.state, 3, 0x5eed1234);
    }

    @AfterAll
    static void down() throws Exception {
        if (bed != null) bed.close();
    }

    static List<XafExchange.Pair> allPairs() {
        List<XafExchange.Pair> pairs = new ArrayList<>();
        for (int s = 0; s < plan.worldSize(); s++)
            for (int d = 0; d < plan.worldSize(); d++) if (s != d) pairs.add(new XafExchange.Pair(s, d));
        return pairs;
    }

    @Test
    void xdpGatewayDeliversEveryPacketBetweenAllForms() throws Exception {
        try (GatewayRunner runner = GatewayMode.XDP.newRunner()) {
            runner.start(bed.state, plan, "gw");
            exchangeWith(runner);
            assertEquals(expectedPortTraffic(), portEntries(runner.counters()), "per-port counters of the metrics endpoint");
        }
    }

    /**
     * What the exchange puts through each gateway port: XAF frames in from the port's DC (2 destinations x
     * {@value #PACKETS}) and out to it, with their frame lengths in the port's form; keyed as every engine's metrics
     * endpoint names them ("xaf_port_rx_packets_total{IFACE}").
     */
    static Map<String, Long> expectedPortTraffic() {
        Map<String, Long> expected = new java.util.TreeMap<>();
        for (Node port : bed.state.gatewayPorts("gw")) {
            for (String direction : List.of("rx_packets", "rx_bytes", "tx_packets", "tx_bytes")) expected.put(port(direction, port.iface()), 0L);
        }
        for (XafExchange.Pair pair : allPairs()) {
            Node src = plan.host(pair.src()), dst = plan.host(pair.dst());
            String in = portOf(src).iface(), out = portOf(dst).iface();
            for (int seq = 0; seq < PACKETS; seq++) {
                int xaf = XafHeader.LENGTH + XafExchange.payloadLength(seq, PACKETS, XafExchange.maxPayload(src, dst));
                expected.merge(port("rx_packets", in), 1L, Long::sum);
                expected.merge(port("rx_bytes", in), (long) src.form().outerHeaderLength() + xaf, Long::sum);
                expected.merge(port("tx_packets", out), 1L, Long::sum);
                expected.merge(port("tx_bytes", out), (long) dst.form().outerHeaderLength() + xaf, Long::sum);
            }
        }
        return expected;
    }

    private static Node portOf(Node host) {
        return bed.state.gatewayPorts("gw").stream().filter(p -> p.datacenter().equals(host.datacenter())).findFirst().orElseThrow();
    }

    private static String port(String direction, String iface) {
        return "xaf_port_" + direction + "_total{" + iface + "}";
    }

    private static Map<String, Long> portEntries(Map<String, Long> counters) {
        Map<String, Long> ports = new java.util.TreeMap<>();
        counters.forEach((k, v) -> { if (k.matches("xaf_port_(rx|tx)_(packets|bytes)_total\\{.+}")) ports.put(k, v); });
        return ports;
    }

    private static String outcome(String name) {
        return "xaf_packets_total{" + name + "}";
    }

    @Test
    void relayDeliversEveryPacketBetweenAllForms() throws Exception {
        Map<String, Long> counters;
        try (RelayGateway relay = new RelayGateway()) {
            relay.start(bed.state, plan, "gw");
            assertEquals(1, relay.processIds().size());
            exchangeWith(relay);
            relay.close();
            counters = relay.counters(); // as read when it stopped
        }
        assertEquals(Long.valueOf(PACKETS * 6), counters.get(outcome("forwarded")), counters::toString);
        assertEquals(expectedPortTraffic(), portEntries(counters), "per-port counters of the relay");
        for (String drop : List.of("drop_malformed", "drop_no_route", "drop_hop_limit", "drop_bad_token", "drop_send"))
            assertEquals(Long.valueOf(0), counters.get(outcome(drop)), drop + " in " + counters);
    }

    @Test
    void afxdpGatewayDeliversEveryPacketBetweenAllForms() throws Exception {
        List<String> out;
        Map<String, Long> live, last;
        try (AfXdpGateway gw = new AfXdpGateway()) {
            gw.start(bed.state, plan, "gw");
            assertEquals(1, gw.processIds().size());
            exchangeWith(gw);
            live = gw.counters();
            gw.close();
            last = gw.counters(); // as read when it stopped
            out = gw.processOutput();
        }
        assertEquals(3, out.stream().filter(l -> l.startsWith("xaf afxdp: port ")).count(), "one AF_XDP socket per port: " + out);
        // ARP/ND and other non-XAF frames never reach the socket, so every frame it saw was one of ours
        assertEquals(Long.valueOf(PACKETS * 6), live.get(outcome("forwarded")), "counters while running: " + live);
        assertEquals(expectedPortTraffic(), portEntries(live), "per-port counters of the AF_XDP gateway");
        assertEquals(Long.valueOf(PACKETS * 6), last.get(outcome("forwarded")), "counters when stopped: " + last);
        for (String drop : List.of("drop_malformed", "drop_no_route", "drop_hop_limit", "drop_bad_token", "drop_ingress",
                "drop_too_big", "drop_tx_full", "non_xaf", "errors"))
            assertEquals(Long.valueOf(0), last.get(outcome(drop)), drop + " in " + last);
        for (Node port : bed.state.gatewayPorts("gw")) {
            String link = Netns.exec(bed.state.gatewayNamespace("gw"), "ip", "link", "show", "dev", port.iface()).stdout();
            assertTrue(!link.contains("xdp"), "close() detaches xsk_all from " + port.iface() + ": " + link);
        }
    }

    /**
     * The AF_XDP gateway checks what the XDP program checks and counts each drop by reason; only the valid packet
     * reaches the receiver.
     */
    @Test
    void afxdpGatewayDropsAndCountsBadPacketsByReason() throws Exception {
        IdentifierPlan.Peer toB = plan.addressBook(0).stream().filter(p -> p.rank() == 1).findFirst().orElseThrow();
        try (AfXdpGateway gw = new AfXdpGateway();
             HostEndpoint a = HostEndpoint.open(plan.host(0));
             HostEndpoint b = HostEndpoint.open(plan.host(1))) {
            gw.start(bed.state, plan, "gw");
            XafHeader h = new XafHeader();
            PayloadIntegrity integrity = new PayloadIntegrity();
            MemorySegment buf = a.xafBuffer();
            for (int r = 0; r < plan.worldSize(); r++) assertTrue(plan.networkId(r) != (toB.networkId() ^ 0x00ff_0000));
            int[][] cases = { // {network id, token, hop limit, magic ok}
                    {toB.networkId(), plan.jobToken() ^ 1, 16, 1}, // drop_bad_token
                    {toB.networkId() ^ 0x00ff_0000, plan.jobToken(), 16, 1}, // drop_no_route
                    {toB.networkId(), plan.jobToken(), 1, 1}, // drop_hop_limit
                    {plan.networkId(0), plan.jobToken(), 16, 1}, // drop_ingress: a's own identifier arriving from a
                    {toB.networkId(), plan.jobToken(), 16, 0}, // drop_malformed
                    {toB.networkId(), plan.jobToken(), 16, 1}, // forwarded
            };
            for (int[] c : cases) {
                h.wrap(buf, 0).init().type(MessageType.DATA.code()).networkId(c[0]).jobId(plan.jobId()).jobToken(c[1])
                        .srcRank(0).dstRank(1).hopLimit(c[2]).payloadLength(16);
                for (int j = 0; j < 16; j++) buf.set(ValueLayout.JAVA_BYTE, XafHeader.LENGTH + j, (byte) j);
                integrity.seal(h);
                if (c[3] == 0) buf.set(ValueLayout.JAVA_BYTE, 0, (byte) 0);
                a.send(toB, XafHeader.LENGTH + 16, GatewayMode.AFXDP);
            }
            MemorySegment got = b.receive(5000);
            assertTrue(got != null, "the valid packet arrives");
            assertEquals(XafHeader.DEFAULT_HOP_LIMIT - 1, h.wrap(got, 0).hopLimit());
            assertEquals(null, b.receive(300), "nothing else arrives");
            Map<String, Long> c = gw.counters();
            for (String name : List.of("forwarded", "drop_bad_token", "drop_no_route", "drop_hop_limit", "drop_ingress", "drop_malformed"))
                assertEquals(Long.valueOf(1), c.get(outcome(name)), name + " in " + c);
            assertEquals(Long.valueOf(0), c.get(outcome("drop_tx_full")), c.toString());
            assertEquals(Long.valueOf(0), c.get(outcome("errors")), c.toString());
        }
    }

    private static void exchangeWith(GatewayRunner runner) throws Exception {
        long csumBefore = checksumErrors();
        XafExchange x = new XafExchange();
        Map<XafExchange.Pair, Integer> counts = x.run(plan, runner.mode(), allPairs(), PACKETS, 1, 20_000);
        assertEquals(List.of(), x.errors.stream().limit(10).toList(), runner.mode() + ": corrupted or misrouted packets");
        for (var e : counts.entrySet())
            assertEquals(PACKETS, e.getValue(), runner.mode() + " " + plan.host(e.getKey().src()).form() + " -> "
                    + plan.host(e.getKey().dst()).form() + ": packets delivered");
        assertEquals(csumBefore, checksumErrors(), "UDP checksum errors at the receivers");
    }

    private static long checksumErrors() {
        long n = 0;
        for (Node h : plan.hosts()) if (h.ip() != null) n += ModeTestbeds.udpChecksumErrors(h.namespace());
        return n;
    }
}
