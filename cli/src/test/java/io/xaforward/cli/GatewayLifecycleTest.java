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
 * forwards; {@code xaf gateway status|routes} read the running program's maps; a pinned gateway restarted (SIGTERM,
 * then SIGKILL) while traffic flows loses no frame. Creates and always removes its own namespaces and pins.
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
        Files.writeString(configFile, plan.gatewayYaml("gw", "off"));
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

    /** A pinned gateway: nsenter --net keeps the host's /sys/fs/bpf visible ('ip netns exec' hides it). */
    static GatewayProcess startPinnedGateway(String name) throws Exception {
        GatewayProcess g = GatewayProcess.startKeepingMounts(gatewayNs(), configFile, List.of("--pin", "--name", name));
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

    /** Runs {@code xaf ARGS} in the gateway's namespace; returns exit status and output. */
    static String[] xaf(String... args) throws Exception {
        return xaf(false, args);
    }

    /** As {@link #xaf(String...)}; {@code keepMounts}: enter only the network namespace (pins stay visible). */
    static String[] xaf(boolean keepMounts, String... args) throws Exception {
        ProcessBuilder pb = keepMounts
                ? Netns.processBuilderKeepMounts(gatewayNs(), Netns.javaProcessBuilder(null, List.of(), Main.class.getName(), List.of(args)).command())
                : Netns.javaProcessBuilder(gatewayNs(), List.of(), Main.class.getName(), List.of(args));
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS), "xaf " + String.join(" ", args) + " hung");
        return new String[] {Integer.toString(p.exitValue()), out};
    }

    static long counterColumn(String status, String counter) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^" + counter + " +(\\d+) +(\\d+)$").matcher(status);
        assertTrue(m.find(), counter + " missing from:\n" + status);
        return Long.parseLong(m.group(1));
    }

    @Test
    void statusAndRoutesReadTheRunningGatewaysMaps() throws Exception {
        gateway = startGateway();
        assertForwards(20);
        int pairs = hosts.size() * (hosts.size() - 1);

        String[] status = xaf(true, "gateway", "status", "--config", configFile.toString());
        assertEquals("0", status[0], status[1]);
        assertTrue(status[1].contains("XDP program xaf_gateway id "), status[1]);
        assertTrue(status[1].contains("not pinned"), status[1]);
        for (Node p : state.gatewayPorts("gw")) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^" + p.iface() + " +\\d+ +" + p.form().configName()
                    + " +\\d+ +(\\d+) +native +\\d+ +\\d+ +(\\d+) +(\\d+) +(\\d+)$").matcher(status[1]);
            assertTrue(m.find(), "port " + p.iface() + " native with an XDP link:\n" + status[1]);
            assertEquals(p.mtu(), Integer.parseInt(m.group(1)), "the port's MTU, as the data plane applies it:\n" + status[1]);
            assertEquals(0, Long.parseLong(m.group(4)), "nothing too big:\n" + status[1]);
            // one host per network: each port receives what its host sends to the two others, and sends it what they send
            assertTrue(Long.parseLong(m.group(2)) >= 40 && Long.parseLong(m.group(3)) >= 40, "per-port rx/tx:\n" + status[1]);
        }
        assertTrue(status[1].contains("routes: " + plan.routes("gw").size()), status[1]);
        assertTrue(counterColumn(status[1], "forwarded") >= 20L * pairs, status[1]);
        assertEquals(counterColumn(status[1], "rx"), counterColumn(status[1], "forwarded"), "every XAF frame forwarded:\n" + status[1]);
        assertEquals(0, counterColumn(status[1], "drop_no_route"), status[1]);

        String[] routes = xaf("gateway", "routes", "--config", configFile.toString());
        assertEquals("0", routes[0], routes[1]);
        assertEquals(plan.routes("gw").size() + 1, routes[1].lines().count(), "a header and one line per route:\n" + routes[1]);
        for (IdentifierPlan.GatewayRoute r : plan.routes("gw")) {
            String line = routes[1].lines().filter(l -> l.startsWith(String.format("0x%08x ", r.networkId()))).findFirst()
                    .orElseThrow(() -> new AssertionError(String.format("route 0x%08x missing:%n%s", r.networkId(), routes[1])));
            assertTrue(line.matches(String.format("0x%08x +%d +forward +%s +%s .*", r.networkId(), JOB, r.egressIface(), r.egressForm().configName())), line);
        }

        gateway.stop();
        String[] none = xaf("gateway", "status", "--config", configFile.toString());
        assertEquals("1", none[0], none[1]);
        assertTrue(none[1].contains("xaf: no gateway is running on the interfaces of " + configFile), none[1]);
    }

    /**
     * Sends from every host to every other, draining the receivers as it goes, while {@code restarts} runs on another
     * thread and for {@code after} more rounds once it is done; asserts every frame arrived.
     */
    static void assertNoLossWhile(ThrowingRunnable restarts, int after) throws Exception {
        int first = nextSeq;
        java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                restarts.run();
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        int doneAt = -1;
        int seq = first;
        for (; doneAt < 0 || seq < doneAt + after; seq++) {
            for (XafTestHost src : hosts) {
                for (XafTestHost dst : hosts) {
                    if (src != dst) src.send(dst.rank, seq);
                }
            }
            for (XafTestHost h : hosts) h.drain();
            Thread.sleep(2);
            if (doneAt < 0 && !t.isAlive()) doneAt = seq;
            assertTrue(seq - first < 50_000, "restarts never finished");
        }
        nextSeq = seq;
        if (failure.get() != null) throw new AssertionError("restart failed", failure.get());
        int sent = seq - first;
        long lost = 0;
        StringBuilder where = new StringBuilder();
        for (XafTestHost h : hosts) {
            long deadline = System.currentTimeMillis() + 5_000;
            while (System.currentTimeMillis() < deadline && h.received.stream().mapToInt(b -> b.get(first, first + sent).cardinality()).sum() < sent * (hosts.size() - 1)) {
                h.drain();
            }
            assertEquals(List.of(), h.errors, "rank " + h.rank + " saw errors");
            for (XafTestHost src : hosts) {
                if (src == h) continue;
                int got = h.received.get(src.rank).get(first, first + sent).cardinality();
                if (got != sent) where.append(" rank ").append(src.rank).append("->").append(h.rank).append(": ").append(sent - got);
                lost += sent - got;
            }
        }
        System.out.printf("restarts under traffic: %d frames per pair (%d in all) sent, %d lost%n", sent, (long) sent * hosts.size() * (hosts.size() - 1), lost);
        assertEquals(0, lost, sent + " frames per pair sent across the restarts; lost:" + where);
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    void aPinnedGatewayRestartsWithoutLosingAFrame() throws Exception {
        String name = PREFIX + "-gw";
        if (Files.readAllLines(Path.of("/proc/self/mountinfo")).stream().noneMatch(l -> l.contains(" /sys/fs/bpf ") && l.contains(" - bpf "))) {
            // A fresh host has no bpffs mounted; pinning needs one (what 'mount -t bpf bpf /sys/fs/bpf' does).
            assertEquals(0, new ProcessBuilder("mount", "-t", "bpf", "bpf", "/sys/fs/bpf").inheritIO().start().waitFor());
        }
        io.xaforward.dataplane.GatewayPins pins = io.xaforward.dataplane.GatewayPins.forGateway(name);
        try {
            gateway = startPinnedGateway(name);
            assertTrue(pins.hasMaps(), "maps pinned at " + pins.dir());
            assertEquals(state.gatewayPorts("gw").stream().map(Node::iface).sorted().toList(), pins.linkedInterfaces());
            String linksBefore = xaf(true, "gateway", "status", "--config", configFile.toString(), "--name", name)[1];
            assertTrue(linksBefore.contains("pinned at " + pins.dir()), linksBefore);
            assertForwards(10);
            assertHostStatusListsTheGateway(name, linkIds(linksBefore));

            assertNoLossWhile(() -> {
                Thread.sleep(200);
                assertEquals(143, gateway.stop());
                assertTrue(gateway.sawLine("attached and pinned at " + pins.dir()), gateway.output());
                assertEquals(state.gatewayPorts("gw").size(), portsWithXdp().size(), "still attached while no gateway runs");
                Thread.sleep(300); // frames cross the gateway with no control plane for a while
                gateway = startPinnedGateway(name);
                assertTrue(gateway.sawLine("adopted the pinned maps in " + pins.dir() + ": 0 routes added, 0 changed, 0 removed"), gateway.output());
                assertTrue(gateway.sawLine("adopted pinned XDP link"), gateway.output());
                gateway.signal("KILL");
                assertEquals(137, gateway.awaitExit(15_000));
                Thread.sleep(300);
                gateway = startPinnedGateway(name);
            }, 200);

            String status = xaf(true, "gateway", "status", "--config", configFile.toString(), "--name", name)[1];
            assertTrue(status.contains("pinned at " + pins.dir()), status);
            assertEquals(linkIds(linksBefore), linkIds(status), "the same XDP links, now running the new program");
            assertTrue(counterColumn(status, "forwarded") > 0, status);

            String[] unpin = xaf(true, "gateway", "unpin", "--name", name);
            assertEquals("0", unpin[0], unpin[1]);
            assertFalse(pins.hasMaps());
            assertEquals(143, gateway.stop());
            assertTrue(gateway.sawLine("detached from"), "unpinned: the gateway detaches when it stops: " + gateway.output());
            assertEquals(List.of(), portsWithXdp());
            String after = xafInRootNamespace("gateway", "status")[1];
            assertTrue(after.lines().noneMatch(l -> l.startsWith(gatewayNs() + " ") && l.contains("xaf_gateway")), after);
        } finally {
            pins.remove();
        }
    }

    /** Runs a command (xdp-tools) in the gateway's namespace, keeping /sys/fs/bpf (where libxdp pins) visible. */
    static String inGatewayNs(String... command) throws Exception {
        Process p = Netns.processBuilderKeepMounts(gatewayNs(), List.of(command)).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), String.join(" ", command) + " hung");
        assertEquals(0, p.exitValue(), () -> String.join(" ", command) + ": " + out);
        return out;
    }

    /** How many times {@code fragment} occurs in {@code text}. */
    static int occurrences(String text, String fragment) {
        int n = 0;
        for (int i = text.indexOf(fragment); i >= 0; i = text.indexOf(fragment, i + 1)) n++;
        return n;
    }

    /**
     * {@code --attach dispatcher --pin} beside xdp-tools' xdp-filter on every gateway port: a restart (SIGTERM, then
     * SIGKILL) and a route reload while traffic flows lose no frame, each port's dispatcher ends with one gateway
     * program beside the filter, and unpin removes the gateway from every dispatcher and leaves the filter. Where the
     * kernel refuses BPF extension programs (the development machines' 6.18) the pinned start must fail with the
     * clear line and leave no pin and nothing of the gateway's behind; which branch runs is asked of the kernel.
     */
    /**
     * How long a dispatcher-mode start may take to be ready. Generous: CI runs this test in a VM whose CPU QEMU
     * emulates (.ci/dispatcher-vm), where a gateway JVM starting while the test's own senders keep the CPU busy took
     * over a minute. A slow start loses nothing (the pinned program forwards meanwhile), so only a hang should fail.
     */
    static final long DISPATCHER_READY_MS = 240_000;

    @Test
    void aPinnedGatewayInTheDispatcherRestartsAndReloadsWithoutLosingAFrame() throws Exception {
        boolean extensions = GatewayDispatcherTest.extensionsLoad(); // fails here where XAF_REQUIRE_DISPATCHER=1 and they do not
        String name = PREFIX + "-gwd";
        if (Files.readAllLines(Path.of("/proc/self/mountinfo")).stream().noneMatch(l -> l.contains(" /sys/fs/bpf ") && l.contains(" - bpf "))) {
            assertEquals(0, new ProcessBuilder("mount", "-t", "bpf", "bpf", "/sys/fs/bpf").inheritIO().start().waitFor());
        }
        io.xaforward.dataplane.GatewayPins pins = io.xaforward.dataplane.GatewayPins.forGateway(name);
        List<String> ports = state.gatewayPorts("gw").stream().map(Node::iface).toList();
        Path file = Files.createTempFile("xaf-life-gwd", ".yaml"); // its own file: the reload below rewrites it
        Files.writeString(file, Files.readString(configFile));
        List<String> options = List.of("--attach", "dispatcher", "--pin", "--name", name);
        for (String port : ports) inGatewayNs("xdp-filter", "load", port, "--mode", "native");
        try {
            String filtersOnly = inGatewayNs("xdp-loader", "status");
            if (!extensions) {
                GatewayProcess g = GatewayProcess.startKeepingMounts(gatewayNs(), file, List.of(), options);
                assertEquals(1, g.awaitExit(60_000), g.output());
                assertTrue(g.sawLine("cannot start: this kernel refuses BPF extension (freplace) programs, which"
                        + " libxdp's multiprog dispatcher needs"), g.output());
                assertFalse(Files.exists(pins.dir()), "nothing pinned at " + pins.dir());
                assertEquals(filtersOnly, inGatewayNs("xdp-loader", "status"), "the filters run as before, alone");
                return;
            }
            gateway = GatewayProcess.startKeepingMounts(gatewayNs(), file, List.of(), options);
            gateway.awaitReady(DISPATCHER_READY_MS);
            assertTrue(pins.hasMaps() && pins.pinnedThroughDispatcher(), "maps pinned at " + pins.dir());
            assertEquals(List.of(), pins.linkedInterfaces(), "libxdp pins the program's place in each dispatcher, not us");
            assertForwards(10);

            assertNoLossWhile(() -> {
                Thread.sleep(200);
                assertEquals(143, gateway.stop());
                assertTrue(gateway.sawLine("attached and pinned at " + pins.dir()), gateway.output());
                assertEquals(ports.size(), occurrences(inGatewayNs("xdp-loader", "status"), "xaf_gateway"),
                        "still in every dispatcher while no gateway runs");
                Thread.sleep(300); // frames cross the gateway with no control plane for a while
                gateway = GatewayProcess.startKeepingMounts(gatewayNs(), file, List.of(), options);
                gateway.awaitReady(DISPATCHER_READY_MS);
                assertTrue(gateway.sawLine("adopted the pinned maps in " + pins.dir() + ": 0 routes added, 0 changed, 0 removed"), gateway.output());
                assertTrue(gateway.sawLine("taking over from pinned program id"), gateway.output());

                // a route reload under traffic: one route more, the others untouched
                String yaml = Files.readString(file);
                int from = yaml.indexOf("  - id: "), to = yaml.indexOf("  - id: ", from + 1);
                String block = yaml.substring(from, to < 0 ? yaml.length() : to);
                String id = block.substring(8, 18);
                String extra = block.replace(id, String.format("0x%08x", Integer.decode(id) | 0x7f00));
                Path tmp = Files.createTempFile(file.getParent(), "xaf-life-gwd", ".tmp");
                Files.writeString(tmp, yaml + (yaml.endsWith("\n") ? "" : "\n") + extra);
                Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                long deadline = System.currentTimeMillis() + 30_000;
                while (!gateway.sawLine("reloaded " + file + ": 1 added, 0 changed, 0 removed") && System.currentTimeMillis() < deadline) Thread.sleep(100);
                assertTrue(gateway.sawLine("reloaded " + file + ": 1 added, 0 changed, 0 removed"), gateway.output());

                gateway.signal("KILL");
                assertEquals(137, gateway.awaitExit(15_000));
                Thread.sleep(300);
                gateway = GatewayProcess.startKeepingMounts(gatewayNs(), file, List.of(), options);
                gateway.awaitReady(DISPATCHER_READY_MS);
                assertTrue(gateway.sawLine("taking over from pinned program id"), gateway.output());
            }, 200);

            String status = inGatewayNs("xdp-loader", "status");
            assertEquals(ports.size(), occurrences(status, "xaf_gateway"), "one gateway program per dispatcher:\n" + status);
            assertEquals(ports.size(), occurrences(status, "xdpfilt_"), "the filters stay:\n" + status);

            String[] unpin = xaf(true, "gateway", "unpin", "--name", name);
            assertEquals("0", unpin[0], unpin[1]);
            assertEquals(ports.size(), occurrences(unpin[1], "dispatcher program on "), unpin[1]);
            assertFalse(pins.hasMaps());
            String after = inGatewayNs("xdp-loader", "status");
            assertEquals(0, occurrences(after, "xaf_gateway"), "unpinned: gone from every dispatcher:\n" + after);
            assertEquals(ports.size(), occurrences(after, "xdpfilt_"), "the filters stay:\n" + after);
            assertEquals(143, gateway.stop());
        } finally {
            pins.remove();
            inGatewayNs("xdp-filter", "unload", "--all");
            Files.deleteIfExists(file);
        }
    }

    /** Runs {@code xaf ARGS} in the test's own (root) network namespace, /sys/fs/bpf visible. */
    static String[] xafInRootNamespace(String... args) throws Exception {
        ProcessBuilder pb = Netns.javaProcessBuilder(null, List.of(), Main.class.getName(), List.of(args));
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS), "xaf " + String.join(" ", args) + " hung");
        return new String[] {Integer.toString(p.exitValue()), out};
    }

    /**
     * 'xaf gateway status' without --config, run from the root namespace as an operator would: it finds the gateway in
     * its namespace on every port, with the pinned links' ids and name, and the testbed's XDP_PASS programs on the
     * ports' peers in the host namespaces.
     */
    static void assertHostStatusListsTheGateway(String pinName, List<String> linkIds) throws Exception {
        String[] r = xafInRootNamespace("gateway", "status");
        assertEquals("0", r[0], r[1]);
        List<Node> ports = state.gatewayPorts("gw");
        for (int i = 0; i < ports.size(); i++) {
            String iface = ports.get(i).iface();
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^" + gatewayNs() + " +" + iface
                    + " +\\d+ +native +xaf_gateway +(\\d+) +(\\d+) +" + pinName + " +xaf gateway$").matcher(r[1]);
            assertTrue(m.find(), iface + " listed with its link and pin name:\n" + r[1]);
            assertEquals(linkIds.get(i), m.group(2), "the link of " + iface + ":\n" + r[1]);
        }
        java.util.regex.Matcher g = java.util.regex.Pattern.compile("(?m)^\\d+ +(\\S*" + gatewayNs() + "/\\S*) +(\\d+) +(\\d+) +(\\d+) +(\\d+)$").matcher(r[1]);
        assertTrue(g.find(), "the gateway program's summary:\n" + r[1]);
        assertEquals(ports.size(), g.group(1).split(",").length, r[1]);
        assertEquals(plan.routes("gw").size(), Integer.parseInt(g.group(2)), r[1]);
        assertTrue(Long.parseLong(g.group(4)) > 0, "forwarded frames counted:\n" + r[1]);
        for (Node h : state.hosts()) {
            assertTrue(r[1].lines().anyMatch(l -> l.startsWith(h.namespace() + " ") && l.contains(" xdp_pass ")),
                    "the testbed's XDP_PASS in " + h.namespace() + ":\n" + r[1]);
        }
        assertTrue(r[1].contains("network namespaces searched: "), r[1]);
    }

    @Test
    void pinningWhereTheBpfFilesystemIsHiddenIsAClearError() throws Exception {
        // 'ip netns exec' mounts a fresh /sys: the host's /sys/fs/bpf (where pins must live to outlive the process) is hidden.
        GatewayProcess g = GatewayProcess.start(gatewayNs(), configFile, List.of(), List.of(), List.of("--pin", "--name", PREFIX + "-hidden"));
        assertEquals(1, g.awaitExit(30_000), g.output());
        assertTrue(g.sawLine("cannot start: no BPF filesystem at /sys/fs/bpf here, where pins live: 'ip netns exec' mounts a fresh /sys"), g.output());
        assertEquals(List.of(), portsWithXdp(), "nothing attached");
    }

    /** The XDP-LINK column of a status text, port by port. */
    static List<String> linkIds(String status) {
        List<String> ids = new ArrayList<>();
        for (Node p : state.gatewayPorts("gw")) {
            String line = status.lines().filter(l -> l.startsWith(p.iface() + " ")).findFirst().orElseThrow();
            ids.add(line.trim().split(" +")[6]); // PORT IFINDEX FORM SLOT MTU MODE XDP-LINK
        }
        return ids;
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
