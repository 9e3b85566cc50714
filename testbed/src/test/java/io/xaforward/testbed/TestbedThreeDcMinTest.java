package io.xaforward.testbed;

import io.xaforward.common.Json;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static io.xaforward.testbed.TestbedFixtures.*;
import static org.junit.jupiter.api.Assertions.*;

/** Brings up topologies/three-dc-min.yaml under a unique prefix in real namespaces and checks what the kernel has. */
@Timeout(120)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class TestbedThreeDcMinTest {
    static String prefix;
    static Path stateDir;
    static Testbed testbed;
    static Topology topology;
    static TestbedState state;

    @BeforeAll
    static void up() {
        prefix = uniquePrefix();
        stateDir = tempStateDir();
        testbed = new Testbed(stateDir);
        topology = Topology.load(TopologyParserTest.TOPOLOGIES.resolve("three-dc-min.yaml")).withPrefix(prefix);
        state = testbed.up(topology);
    }

    @AfterAll
    static void down() {
        if (testbed != null) testbed.down(prefix);
        assertEquals(List.of(), namespacesWithPrefix(prefix));
        deleteTree(stateDir);
    }

    @Test
    @Order(1)
    void namespacesAndInterfacesExistWithPlannedMacs() {
        assertEquals(List.of(prefix + "-a-h0", prefix + "-b-h0", prefix + "-c-h0", prefix + "-gw").stream().sorted().toList(),
                namespacesWithPrefix(prefix));
        assertTrue(Files.exists(testbed.stateFile(prefix)));
        for (Node n : concat()) {
            assertTrue(n.ifindex() > 0, n.toString());
            Map<String, Object> link = Testbed.ipJson(n.namespace(), "link", "show", "dev", n.iface()).getFirst();
            assertEquals(n.ifindex(), ((Number) link.get("ifindex")).intValue());
            assertEquals(n.mac(), link.get("address"));
            assertTrue(((List<?>) link.get("flags")).contains("LOWER_UP"), n.iface() + " not up: " + link);
        }
        assertEquals(3, state.gatewayPorts("gw").size());
        assertEquals(prefix + "-gw", state.gatewayNamespace("gw"));
    }

    @Test
    @Order(2)
    void hostsAndGatewayPortsReachEachOtherInIpv4AndIpv6() throws Exception {
        Node a = state.host("a", 0), ga = state.gatewayPort("gw", "a");
        Node b = state.host("b", 0), gb = state.gatewayPort("gw", "b");
        assertEquals("10.77.0.1", a.ipText());
        assertEquals("10.77.0.254", ga.ipText());
        assertEquals("fd77:0:1::1", b.ipText());
        assertEquals("fd77:0:1::fe", gb.ipText());
        try (var servers = new EchoServers(a.namespace(), b.namespace(), ga.namespace())) {
            EchoServers.probe(a.namespace(), ga.ipText());
            EchoServers.probe(b.namespace(), gb.ipText());
            EchoServers.probe(ga.namespace(), a.ipText(), b.ipText());
        }
    }

    @Test
    @Order(4)
    void idHostHasMacButNoIpAddress() {
        Node h = state.host("c", 0);
        assertNull(h.ip());
        Map<String, Object> link = Testbed.ipJson(h.namespace(), "addr", "show", "dev", h.iface()).getFirst();
        assertEquals(h.mac(), link.get("address"));
        assertEquals(List.of(), link.get("addr_info"), "ID-form interface must carry no IPv4 or IPv6 address");
        assertEquals(Node.hostIdentity(2, 0), h.identity());
    }

    @Test
    @Order(5)
    void neighboursOffloadsAndForwardingAreSet() {
        Node h = state.host("a", 0), g = state.gatewayPort("gw", "a");
        String neigh = run(h.namespace(), "ip", "neigh", "show", "dev", h.iface());
        assertTrue(neigh.contains(g.ipText() + " lladdr " + g.mac() + " PERMANENT"), neigh);
        Node b = state.host("b", 0);
        String back = run(g.namespace(), "ip", "-6", "neigh", "show", "dev", state.gatewayPort("gw", "b").iface());
        assertTrue(back.contains(b.ipText() + " lladdr " + b.mac() + " PERMANENT"), back);
        String k = run(g.namespace(), "ethtool", "-k", g.iface());
        assertTrue(k.contains("tx-checksumming: off"), k);
        assertTrue(k.contains("tcp-segmentation-offload: off"), k);
        assertTrue(k.contains("generic-receive-offload: on"), k);
        assertEquals("1", run(g.namespace(), "sysctl", "-n", "net.ipv4.ip_forward").strip());
        assertEquals("1", run(g.namespace(), "sysctl", "-n", "net.ipv6.conf.all.forwarding").strip());
    }

    @Test
    @Order(6)
    void upTwiceIsIdempotent() {
        TestbedState again = testbed.up(topology);
        assertEquals(state, again, "a second up must keep every interface (same ifindexes, MACs, addresses)");
        Node h = again.host("a", 0);
        String addrs = run(h.namespace(), "ip", "-4", "-o", "addr", "show", "dev", h.iface());
        assertEquals(1, addrs.lines().count(), addrs);
    }

    @Test
    @Order(7)
    void xdpPassAttachesToGatewayPortPeers() throws Exception {
        testbed.attachXdpPass(state);
        testbed.attachXdpPass(state); // idempotent
        for (Node port : state.gatewayPorts()) {
            Map<String, Object> link = Testbed.ipJson(port.peerNamespace(), "link", "show", "dev", port.peerIface()).getFirst();
            assertTrue(link.get("xdp") instanceof Map<?, ?> x && ((Number) x.get("mode")).intValue() == 1,
                    "native XDP expected on " + port.peerIface() + ": " + link);
        }
        assertEquals(3, xdpEntries().size());
        assertTrue(xdpEntries().contains(Map.of("ns", state.gatewayPort("gw", "c").peerNamespace(),
                "dev", state.gatewayPort("gw", "c").peerIface())));
        Node c = state.gatewayPort("gw", "c");
        testbed.detachXdp(prefix, c.peerNamespace(), c.peerIface());
        assertNull(Testbed.ipJson(c.peerNamespace(), "link", "show", "dev", c.peerIface()).getFirst().get("xdp"));
        assertEquals(2, xdpEntries().size(), "detach must drop the state file's record");
        testbed.attachXdpPass(prefix, c.peerNamespace(), c.peerIface());
    }

    @Test
    @Order(8)
    void showListsLiveState() {
        String s = testbed.show(topology);
        assertTrue(s.contains("4 of 4 namespaces present"), s);
        assertTrue(s.contains(prefix + "-gw-b"), s);
        assertTrue(s.contains("10.77.0.254/24"), s);
        assertFalse(s.contains("absent"), s);
    }

    @Test
    @Order(9)
    void downRemovesEverything() {
        testbed.down(topology);
        assertEquals(List.of(), namespacesWithPrefix(prefix));
        assertFalse(Files.exists(testbed.stateFile(prefix)));
        assertTrue(testbed.show(topology).contains("0 of 4 namespaces present"));
        testbed.down(topology); // a second down is harmless
    }

    @SuppressWarnings("unchecked")
    private static List<Object> xdpEntries() throws java.io.IOException {
        Map<String, Object> json = (Map<String, Object>) Json.readPlain(Files.readString(testbed.stateFile(prefix)));
        return (List<Object>) json.get("xdp");
    }

    private static List<Node> concat() {
        List<Node> all = new java.util.ArrayList<>(state.hosts());
        all.addAll(state.gatewayPorts());
        return all;
    }
}
