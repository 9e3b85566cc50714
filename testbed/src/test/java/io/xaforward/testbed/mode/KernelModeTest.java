package io.xaforward.testbed.mode;

import io.xaforward.protocol.NetworkForm;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.plan.IdentifierPlan;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Two IPv4 and two IPv6 DCs behind one gateway: kernel forwarding behind its firewall carries XAF between the
 * same-form pairs and refuses to pretend it can translate forms; ordinary TCP and UDP cross every gateway mode
 * through the kernel path, behind the same edge firewall in every mode (only the allowed ones cross).
 */
@Timeout(180)
class KernelModeTest {
    static final int PACKETS = 150;
    static ModeTestbeds bed;
    static IdentifierPlan plan;
    static Node a, b, c;

    @BeforeAll
    static void up() throws Exception {
        bed = new ModeTestbeds(Path.of("src", "test", "resources", "four-dc-kernel.yaml"));
        plan = IdentifierPlan.build(bed.state, 5, 0x0badf00d);
        a = bed.state.host("a", 0);
        b = bed.state.host("b", 0);
        c = bed.state.host("c", 0);
    }

    @AfterAll
    static void down() throws Exception {
        if (bed != null) bed.close();
    }

    @Test
    void kernelCarriesSameFormPairsBehindTheFirewall() throws Exception {
        try (GatewayRunner k = GatewayMode.KERNEL.newRunner()) {
            k.start(bed.state, plan, "gw");
            String rules = Netns.exec(bed.state.gatewayNamespace("gw"), "iptables", "-S", "FORWARD").stdout();
            assertTrue(rules.contains("-P FORWARD DROP"), rules);
            assertTrue(rules.contains("--dport 9450 -j ACCEPT"), rules);
            List<XafExchange.Pair> pairs = List.of(new XafExchange.Pair(0, 1), new XafExchange.Pair(1, 0),
                    new XafExchange.Pair(2, 3), new XafExchange.Pair(3, 2));
            XafExchange x = new XafExchange();
            Map<XafExchange.Pair, Integer> counts = x.run(plan, GatewayMode.KERNEL, pairs, PACKETS, 0, 20_000);
            assertEquals(List.of(), x.errors.stream().limit(10).toList());
            for (var e : counts.entrySet()) assertEquals(PACKETS, e.getValue(), "kernel " + e.getKey());

            assertEquals(300_000, NonXafFlows.tcpTransfer(a, b, 5201, 300_000), "TCP to an allowed port crosses the firewall");
            assertFalse(NonXafFlows.udpArrives(a, b, 7777), "UDP to a port the firewall does not open must be dropped");
        }
        String after = Netns.exec(bed.state.gatewayNamespace("gw"), "iptables", "-S", "FORWARD").stdout();
        assertTrue(after.contains("-P FORWARD DROP") && after.contains("--dport 9450 -j ACCEPT"), "close() leaves the edge firewall topo up loaded: " + after);
    }

    @Test
    void kernelRefusesCrossFormPairsWithAReason() {
        assertTrue(GatewayMode.KERNEL.supports(NetworkForm.IPV4, NetworkForm.IPV4));
        assertFalse(GatewayMode.KERNEL.supports(NetworkForm.IPV4, NetworkForm.IPV6));
        assertTrue(GatewayMode.KERNEL.unsupportedReason(NetworkForm.IPV4, NetworkForm.IPV6).contains("cannot translate"));
        assertTrue(GatewayMode.KERNEL.unsupportedReason(NetworkForm.ID, NetworkForm.ID).contains("0x0812"));
        assertTrue(GatewayMode.XDP.supports(NetworkForm.ID, NetworkForm.IPV6));
        assertTrue(GatewayMode.RELAY.supports(NetworkForm.IPV6, NetworkForm.ID));
        assertTrue(GatewayMode.AFXDP.supports(NetworkForm.ID, NetworkForm.IPV4));
    }

    @Test
    void nonXafTrafficCrossesEveryModeExactlyAsTheKernelFirewallAllows() throws Exception {
        for (GatewayMode mode : List.of(GatewayMode.XDP, GatewayMode.RELAY, GatewayMode.AFXDP)) {
            try (GatewayRunner g = mode.newRunner()) {
                g.start(bed.state, plan, "gw");
                assertEquals(200_000, NonXafFlows.tcpTransfer(a, b, 5201, 200_000), mode + ": TCP a -> b to an open port");
                assertFalse(NonXafFlows.udpArrives(b, a, 7777), mode + ": UDP b -> a:7777 is closed at the edge, as in kernel mode");
                // and XAF still goes through the gateway itself, across forms
                XafExchange x = new XafExchange();
                var counts = x.run(plan, mode, List.of(new XafExchange.Pair(0, 2)), 50, 1, 10_000);
                assertEquals(List.of(), x.errors);
                assertEquals(50, counts.get(new XafExchange.Pair(0, 2)), mode + " ipv4 -> ipv6");
            }
            String after = Netns.exec(bed.state.gatewayNamespace("gw"), "iptables", "-S", "FORWARD").stdout();
            assertTrue(after.contains("-P FORWARD DROP") && after.contains("--dport 9450 -j ACCEPT"), mode + ": close() leaves the edge firewall: " + after);
        }
        assertNotNull(c);
    }
}
