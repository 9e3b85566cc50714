package io.xaforward.testbed.mode;

import io.xaforward.protocol.XafHeader;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A plain {@code topo up}, no gateway mode started: the gateway namespace forwards between its data centers only
 * what the edge firewall allows (XAF's UDP port, TCP 5201 and 22, ICMP), and drops the rest by FORWARD policy.
 */
class TestbedEdgeFirewallTest {
    private static final Pattern POLICY_PACKETS = Pattern.compile("Chain FORWARD \\(policy DROP (\\d+) packets");

    static ModeTestbeds bed;
    static Node a, b;
    static String gateway;

    @BeforeAll
    static void up() throws Exception {
        bed = new ModeTestbeds(Path.of("src", "test", "resources", "two-ipv4.yaml"));
        a = bed.state.host("a", 0);
        b = bed.state.host("b", 0);
        gateway = bed.state.gatewayNamespace("gw");
    }

    @AfterAll
    static void down() throws Exception {
        if (bed != null) bed.close();
    }

    @Test
    void allowedTrafficCrossesAfterPlainUp() throws Exception {
        assertEquals(100_000, NonXafFlows.tcpTransfer(a, b, 5201, 100_000), "TCP to 5201 crosses");
        assertTrue(NonXafFlows.udpArrives(a, b, XafHeader.UDP_PORT), "UDP to the XAF port crosses");
        assertTrue(NonXafFlows.udpArrives(b, a, XafHeader.UDP_PORT), "and back");
    }

    @Test
    void otherTrafficIsDroppedAndCountedAfterPlainUp() throws Exception {
        long before = droppedByPolicy();
        assertFalse(NonXafFlows.udpArrives(a, b, 7777), "UDP to a port the edge does not open must not arrive");
        long afterUdp = droppedByPolicy();
        assertTrue(afterUdp >= before + 3, "the three datagrams are counted dropped by FORWARD: " + before + " -> " + afterUdp);
        assertTrue(NonXafFlows.tcpTransfer(a, b, 8080, 1000) < 0, "a TCP connection to a closed port is not established");
        assertTrue(droppedByPolicy() > afterUdp, "the SYNs are counted dropped by FORWARD");
    }

    private static long droppedByPolicy() {
        String listing = Netns.exec(gateway, "iptables", "-L", "FORWARD", "-v", "-x", "-n").stdout();
        Matcher m = POLICY_PACKETS.matcher(listing);
        assertTrue(m.find(), "FORWARD policy DROP after topo up: " + listing);
        return Long.parseLong(m.group(1));
    }
}
