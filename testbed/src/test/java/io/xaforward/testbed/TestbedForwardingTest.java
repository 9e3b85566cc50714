package io.xaforward.testbed;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static io.xaforward.testbed.TestbedFixtures.*;
import static org.junit.jupiter.api.Assertions.*;

/** Kernel forwarding between same-form DCs, bridged segments, tc rate limits, and down scoped to its state file. */
@Timeout(120)
class TestbedForwardingTest {
    static final Path STATE_DIR = tempStateDir();
    static final Testbed TESTBED = new Testbed(STATE_DIR);
    static final List<String> PREFIXES = new ArrayList<>();

    @AfterAll
    static void cleanUp() {
        RuntimeException first = null;
        for (String p : PREFIXES) {
            try {
                TESTBED.down(p);
            } catch (RuntimeException e) {
                if (first == null) first = e;
            }
        }
        if (first != null) throw first;
        for (String p : PREFIXES) assertEquals(List.of(), namespacesWithPrefix(p));
        deleteTree(STATE_DIR);
    }

    private static Topology load(Path file) {
        String prefix = uniquePrefix();
        PREFIXES.add(prefix);
        return Topology.load(file).withPrefix(prefix);
    }

    @Test
    void kernelForwardsBetweenTwoIpv4DatacentersAndBridgeConnectsHosts() throws Exception {
        Topology t = load(Path.of(getClass().getResource("/two-ipv4.yaml").toURI()));
        TestbedState s = TESTBED.up(t);
        assertEquals(s, TESTBED.up(t), "up twice with TBF and bridges: no error, same interfaces");
        Node a0 = s.host("a", "h0"), a1 = s.host("a", "h1"), b0 = s.host("b", 0);
        assertEquals("10.78.5.1", b0.ipText());
        assertEquals(1400, b0.mtu());
        try (var servers = new EchoServers(a1.namespace(), b0.namespace())) {
            EchoServers.probe(a0.namespace(), a1.ipText(), b0.ipText()); // across the bridge; through the gateway
            EchoServers.probe(b0.namespace(), a1.ipText());              // the other way through the gateway
        }
        String route = run(a0.namespace(), "ip", "route", "show", "10.78.5.0/24");
        assertTrue(route.contains("via 10.77.0.254"), route);
        String neigh = run(a0.namespace(), "ip", "neigh", "show", a1.ipText());
        assertTrue(neigh.contains(a1.mac()) && neigh.contains("PERMANENT"), neigh);

        Node port = s.gatewayPort("gw", "b");
        String q = run(null, "tc", "-n", port.namespace(), "qdisc", "show", "dev", port.iface());
        assertTrue(q.contains("qdisc tbf") && q.contains("rate 50Mbit"), q);
        String peerQ = run(null, "tc", "-n", port.peerNamespace(), "qdisc", "show", "dev", port.peerIface());
        assertTrue(peerQ.contains("qdisc tbf") && peerQ.contains("rate 50Mbit"), peerQ);
        assertTrue(TESTBED.show(t).contains("50mbit tbf (active)"));
    }

    @Test
    void htbRateLimitAppliesBothWaysAndDownRemovesWhatItsStateFileLists() throws Exception {
        Topology t = load(TopologyParserTest.TOPOLOGIES.resolve("two-dc-ratelimited.yaml"));
        TestbedState s = TESTBED.up(t);
        assertEquals(s, TESTBED.up(t), "up twice with rate limits: no error, same interfaces");
        for (String dc : List.of("a", "b")) {
            Node port = s.gatewayPort("gw", dc);
            for (String[] end : List.of(new String[]{port.namespace(), port.iface()}, new String[]{port.peerNamespace(), port.peerIface()})) {
                String q = run(null, "tc", "-n", end[0], "qdisc", "show", "dev", end[1]);
                assertTrue(q.contains("qdisc htb 1: root"), end[1] + ": " + q);
                String c = run(null, "tc", "-n", end[0], "class", "show", "dev", end[1]);
                assertTrue(c.contains("rate 100Mbit"), end[1] + ": " + c);
            }
        }
        // Two IPv6 hosts share DC b's bridge: they reach each other and the gateway.
        try (var servers = new EchoServers(s.host("b", 1).namespace(), s.gatewayNamespace("gw"))) {
            EchoServers.probe(s.host("b", 0).namespace(), s.host("b", 1).ipText(), s.gatewayPort("gw", "b").ipText());
        }

        // The state file is what down removes: without it, down touches nothing (namespaces that merely share the
        // prefix may be someone else's); with it, everything it lists goes.
        Path stateFile = TESTBED.stateFile(t.prefix());
        byte[] saved = Files.readAllBytes(stateFile);
        Files.delete(stateFile);
        TESTBED.down(t.prefix());
        assertEquals(7, namespacesWithPrefix(t.prefix()).size());
        Files.write(stateFile, saved);
        TESTBED.down(t.prefix());
        assertEquals(List.of(), namespacesWithPrefix(t.prefix()));
        assertFalse(Files.exists(stateFile));
    }

    @Test
    void netnsFailureNamesCommandAndStderr() {
        NetnsException e = assertThrows(NetnsException.class, () -> Netns.exec(null, "ip", "link", "show", "dev", "no-such-dev0"));
        assertTrue(e.getMessage().contains("ip link show dev no-such-dev0"), e.getMessage());
        assertTrue(e.getMessage().contains("does not exist"), e.getMessage());
        NetnsException t = assertThrows(NetnsException.class,
                () -> Netns.exec(null, java.time.Duration.ofMillis(200), null, List.of("sleep", "5")));
        assertTrue(t.getMessage().contains("timed out"), t.getMessage());
    }
}
