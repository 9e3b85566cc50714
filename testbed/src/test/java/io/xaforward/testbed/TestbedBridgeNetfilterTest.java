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

/**
 * The emulated switches (the DCs' bridges and the WAN segment's bridge) come up without bridge netfilter: each bridge's
 * own {@code nf_call_*} options off and, where br_netfilter is loaded, its namespace's
 * {@code net.bridge.bridge-nf-call-*} sysctls off (the kernel calls the hooks when either is on). No mode filters
 * bridged traffic there, so there is no mode to keep it on for (docs/TOPOLOGY.md).
 */
@Timeout(120)
class TestbedBridgeNetfilterTest {
    static final Path STATE_DIR = tempStateDir();
    static final Testbed TESTBED = new Testbed(STATE_DIR);
    static final List<String> PREFIXES = new ArrayList<>();
    private static final List<String> OPTIONS = List.of("nf_call_iptables", "nf_call_ip6tables", "nf_call_arptables");
    private static final List<String> SYSCTLS = List.of("bridge-nf-call-iptables", "bridge-nf-call-ip6tables", "bridge-nf-call-arptables");

    @AfterAll
    static void cleanUp() {
        for (String p : PREFIXES) TESTBED.down(p);
        for (String p : PREFIXES) assertEquals(List.of(), namespacesWithPrefix(p));
        deleteTree(STATE_DIR);
    }

    @Test
    void switchesAndTheWanBridgeComeUpWithoutBridgeNetfilter() {
        String prefix = uniquePrefix();
        PREFIXES.add(prefix);
        Topology t = Topology.load(TopologyParserTest.TOPOLOGIES.resolve("two-dc-ipv4-wan.yaml")).withPrefix(prefix);
        // Whether br_netfilter is loaded on this machine decides whether the namespace sysctls exist; the test
        // asserts what each case needs, it does not skip the other.
        boolean brNetfilter = Files.isDirectory(Path.of("/proc/sys/net/bridge"));
        String hostBefore = brNetfilter ? run(null, "cat", "/proc/sys/net/bridge/bridge-nf-call-iptables").trim() : "";
        TESTBED.up(t);
        Layout l = Layout.of(t);
        List<String[]> bridges = new ArrayList<>();
        for (Layout.Bridge b : l.bridges()) bridges.add(new String[]{b.namespace(), b.name()});
        l.wan().ifPresent(w -> bridges.add(new String[]{w.namespace(), Layout.WAN_BRIDGE}));
        assertEquals(3, bridges.size(), "two DC switches and the WAN bridge");

        for (String[] b : bridges) {
            String details = run(null, "ip", "-n", b[0], "-d", "link", "show", "dev", b[1]);
            for (String option : OPTIONS) {
                assertTrue(details.contains(option + " 0"), b[1] + " in " + b[0] + " has " + option + " on: " + details);
            }
            if (brNetfilter) {
                for (String sysctl : SYSCTLS) {
                    String value = run(b[0], "cat", "/proc/sys/net/bridge/" + sysctl).trim();
                    assertEquals("0", value, sysctl + " in " + b[0]);
                }
            }
        }
        if (brNetfilter) {
            // The sysctls are per namespace: the host's own bridges stay as they were.
            assertEquals(hostBefore, run(null, "cat", "/proc/sys/net/bridge/bridge-nf-call-iptables").trim());
        }
        assertEquals(TESTBED.up(t), TESTBED.up(t), "up again keeps the bridges as they are");
    }
}
