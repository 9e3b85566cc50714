package io.xaforward.cli;

import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.Testbed;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.plan.IdentifierPlan;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The gateway's life cycle over real veth links (one host in each of three networks joined by a gateway namespace):
 * a gateway killed with SIGKILL leaves no XDP program behind and a new one starts on the same interfaces and
 * forwards. Creates and always removes its own namespaces.
 */
class GatewayLifecycleTest {
    static final int JOB = 7;
    static final int TOKEN = 0x5eed1234;
    static final String PREFIX = "l" + Integer.toHexString(new Random().nextInt(0x1000, 0x10000));

    static Testbed testbed;
    static Topology topology;
    static TestbedState state;
    static IdentifierPlan plan;
    static Path configFile;
    static final List<XafTestHost> hosts = new ArrayList<>();
    static int nextSeq;
    GatewayProcess gateway;

    @BeforeAll
    static void up() throws Exception {
        assertTrue(Netns.isRoot(), "the life-cycle test needs root (network namespaces, XDP); CI runs as root");
        topology = Topology.load(Path.of("..", "topologies", "three-dc-min.yaml")).withPrefix(PREFIX);
        testbed = new Testbed(Files.createTempDirectory("xaf-life-state"));
        state = testbed.up(topology);
        testbed.attachXdpPass(state);
        plan = IdentifierPlan.build(state, JOB, TOKEN);
        configFile = Files.createTempFile("xaf-life-gw", ".yaml");
        Files.writeString(configFile, plan.gatewayYaml("gw", "off", 0));
        for (int r = 0; r < plan.worldSize(); r++) hosts.add(XafTestHost.open(plan, r));
    }

    @AfterAll
    static void down() throws Exception {
        try {
            for (XafTestHost h : hosts) h.close();
        } finally {
            if (testbed != null && topology != null) testbed.down(topology);
            if (configFile != null) Files.deleteIfExists(configFile);
        }
        assertTrue(Netns.list().stream().noneMatch(n -> n.startsWith(PREFIX + "-")), "namespaces left behind");
    }

    @AfterEach
    void stopGateway() throws Exception {
        if (gateway != null && gateway.isAlive()) gateway.stop();
    }

    static String gatewayNs() { return state.gatewayNamespace("gw"); }

    static GatewayProcess startGateway(String... options) throws Exception {
        GatewayProcess g = GatewayProcess.start(gatewayNs(), configFile, List.of(), List.of(), List.of(options));
        g.awaitReady(60_000);
        return g;
    }

    /** The `ip link` line of each gateway port that shows an XDP program. */
    static List<String> portsWithXdp() {
        String links = Netns.exec(gatewayNs(), "ip", "link", "show").stdout();
        List<String> attached = new ArrayList<>();
        for (Node p : state.gatewayPorts("gw")) {
            links.lines().filter(l -> l.contains(" " + p.iface() + "@") || l.contains(" " + p.iface() + ":"))
                    .filter(l -> l.contains("xdp")).forEach(attached::add);
        }
        return attached;
    }

    /** Every host sends {@code perPair} packets to every other; asserts they all arrive intact. */
    static void assertForwards(int perPair) throws Exception {
        int first = nextSeq;
        nextSeq += perPair;
        for (int seq = first; seq < first + perPair; seq++) {
            for (XafTestHost src : hosts) {
                for (XafTestHost dst : hosts) {
                    if (src != dst) src.send(dst.rank, seq);
                }
            }
            if (seq % 16 == 15) Thread.sleep(2);
        }
        for (XafTestHost h : hosts) {
            h.receive(h.total() + perPair * (hosts.size() - 1), 20_000);
            assertEquals(List.of(), h.errors, "rank " + h.rank + " saw errors");
            for (XafTestHost src : hosts) {
                if (src != h) {
                    assertEquals(perPair, h.received.get(src.rank).get(first, first + perPair).cardinality(),
                            "rank " + h.rank + " from rank " + src.rank);
                }
            }
        }
    }

    @Test
    void killNineLeavesNoProgramAndARestartForwards() throws Exception {
        gateway = startGateway();
        assertEquals(state.gatewayPorts("gw").size(), portsWithXdp().size(), "attached to every port");
        assertForwards(20);

        gateway.signal("KILL");
        assertEquals(137, gateway.awaitExit(15_000), gateway.output());
        assertFalse(gateway.sawLine("detached from"), "SIGKILL runs no shutdown hook: " + gateway.output());
        long deadline = System.currentTimeMillis() + 5_000;
        while (!portsWithXdp().isEmpty() && System.currentTimeMillis() < deadline) Thread.sleep(50);
        assertEquals(List.of(), portsWithXdp(), "the XDP links died with the process");

        gateway = startGateway();
        assertEquals(state.gatewayPorts("gw").size(), portsWithXdp().size());
        assertForwards(20);
    }
}
