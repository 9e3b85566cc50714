package io.xaforward.cli;

import io.xaforward.testbed.Netns;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * {@code xaf gateway} refuses bad setups with one clear line and a non-zero exit, leaving nothing attached: a
 * config naming a missing interface, a run without privileges, a missing BPF object.
 */
class GatewayBadInputTest {
    static final String NS = "xbad" + Integer.toHexString(new Random().nextInt(0x1000, 0x10000));
    static Path config;

    @BeforeAll
    static void setUp() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Netns.add(NS);
        Netns.exec(NS, "ip", "link", "add", "ba", "type", "veth", "peer", "name", "bb");
        Netns.exec(NS, "ip", "link", "set", "ba", "up");
        Netns.exec(NS, "ip", "link", "set", "bb", "up");
        config = Files.createTempFile("xaf-bad", ".yaml");
    }

    @AfterAll
    static void tearDown() throws Exception {
        Netns.delete(NS);
        Files.deleteIfExists(config);
    }

    static GatewayProcess run(String yaml, List<String> wrapper, List<String> jvmArgs) throws Exception {
        Files.writeString(config, yaml);
        GatewayProcess g = GatewayProcess.start(NS, config, jvmArgs, wrapper);
        return g;
    }

    static void assertNothingAttached() {
        String links = Netns.exec(NS, "ip", "link", "show").stdout();
        assertFalse(links.contains("xdp"), "left attached:\n" + links);
    }

    static final String GOOD_PORTS = "metrics: off\nports:\n  - {interface: ba, form: ipv4}\n  - {interface: bb, form: id}\nroutes: []\n";

    @Test
    void missingInterface() throws Exception {
        GatewayProcess g = run("metrics: off\nports:\n  - {interface: ba, form: ipv4}\n  - {interface: nosuch0, form: ipv6}\nroutes: []\n", List.of(), List.of());
        assertEquals(1, g.awaitExit(30_000));
        assertTrue(g.sawLine("[ERROR] GatewayMain - cannot start: interface 'nosuch0' does not exist in this network namespace"), g.output());
        assertNothingAttached();
    }

    @Test
    void withoutPrivileges() throws Exception {
        // Root without any capability: what an unprivileged user gets from the kernel.
        GatewayProcess g = run(GOOD_PORTS, List.of("setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"), List.of());
        assertEquals(1, g.awaitExit(30_000));
        assertTrue(g.sawLine("needs root"), g.output());
        assertNothingAttached();
    }

    @Test
    void missingBpfObject() throws Exception {
        GatewayProcess g = run(GOOD_PORTS, List.of(), List.of("-Dxaf.bpf.object=/nonexistent/xaf_gateway.bpf.o"));
        assertEquals(1, g.awaitExit(30_000));
        assertTrue(g.sawLine("/nonexistent/xaf_gateway.bpf.o"), g.output());
        assertTrue(g.sawLine("No such file or directory"), g.output());
        assertNothingAttached();
    }

    @Test
    void badConfigFailsBeforeAttaching() throws Exception {
        GatewayProcess g = run(GOOD_PORTS + "routes:\n  - {id: 1, job: 1, token: 1, egress: zz, dst-mac: 02:00:00:00:00:01}\n", List.of(), List.of());
        assertEquals(1, g.awaitExit(30_000));
        assertTrue(g.sawLine("[ERROR] GatewayMain - cannot start: " + config), g.output());
        assertNothingAttached();
    }

    @Test
    void attachesAndDetachesCleanly() throws Exception {
        GatewayProcess g = run(GOOD_PORTS, List.of(), List.of());
        g.awaitReady(30_000);
        assertTrue(Netns.exec(NS, "ip", "link", "show", "ba").stdout().contains("xdp"));
        assertEquals(143, g.stop());
        assertNothingAttached();
    }
}
