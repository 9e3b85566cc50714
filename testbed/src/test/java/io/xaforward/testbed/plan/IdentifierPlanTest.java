package io.xaforward.testbed.plan;

import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.GatewayConfigParser;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.testbed.Layout;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.*;

/** The plan is computed from a laid-out topology, without root. */
class IdentifierPlanTest {
    static TestbedState laidOut(Topology t) {
        Layout l = Layout.of(t);
        return new TestbedState(t, l.hosts(), l.gatewayPorts());
    }

    static Topology repoTopology(String name) {
        Path p = Path.of("..", "topologies", name);
        return Topology.load(p);
    }

    @Test
    void threeDcOneGatewayRoutesEveryRankDirectly() {
        TestbedState s = laidOut(repoTopology("three-dc.yaml"));
        IdentifierPlan plan = IdentifierPlan.build(s, 7, 0x5eed);
        assertEquals(s.hosts().size(), plan.worldSize());
        Set<Integer> ids = new HashSet<>();
        for (int r = 0; r < plan.worldSize(); r++) {
            assertEquals(7, plan.networkId(r) >>> 16);
            assertEquals(r, plan.rankOf(plan.networkId(r)));
            assertTrue(ids.add(plan.networkId(r)));
        }
        List<IdentifierPlan.GatewayRoute> routes = plan.routes("gw");
        assertEquals(plan.worldSize(), routes.size());
        for (IdentifierPlan.GatewayRoute r : routes) {
            Node dst = plan.host(r.destinationRank());
            assertEquals(dst.mac(), r.dstMac());
            assertEquals(dst.form(), r.egressForm());
            assertNull(r.nextGateway());
            assertFalse(r.ingressIfaces().contains(r.egressIface()), "no hairpin");
            assertEquals(2, r.ingressIfaces().size());
        }
    }

    @Test
    void addressBookGoesDirectInsideADcAndThroughTheGatewayOtherwise() {
        TestbedState s = laidOut(repoTopology("two-dc.yaml"));
        IdentifierPlan plan = IdentifierPlan.build(s, 1, 1);
        Node self = plan.host(0);
        for (IdentifierPlan.Peer p : plan.addressBook(0)) {
            assertNotEquals(0, p.rank());
            if (p.destination().datacenter().equals(self.datacenter())) {
                assertTrue(p.direct());
                assertEquals(p.destination().mac(), p.nextHopMac());
                assertEquals(p.destination().ip(), p.nextHopIp());
            } else {
                assertFalse(p.direct());
                Node port = s.gatewayPort("gw", self.datacenter());
                assertEquals(port.mac(), p.nextHopMac());
                assertEquals(port.ip(), p.nextHopIp());
            }
            assertEquals(NetworkForm.IPV4, p.form(), "a worker always speaks its own DC's form");
        }
    }

    static final String CHAIN = """
            name: chain
            datacenters:
              - {name: a, form: ipv4, hosts: 1}
              - {name: b, form: id, hosts: 1}
              - {name: c, form: ipv6, hosts: 1}
              - {name: d, form: id, hosts: 1}
            gateways:
              - {name: gab, joins: [a, b]}
              - {name: gbc, joins: [b, c]}
              - {name: gcd, joins: [c, d]}
            """;

    @Test
    void multiHopChainForwardsThroughIntermediateGateways() {
        TestbedState s = laidOut(Topology.parse(CHAIN, "chain.yaml"));
        IdentifierPlan plan = IdentifierPlan.build(s, 3, 9);
        int rankD = 3;
        IdentifierPlan.GatewayRoute atGab = plan.routes("gab").stream().filter(r -> r.destinationRank() == rankD).findFirst().orElseThrow();
        assertEquals("gbc", atGab.nextGateway());
        assertEquals(s.gatewayPort("gbc", "b").mac(), atGab.dstMac());
        assertEquals(NetworkForm.ID, atGab.egressForm());
        IdentifierPlan.GatewayRoute atGbc = plan.routes("gbc").stream().filter(r -> r.destinationRank() == rankD).findFirst().orElseThrow();
        assertEquals("gcd", atGbc.nextGateway());
        assertEquals(s.gatewayPort("gcd", "c").ip(), atGbc.dstIp());
        IdentifierPlan.GatewayRoute atGcd = plan.routes("gcd").stream().filter(r -> r.destinationRank() == rankD).findFirst().orElseThrow();
        assertNull(atGcd.nextGateway());
        assertEquals(plan.host(rankD).mac(), atGcd.dstMac());
        // rank 0 (in a) reaches d through gab, its only gateway
        IdentifierPlan.Peer p = plan.addressBook(0).stream().filter(x -> x.rank() == rankD).findFirst().orElseThrow();
        assertEquals(s.gatewayPort("gab", "a").mac(), p.nextHopMac());
    }

    @Test
    void disconnectedDatacentersAreRejected() {
        Topology t = Topology.parse("""
                name: split
                datacenters:
                  - {name: a, form: ipv4, hosts: 1}
                  - {name: b, form: ipv6, hosts: 1}
                  - {name: c, form: id, hosts: 1}
                  - {name: d, form: ipv4, hosts: 1}
                gateways:
                  - {name: g1, joins: [a, b]}
                  - {name: g2, joins: [c, d]}
                """, "split.yaml");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> IdentifierPlan.build(laidOut(t), 1, 1));
        assertTrue(e.getMessage().contains("cannot reach"), e.getMessage());
    }

    @Test
    void badJobIdIsRejected() {
        TestbedState s = laidOut(repoTopology("two-dc.yaml"));
        assertThrows(IllegalArgumentException.class, () -> IdentifierPlan.build(s, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> IdentifierPlan.build(s, 70000, 1));
    }

    @Test
    void generatedGatewayYamlParsesBackToTheSameRoutes() {
        TestbedState s = laidOut(Topology.parse(CHAIN, "chain.yaml"));
        IdentifierPlan plan = IdentifierPlan.build(s, 3, 0xfeedbeef);
        for (String gw : List.of("gab", "gbc", "gcd")) {
            GatewayConfig c = GatewayConfigParser.parse(plan.gatewayYaml(gw, "127.0.0.1:0"), gw + ".yaml");
            assertEquals(2, c.ports().size());
            assertEquals(plan.routes(gw).size(), c.routes().size());
            for (GatewayConfig.RouteConfig rc : c.routes()) {
                IdentifierPlan.GatewayRoute r = plan.routes(gw).stream().filter(x -> x.networkId() == rc.networkId()).findFirst().orElseThrow();
                assertEquals(r.egressIface(), rc.egress().orElseThrow());
                assertEquals(r.egressForm(), rc.form().orElseThrow());
                assertEquals(3, rc.jobId());
                assertEquals(0xfeedbeef, rc.jobToken());
                assertEquals(r.ingressIfaces(), rc.ingress());
                assertArrayEquals(Node.macBytesOf(r.dstMac()), rc.dstMac().orElseThrow());
                if (r.egressForm() != NetworkForm.ID) assertArrayEquals(r.dstIp().getAddress(), rc.dstIp().orElseThrow());
                assertEquals(1, rc.srcPortSpan(), "one flow per worker: the route's source port as before");
            }
        }
    }

    /** A job with several flows per worker gets routes into IP forms that keep them apart; ID routes have no ports. */
    @Test
    void aSourcePortSpanReachesEveryIpRouteOfTheGeneratedConfig() {
        TestbedState s = laidOut(repoTopology("three-dc.yaml"));
        IdentifierPlan plan = IdentifierPlan.build(s, 3, 7, 4);
        assertEquals(4, plan.srcPortSpan());
        assertEquals(IdentifierPlan.build(s, 3, 7).routes("gw"), plan.routes("gw"), "the same routes otherwise");
        GatewayConfig c = GatewayConfigParser.parse(plan.gatewayYaml("gw", "127.0.0.1:0"), "gw.yaml");
        assertTrue(c.routes().stream().anyMatch(rc -> rc.form().orElseThrow() == NetworkForm.ID), "an ID route exists");
        for (GatewayConfig.RouteConfig rc : c.routes()) {
            assertEquals(rc.form().orElseThrow() == NetworkForm.ID ? 1 : 4, rc.srcPortSpan(), rc.toString());
        }
        assertThrows(IllegalArgumentException.class, () -> IdentifierPlan.build(s, 3, 7, 0));
    }
}
