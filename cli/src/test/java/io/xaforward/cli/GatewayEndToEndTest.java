package io.xaforward.cli;

import io.xaforward.dataplane.sys.NetworkNamespace;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.Testbed;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.plan.IdentifierPlan;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.*;

/**
 * End to end over real veth links: one host in each of three networks (IPv4, IPv6, identifier-native) joined by a
 * gateway namespace running {@code xaf gateway}. Every host sends XAF packets with known payloads to every other;
 * receivers check every byte and the counts. Creates and always removes its own namespaces.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class GatewayEndToEndTest {
    static final int JOB = 7;
    static final int TOKEN = 0x5eed1234;
    static final String PREFIX = "e" + Integer.toHexString(new Random().nextInt(0x1000, 0x10000));

    static Testbed testbed;
    static Topology topology;
    static TestbedState state;
    static IdentifierPlan plan;
    static Path configFile;
    static GatewayProcess gateway;
    static Path notifyDir;
    static NotifySocket notifySocket;
    static final List<XafTestHost> hosts = new ArrayList<>();

    @BeforeAll
    static void up() throws Exception {
        assertTrue(Netns.isRoot(), "the end-to-end test needs root (network namespaces, XDP); CI runs as root");
        topology = Topology.load(Path.of("..", "topologies", "three-dc-min.yaml")).withPrefix(PREFIX);
        testbed = new Testbed(Files.createTempDirectory("xaf-e2e-state"));
        state = testbed.up(topology);
        testbed.attachXdpPass(state);
        plan = IdentifierPlan.build(state, JOB, TOKEN);
        configFile = Files.createTempFile("xaf-e2e-gw", ".yaml");
        Files.writeString(configFile, plan.gatewayYaml("gw", "127.0.0.1:9464"));
        notifyDir = Files.createTempDirectory("xaf-e2e-notify");
        notifySocket = new NotifySocket(notifyDir.resolve("notify"));
        gateway = GatewayProcess.start(state.gatewayNamespace("gw"), configFile, List.of(), List.of(), List.of(),
                java.util.Map.of("NOTIFY_SOCKET", notifyDir.resolve("notify").toString()));
        gateway.awaitReady(60_000);
        for (int r = 0; r < plan.worldSize(); r++) hosts.add(XafTestHost.open(plan, r));
    }

    @AfterAll
    static void down() throws Exception {
        try {
            for (XafTestHost h : hosts) h.close();
            if (gateway != null) gateway.close();
        } finally {
            if (testbed != null && topology != null) testbed.down(topology);
            if (configFile != null) Files.deleteIfExists(configFile);
            if (notifySocket != null) notifySocket.close();
            if (notifyDir != null) {
                Files.deleteIfExists(notifyDir.resolve("notify"));
                Files.deleteIfExists(notifyDir);
            }
        }
        assertTrue(Netns.list().stream().noneMatch(n -> n.startsWith(PREFIX + "-")), "namespaces left behind");
    }

    /** Sends {@code perPair} packets from every host to every other host, in small paced bursts. */
    static void sendAll(int firstSeq, int perPair) throws Exception {
        for (int seq = firstSeq; seq < firstSeq + perPair; seq++) {
            for (XafTestHost src : hosts) {
                for (XafTestHost dst : hosts) {
                    if (src != dst) src.send(dst.rank, seq);
                }
            }
            if (seq % 16 == 15) Thread.sleep(2); // stay far below the veth rings: this test is about correctness
        }
    }

    static long metric(String name, String counter) throws Exception {
        String text = metricsText();
        String pattern = counter == null ? "(?m)^" + name + " (\\d+)$" : "(?m)^" + name + "\\{outcome=\"" + counter + "\"\\} (\\d+)$";
        Matcher m = Pattern.compile(pattern).matcher(text);
        assertTrue(m.find(), "metric " + name + " " + counter + " missing from:\n" + text);
        return Long.parseLong(m.group(1));
    }

    /** The gateway's metrics endpoint's answer. */
    static String metricsText() throws Exception {
        return NetworkNamespace.call(state.gatewayNamespace("gw"), () -> {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", 9464), 5000);
                s.setSoTimeout(5000);
                OutputStream out = s.getOutputStream();
                out.write("GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            }
        });
    }

    @Test
    @Order(0)
    void theGatewayToldSystemdItIsReady() {
        // systemd's Type=notify: the gateway sent READY=1 to $NOTIFY_SOCKET by the time it printed its ready line
        String msg = notifySocket.poll();
        assertNotNull(msg, "no datagram on NOTIFY_SOCKET; gateway output:\n" + gateway.output());
        assertTrue(msg.lines().toList().contains("READY=1"), msg);
        assertTrue(msg.lines().toList().contains("MAINPID=" + gateway.process.toHandle().descendants()
                .filter(h -> h.info().command().orElse("").endsWith("/bin/java")).findFirst().map(ProcessHandle::pid)
                .orElse(gateway.process.pid())), msg);
    }

    @Test
    @Order(0)
    void everyMetricIsDocumentedAndNamedInPrometheusStyle() throws Exception {
        String text = metricsText();
        String doc = Files.readString(Path.of("..", "docs", "GATEWAY.md"));
        Matcher m = Pattern.compile("(?m)^# TYPE (\\S+) (\\S+)$").matcher(text);
        int families = 0;
        while (m.find()) {
            families++;
            String name = m.group(1), type = m.group(2);
            assertTrue(doc.contains("| `" + name + "` | " + type + " |"), name + " (" + type + ") missing from GATEWAY.md's metrics table");
            assertTrue(name.startsWith("xaf_"), name);
            assertEquals(type.equals("counter"), name.endsWith("_total"), name + ": counters, and only counters, end in _total");
            assertTrue(text.contains("# HELP " + name + " "), name + " has no HELP line");
        }
        assertTrue(families >= 16, "metric families: " + families + "\n" + text);
    }

    @Test
    @Order(1)
    void everyHostReachesEveryOtherHostAcrossAllForms() throws Exception {
        int perPair = 300;
        long forwardedBefore = metric("xaf_packets_total", "forwarded");
        sendAll(0, perPair);
        int others = hosts.size() - 1;
        for (XafTestHost h : hosts) {
            int got = h.receive(perPair * others, 20_000);
            assertEquals(List.of(), h.errors, "rank " + h.rank + " (" + h.node.form() + ") saw errors");
            for (XafTestHost src : hosts) {
                if (src == h) continue;
                assertEquals(perPair, h.received.get(src.rank).cardinality(),
                        "rank " + h.rank + " (" + h.node.form() + ") from rank " + src.rank + " (" + src.node.form() + ")");
            }
            assertEquals(perPair * others, got);
        }
        long forwarded = metric("xaf_packets_total", "forwarded") - forwardedBefore;
        assertEquals((long) perPair * hosts.size() * others, forwarded, "every packet crossed the XDP gateway");
        assertEquals(0, metric("xaf_packets_total", "drop_malformed"));
        assertEquals(0, metric("xaf_packets_total", "drop_no_route"));
    }

    @Test
    @Order(2)
    void nonXafTrafficTakesTheKernelPath() throws Exception {
        Node v4 = state.hosts().stream().filter(n -> n.form() == io.xaforward.protocol.NetworkForm.IPV4).findFirst().orElseThrow();
        Node port = state.gatewayPort("gw", v4.datacenter());
        long passedBefore = metric("xaf_packets_total", "pass_non_xaf");
        ServerSocket server = NetworkNamespace.call(state.gatewayNamespace("gw"), () -> new ServerSocket(7070, 4, port.ip()));
        Thread echo = Thread.ofPlatform().daemon(true).start(() -> {
            try (server; Socket c = server.accept()) {
                InputStream in = c.getInputStream();
                byte[] b = in.readNBytes(5);
                c.getOutputStream().write(b);
            } catch (Exception ignored) {
                // the client's assertion reports the failure
            }
        });
        String reply = NetworkNamespace.call(v4.namespace(), () -> {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(port.ip(), 7070), 5000);
                s.setSoTimeout(5000);
                s.getOutputStream().write("hello".getBytes(StandardCharsets.US_ASCII));
                return new String(s.getInputStream().readNBytes(5), StandardCharsets.US_ASCII);
            }
        });
        echo.join(5000);
        assertEquals("hello", reply, "a TCP connection through the gateway's kernel stack");
        assertTrue(metric("xaf_packets_total", "pass_non_xaf") - passedBefore >= 3, "TCP segments passed untouched");
    }

    @Test
    @Order(3)
    void routeReloadDropsNothing() throws Exception {
        long reloads = metric("xaf_config_reloads_total", null);
        int perPair = 200;
        Thread sender = Thread.ofPlatform().start(() -> {
            try {
                sendAll(1000, perPair);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        // Rewrite the config while traffic flows: an extra route added, then removed again.
        String base = plan.gatewayYaml("gw", "127.0.0.1:9464");
        Node idPort = state.gatewayPorts("gw").stream().filter(p -> p.form() == io.xaforward.protocol.NetworkForm.ID).findFirst().orElseThrow();
        String extra = base + "  - id: 0x00ff0001\n    job: 255\n    token: 1\n    egress: " + idPort.iface()
                + "\n    dst-mac: 02:00:00:00:00:01\n";
        Files.writeString(configFile, extra);
        Files.setLastModifiedTime(configFile, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() + 1000));
        long deadline = System.currentTimeMillis() + 10_000;
        while (metric("xaf_config_reloads_total", null) < reloads + 1 && System.currentTimeMillis() < deadline) Thread.sleep(100);
        Files.writeString(configFile, base);
        Files.setLastModifiedTime(configFile, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() + 2000));
        while (metric("xaf_config_reloads_total", null) < reloads + 2 && System.currentTimeMillis() < deadline) Thread.sleep(100);
        sender.join(60_000);
        assertEquals(reloads + 2, metric("xaf_config_reloads_total", null), gateway.output());
        assertEquals(plan.worldSize(), metric("xaf_routes", null));
        int others = hosts.size() - 1;
        for (XafTestHost h : hosts) {
            h.receive(300 * others + perPair * others, 20_000);
            assertEquals(List.of(), h.errors);
            for (XafTestHost src : hosts) {
                if (src == h) continue;
                assertEquals(perPair, h.received.get(src.rank).get(1000, 1000 + perPair).cardinality(),
                        "rank " + h.rank + " from " + src.rank + " during reloads");
            }
        }
    }

    /** Rewrites the config without changing its modification time, so only a SIGHUP makes the gateway read it. */
    static void writeUnnoticed(String yaml) throws Exception {
        var mtime = Files.getLastModifiedTime(configFile);
        Path tmp = Files.createTempFile(configFile.getParent(), "xaf-e2e-gw", ".tmp");
        Files.writeString(tmp, yaml);
        Files.setLastModifiedTime(tmp, mtime);
        Files.move(tmp, configFile, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }

    /**
     * Waits up to 30 s for a gateway metric to reach {@code value} (a reload takes a settle time, more on a busy
     * machine); on a timeout the failure shows the gateway's output with a thread dump at its end.
     */
    static void awaitMetric(String name, long value) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (metric(name, null) != value && System.currentTimeMillis() < deadline) Thread.sleep(100);
        if (metric(name, null) != value) gateway.printThreadDump();
        assertEquals(value, metric(name, null), name + "; " + gateway.output());
    }

    /** A port's MTU as the metrics endpoint reports the gateway applying it. */
    static long portMtu(Node port) throws Exception {
        return metricWithLabel("xaf_port_mtu_bytes", "port", port.iface());
    }

    static long metricWithLabel(String name, String label, String value) throws Exception {
        String text = metricsText();
        Matcher m = Pattern.compile("(?m)^" + name + "\\{" + label + "=\"" + Pattern.quote(value) + "\"\\} (\\d+)$").matcher(text);
        assertTrue(m.find(), name + "{" + label + "=" + value + "} missing from:\n" + text);
        return Long.parseLong(m.group(1));
    }

    /**
     * The gateway reads each port's MTU at start and again on every reload: a lowered MTU applies from the next
     * SIGHUP on (frames that no longer fit are then counted drop_too_big, never forwarded), and so does its return.
     */
    @Test
    @Order(4)
    void aChangedPortMtuAppliesOnReload() throws Exception {
        Node v6 = state.gatewayPorts("gw").stream().filter(p -> p.form() == io.xaforward.protocol.NetworkForm.IPV6).findFirst().orElseThrow();
        String ns = state.gatewayNamespace("gw");
        assertEquals(v6.mtu(), portMtu(v6));
        long reloads = metric("xaf_config_reloads_total", null);
        Netns.exec(ns, "ip", "link", "set", "dev", v6.iface(), "mtu", "1400");
        try {
            assertEquals(v6.mtu(), portMtu(v6), "not before a reload");
            gateway.signal("HUP");
            awaitMetric("xaf_config_reloads_total", reloads + 1);
            assertEquals(1400, portMtu(v6));
            assertTrue(gateway.sawLine(v6.iface() + ": MTU 1400 (was " + v6.mtu() + ")"), gateway.output());
        } finally {
            Netns.exec(ns, "ip", "link", "set", "dev", v6.iface(), "mtu", Integer.toString(v6.mtu()));
        }
        gateway.signal("HUP");
        awaitMetric("xaf_config_reloads_total", reloads + 2);
        assertEquals(v6.mtu(), portMtu(v6));
    }

    /**
     * The hop limit cap every port applies (PROTOCOL.md §6), as the kernel's ports map holds it: the default 16 from
     * start, a changed {@code max-hop-limit} from the next reload on, and back.
     */
    @Test
    @Order(4)
    void aChangedHopLimitCapAppliesOnReload() throws Exception {
        String base = plan.gatewayYaml("gw", "127.0.0.1:9464");
        for (Node p : state.gatewayPorts("gw")) assertEquals(16, metricWithLabel("xaf_port_max_hop_limit", "port", p.iface()));
        long reloads = metric("xaf_config_reloads_total", null);
        writeUnnoticed("max-hop-limit: 3\n" + base);
        gateway.signal("HUP");
        awaitMetric("xaf_config_reloads_total", reloads + 1);
        for (Node p : state.gatewayPorts("gw")) assertEquals(3, metricWithLabel("xaf_port_max_hop_limit", "port", p.iface()));
        assertTrue(gateway.sawLine(state.gatewayPorts("gw").getFirst().iface() + ": hop limit cap 3 (was 16)"), gateway.output());
        writeUnnoticed(base);
        gateway.signal("HUP");
        awaitMetric("xaf_config_reloads_total", reloads + 2);
        for (Node p : state.gatewayPorts("gw")) assertEquals(16, metricWithLabel("xaf_port_max_hop_limit", "port", p.iface()));
    }

    /**
     * The settle rule (GATEWAY.md, "Reloading") against a writer that rewrites the file in place and pauses inside
     * {@code routes:} for 3 s, longer than the 2 s in-place settle time, with what it wrote so far a valid config of
     * one route fewer: the gateway waits for the writer to close the file and applies the whole new file, never the
     * shorter route set.
     */
    @Test
    @Order(4)
    void anInPlaceRewriteThatPausesInsideRoutesIsAppliedWhole() throws Exception {
        String base = plan.gatewayYaml("gw", "127.0.0.1:9464");
        Node idPort = state.gatewayPorts("gw").stream().filter(p -> p.form() == io.xaforward.protocol.NetworkForm.ID).findFirst().orElseThrow();
        String next = base + "  - id: 0x00ff0002\n    job: 255\n    token: 1\n    egress: " + idPort.iface()
                + "\n    dst-mac: 02:00:00:00:00:02\n";
        int cut = base.lastIndexOf("\n  - id: ") + 1; // before the last route of the running config
        String part1 = next.substring(0, cut), part2 = next.substring(cut);
        assertEquals(plan.worldSize() - 1, io.xaforward.gateway.GatewayConfigParser.parse(part1, "part1").routes().size(),
                "the first part alone is a valid config with one route fewer");
        long failures = metric("xaf_config_reload_failures_total", null);
        Process writer = new ProcessBuilder("sh", "-c", "exec 3>\"$0\"; printf %s \"$1\" >&3; sleep 3; printf %s \"$2\" >&3",
                configFile.toString(), part1, part2).inheritIO().start();
        long fewest = Long.MAX_VALUE;
        while (writer.isAlive()) {
            fewest = Math.min(fewest, metric("xaf_routes", null));
            Thread.sleep(100);
        }
        assertEquals(0, writer.waitFor());
        long deadline = System.currentTimeMillis() + 15_000;
        while (metric("xaf_routes", null) != plan.worldSize() + 1 && System.currentTimeMillis() < deadline) {
            fewest = Math.min(fewest, metric("xaf_routes", null));
            Thread.sleep(100);
        }
        assertEquals(plan.worldSize(), fewest, "the shorter route set written before the pause was applied: " + gateway.output());
        assertEquals(plan.worldSize() + 1, metric("xaf_routes", null), gateway.output());
        assertEquals(failures, metric("xaf_config_reload_failures_total", null), "no half-written file was parsed and rejected");
        writeUnnoticed(base);
        gateway.signal("HUP");
        awaitMetric("xaf_routes", plan.worldSize());
        // The watcher may still re-read the file once (its mtime moved during the write): let it settle first, so
        // the next test counts only its own reloads.
        long reloads;
        do {
            reloads = metric("xaf_config_reloads_total", null);
            Thread.sleep(3000);
        } while (metric("xaf_config_reloads_total", null) != reloads);
    }

    @Test
    @Order(5)
    void sighupReloadsAndATornFileChangesNothing() throws Exception {
        String base = plan.gatewayYaml("gw", "127.0.0.1:9464");
        long reloads = metric("xaf_config_reloads_total", null);
        long failures = metric("xaf_config_reload_failures_total", null);
        Node idPort = state.gatewayPorts("gw").stream().filter(p -> p.form() == io.xaforward.protocol.NetworkForm.ID).findFirst().orElseThrow();
        writeUnnoticed(base + "  - {id: 0x00ff0002, job: 255, token: 1, egress: " + idPort.iface() + ", dst-mac: 02:00:00:00:00:01}\n");
        gateway.signal("HUP");
        awaitMetric("xaf_config_reloads_total", reloads + 1);
        assertTrue(gateway.isAlive(), "SIGHUP must not stop the gateway: " + gateway.output());
        assertEquals(plan.worldSize() + 1, metric("xaf_routes", null));
        assertEquals(1, metric("xaf_config_last_reload_successful", null));

        // A file cut short after its ports (an in-place rewrite caught half-way) is rejected: no route is removed.
        writeUnnoticed(base.substring(0, base.indexOf("routes:")));
        gateway.signal("HUP");
        awaitMetric("xaf_config_reload_failures_total", failures + 1);
        assertEquals(0, metric("xaf_config_last_reload_successful", null));
        assertEquals(plan.worldSize() + 1, metric("xaf_routes", null));
        sendAll(5000, 20);
        for (XafTestHost h : hosts) {
            h.receive(h.total() + 20 * (hosts.size() - 1), 20_000);
            for (XafTestHost src : hosts) {
                if (src != h) assertEquals(20, h.received.get(src.rank).get(5000, 5020).cardinality(), "after the torn reload");
            }
        }

        writeUnnoticed(base);
        gateway.signal("HUP");
        awaitMetric("xaf_config_reloads_total", reloads + 2);
        assertEquals(plan.worldSize(), metric("xaf_routes", null));
        assertEquals(1, metric("xaf_config_last_reload_successful", null));
        assertTrue(metric("xaf_config_last_reload_attempt_timestamp_seconds", null) > 1_700_000_000L);
    }

    /**
     * A reload of a config file that others could have written (or a link put in its place) is refused whatever it
     * holds: the running routes stay, the refusal is counted, and the file is taken again once it is fixed.
     */
    @Test
    @Order(6)
    void aReloadOfAFileOthersCanWriteOrALinkKeepsTheRunningRoutes() throws Exception {
        String base = plan.gatewayYaml("gw", "127.0.0.1:9464");
        long reloads = metric("xaf_config_reloads_total", null);
        long failures = metric("xaf_config_reload_failures_total", null);
        long refusals = metric("xaf_config_file_refusals_total", null);
        Node idPort = state.gatewayPorts("gw").stream().filter(p -> p.form() == io.xaforward.protocol.NetworkForm.ID).findFirst().orElseThrow();
        String extra = base + "  - {id: 0x00ff0003, job: 255, token: 1, egress: " + idPort.iface() + ", dst-mac: 02:00:00:00:00:03}\n";
        writeUnnoticed(extra);
        Files.setPosixFilePermissions(configFile, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-r--"));
        gateway.signal("HUP");
        awaitMetric("xaf_config_file_refusals_total", refusals + 1);
        assertEquals(failures + 1, metric("xaf_config_reload_failures_total", null));
        assertEquals(plan.worldSize(), metric("xaf_routes", null), "the group-writable file's extra route was not applied");
        long logged = System.currentTimeMillis() + 10_000; // the refusal is counted just before it is logged
        while (!gateway.sawLine("is writable by group or others") && System.currentTimeMillis() < logged) Thread.sleep(50);
        assertTrue(gateway.sawLine("is writable by group or others"), gateway.output());

        Path real = configFile.resolveSibling(configFile.getFileName() + ".real");
        Files.setPosixFilePermissions(configFile, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        Files.move(configFile, real);
        Files.createSymbolicLink(configFile, real);
        try {
            gateway.signal("HUP");
            awaitMetric("xaf_config_file_refusals_total", refusals + 2);
            assertEquals(plan.worldSize(), metric("xaf_routes", null), "a link is refused even to a good file");
        } finally {
            Files.delete(configFile);
            Files.move(real, configFile);
        }
        gateway.signal("HUP");
        awaitMetric("xaf_config_reloads_total", reloads + 1);
        assertEquals(plan.worldSize() + 1, metric("xaf_routes", null), "the fixed file is taken");
        writeUnnoticed(base);
        gateway.signal("HUP");
        awaitMetric("xaf_config_reloads_total", reloads + 2);
        assertEquals(plan.worldSize(), metric("xaf_routes", null));
    }

    @Test
    @Order(7)
    void sigtermDetachesFromEveryInterface() throws Exception {
        String ns = state.gatewayNamespace("gw");
        String before = Netns.exec(ns, "ip", "link", "show").stdout();
        assertTrue(before.contains("xdp"), before);
        assertEquals(143, gateway.stop(), "ended by SIGTERM after its shutdown hook ran: " + gateway.output());
        assertTrue(gateway.sawLine("detached from"), gateway.output());
        String after = Netns.exec(ns, "ip", "link", "show").stdout();
        for (Node p : state.gatewayPorts("gw")) {
            String line = after.lines().filter(l -> l.contains(" " + p.iface() + "@") || l.contains(" " + p.iface() + ":")).findFirst().orElseThrow();
            assertFalse(line.contains("xdp"), "still attached: " + line);
        }
    }
}
