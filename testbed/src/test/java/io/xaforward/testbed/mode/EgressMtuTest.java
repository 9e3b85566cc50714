package io.xaforward.testbed.mode;

import io.xaforward.gateway.ForwardingDecision;
import io.xaforward.protocol.MessageType;
import io.xaforward.protocol.PayloadIntegrity;
import io.xaforward.protocol.XafHeader;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.plan.IdentifierPlan;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The egress-MTU rule (docs/PROTOCOL.md §7) through live gateways of every engine: between hosts of different forms,
 * frames whose rebuilt packet exactly fills the egress port's MTU arrive intact, and frames one payload byte larger
 * are counted as drop_too_big (globally and on the egress port) and never as forwarded. Once with 1500 everywhere
 * (three-dc-min), once with jumbo frames (MTU 9000) in two of three data centers, where 9000-byte packets cross the
 * XDP gateway as multi-buffer frames and the relay; the AF_XDP gateway refuses a jumbo port with a clear error.
 */
@Timeout(300)
class EgressMtuTest {
    static final int FRAMES = 12;

    /** One direction of the test: what is sent from src to dst, and what must arrive. */
    record Flow(int src, int dst, int fits, boolean overSent) {}

    @Test
    void everyEngineForwardsWhatFitsAndCountsWhatDoesNot() throws Exception {
        try (ModeTestbeds bed = new ModeTestbeds(Path.of("..", "topologies", "three-dc-min.yaml"))) {
            IdentifierPlan plan = IdentifierPlan.build(bed.state, 3, 0x5eed1234);
            for (GatewayRunner runner : List.of(new XdpGateway(), new RelayGateway(), new AfXdpGateway())) {
                try (runner) {
                    runner.start(bed.state, plan, "gw");
                    checkFlows(bed, plan, runner, growingFlows(bed, plan));
                }
            }
        }
    }

    @Test
    void jumboFramesCrossWhereBothSidesTakeThem(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("jumbo.yaml");
        Files.writeString(file, """
                name: jumbo
                datacenters:
                  - {name: a, form: ipv4, hosts: 1, mtu: 9000}
                  - {name: b, form: ipv6, hosts: 1, mtu: 9000}
                  - {name: c, form: id, hosts: 1}
                gateways:
                  - {name: gw, joins: [a, b, c]}
                """);
        try (ModeTestbeds bed = new ModeTestbeds(file)) {
            IdentifierPlan plan = IdentifierPlan.build(bed.state, 3, 0x5eed1234);
            Topology t = bed.state.topology();
            assertEquals(9000, t.pathMtu("a", "b"));
            assertEquals(1500, t.pathMtu("a", "c"));
            int a = rankIn(plan, "a"), b = rankIn(plan, "b"), c = rankIn(plan, "c");
            List<Flow> flows = new ArrayList<>();
            for (int[] pair : new int[][] {{a, b}, {b, a}, {a, c}, {c, b}}) flows.add(flow(plan, pair[0], pair[1]));
            assertEquals(9000 - 48 - 48, flows.getFirst().fits(), "ipv4 -> ipv6 at 9000: the largest payload IPv6 carries");
            for (GatewayRunner runner : List.of(new XdpGateway(), new RelayGateway())) {
                try (runner) {
                    runner.start(bed.state, plan, "gw");
                    checkFlows(bed, plan, runner, flows);
                }
            }
            try (AfXdpGateway afxdp = new AfXdpGateway()) {
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> afxdp.start(bed.state, plan, "gw"));
                assertTrue(e.getMessage().contains("has MTU 9000, but the AF_XDP gateway carries frames of at most"), e.getMessage());
            }
        }
    }

    private static int rankIn(IdentifierPlan plan, String dc) {
        for (int r = 0; r < plan.worldSize(); r++) if (plan.host(r).datacenter().equals(dc)) return r;
        throw new AssertionError("no rank in " + dc);
    }

    /** Every ordered pair whose rebuild grows the frame (id -> ipv4/ipv6, ipv4 -> ipv6): where the rule bites. */
    private static List<Flow> growingFlows(ModeTestbeds bed, IdentifierPlan plan) {
        List<Flow> flows = new ArrayList<>();
        for (int s = 0; s < plan.worldSize(); s++) {
            for (int d = 0; d < plan.worldSize(); d++) {
                if (s != d && plan.host(d).form().outerHeaderLength() > plan.host(s).form().outerHeaderLength()) flows.add(flow(plan, s, d));
            }
        }
        assertEquals(3, flows.size(), "three growing pairs in three-dc-min");
        return flows;
    }

    /**
     * The largest payload from {@code src} to {@code dst}: what fits the egress port (the destination DC's MTU), and
     * the sender's own link; one byte more is sent only where the sender's link still takes it.
     */
    private static Flow flow(IdentifierPlan plan, int src, int dst) {
        Node s = plan.host(src), d = plan.host(dst);
        int egress = ForwardingDecision.maxPayload(d.form(), d.mtu());
        int ingress = ForwardingDecision.maxPayload(s.form(), s.mtu());
        return new Flow(src, dst, Math.min(egress, ingress), egress < ingress);
    }

    private static void checkFlows(ModeTestbeds bed, IdentifierPlan plan, GatewayRunner runner, List<Flow> flows) throws Exception {
        Map<String, Long> before = runner.counters();
        Map<String, Long> tooBigPerPort = new TreeMap<>();
        long overTotal = 0;
        for (Flow f : flows) {
            Node dstHost = plan.host(f.dst());
            String egressPort = bed.state.gatewayPorts("gw").stream().filter(p -> p.datacenter().equals(dstHost.datacenter()))
                    .findFirst().orElseThrow().iface();
            IdentifierPlan.Peer peer = plan.addressBook(f.src()).stream().filter(p -> p.rank() == f.dst()).findFirst().orElseThrow();
            String what = runner.mode() + " " + plan.host(f.src()).form() + " -> " + dstHost.form() + " (payload " + f.fits() + ")";
            try (HostEndpoint from = HostEndpoint.open(plan.host(f.src()));
                 HostEndpoint to = HostEndpoint.open(dstHost)) {
                for (int i = 0; i < FRAMES; i++) {
                    send(from, peer, plan, f, f.fits(), i, runner.mode());
                    if (f.overSent()) send(from, peer, plan, f, f.fits() + 1, i, runner.mode());
                }
                for (int i = 0; i < FRAMES; i++) {
                    MemorySegment got = to.receive(5000);
                    assertNotNull(got, what + ": frame " + i + " that fits arrives");
                    XafHeader h = new XafHeader().wrap(got, 0);
                    assertEquals(f.fits(), h.payloadLength(), what + ": only frames that fit arrive");
                    assertEquals(XafHeader.LENGTH + f.fits(), got.byteSize(), what);
                    assertEquals(i, h.chunkIndex(), what + ": in order, none lost");
                    assertTrue(new PayloadIntegrity().verify(h), what + ": payload intact");
                }
                assertNull(to.receive(300), what + ": nothing else arrives");
            }
            if (f.overSent()) {
                tooBigPerPort.merge(egressPort, (long) FRAMES, Long::sum);
                overTotal += FRAMES;
            }
        }
        assertTrue(overTotal > 0, "some flow sends frames one byte too big");
        Map<String, Long> after = runner.counters();
        long fitting = (long) FRAMES * flows.size();
        String forwarded = "xaf_packets_total{forwarded}";
        String tooBig = "xaf_packets_total{drop_too_big}";
        assertEquals(fitting, delta(after, before, forwarded), runner.mode() + ": forwarded = the frames that fit, " + after);
        assertEquals(overTotal, delta(after, before, tooBig), runner.mode() + ": every frame one byte over counted as too big, " + after);
        for (Node port : bed.state.gatewayPorts("gw")) {
            String key = "xaf_port_tx_too_big_packets_total{" + port.iface() + "}";
            assertEquals(tooBigPerPort.getOrDefault(port.iface(), 0L).longValue(), delta(after, before, key), runner.mode() + " " + key);
        }
    }

    private static long delta(Map<String, Long> after, Map<String, Long> before, String key) {
        assertTrue(after.containsKey(key), key + " in " + after);
        return after.get(key) - before.getOrDefault(key, 0L);
    }

    private static void send(HostEndpoint from, IdentifierPlan.Peer peer, IdentifierPlan plan, Flow f, int payload, int seq,
                             GatewayMode mode) throws IOException {
        MemorySegment buf = from.xafBuffer();
        XafHeader h = new XafHeader().wrap(buf, 0).init().type(MessageType.DATA.code()).networkId(peer.networkId())
                .jobId(plan.jobId()).jobToken(plan.jobToken()).srcRank(f.src()).dstRank(f.dst()).chunkIndex(seq)
                .chunkCount(FRAMES).payloadLength(payload);
        for (int j = 0; j < payload; j++) buf.set(ValueLayout.JAVA_BYTE, XafHeader.LENGTH + j, (byte) (seq * 31 + j));
        new PayloadIntegrity().seal(h);
        from.send(peer, XafHeader.LENGTH + payload, mode);
    }
}
