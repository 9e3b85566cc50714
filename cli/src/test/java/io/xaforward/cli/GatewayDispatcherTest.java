package io.xaforward.cli;

import io.xaforward.dataplane.XdpDispatcher;
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
 * {@code xaf gateway --attach dispatcher} as a process, beside xdp-tools' xdp-filter on the same port of a namespace
 * made here. Where the kernel runs BPF extension programs the gateway starts, {@code xdp-loader status} lists it
 * beside the filter, and stopping it leaves the filter; where it does not (the development machines' kernel), the
 * gateway exits with one clear line and leaves the filter as it was. Which of the two must happen is asked of the
 * kernel by {@link XdpDispatcher#probeExtensions} and, independently, read from how xdp-filter loaded (through a
 * dispatcher, or alone): both must agree. The forwarding through a shared port is DispatcherTest's (dataplane).
 */
class GatewayDispatcherTest {
    /**
     * Set to 1 where the kernel is known to load BPF extension programs (CI's Debian 12 VM, .ci/dispatcher-vm): a
     * refusal then fails the dispatcher tests instead of sending them down their refusal branch, so a run meant to
     * exercise the shared port cannot pass by checking only the error path.
     */
    static final String REQUIRE_DISPATCHER = "XAF_REQUIRE_DISPATCHER";
    static final String NS = "xdsp" + Integer.toHexString(new Random().nextInt(0x1000, 0x10000));
    static Path config;

    @BeforeAll
    static void setUp() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Netns.add(NS);
        Netns.exec(NS, "ip", "link", "add", "da", "type", "veth", "peer", "name", "db");
        Netns.exec(NS, "ip", "link", "set", "da", "up");
        Netns.exec(NS, "ip", "link", "set", "db", "up");
        config = Files.createTempFile("xaf-dispatcher", ".yaml");
        Files.writeString(config, "metrics: off\nports:\n  - {interface: da, form: ipv4}\n  - {interface: db, form: ipv6}\nroutes: []\n");
    }

    @AfterAll
    static void tearDown() throws Exception {
        Netns.delete(NS);
        Files.deleteIfExists(config);
    }

    /** Runs a command (xdp-tools, xaf) in the namespace, keeping /sys/fs/bpf (where libxdp pins) visible. */
    static String xdpTool(String... command) throws Exception {
        Process p = Netns.processBuilderKeepMounts(NS, List.of(command)).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), String.join(" ", command) + " hung");
        assertEquals(0, p.exitValue(), () -> String.join(" ", command) + ": " + out);
        return out;
    }

    static String link(String dev) {
        return Netns.exec(NS, "ip", "-d", "link", "show", "dev", dev).stdout();
    }

    /**
     * A pinned gateway restarted with another attach mode is refused before anything changes: the pinned program
     * keeps forwarding (a restart through the dispatcher would otherwise leave the old links running beside it).
     * The hitless restart itself, through the dispatcher, is GatewayLifecycleTest's.
     */
    @Test
    void aPinnedGatewayRestartsOnlyInItsAttachMode() throws Exception {
        String name = NS + "-mode";
        io.xaforward.dataplane.GatewayPins pins = io.xaforward.dataplane.GatewayPins.forGateway(name);
        try {
            GatewayProcess native_ = GatewayProcess.startKeepingMounts(NS, config, List.of("--attach", "native", "--pin", "--name", name));
            native_.awaitReady(60_000);
            native_.stop();
            assertTrue(native_.sawLine("attached and pinned at " + pins.dir()), native_.output());
            assertEquals(List.of("da", "db"), pins.linkedInterfaces());
            String before = link("da");
            assertTrue(before.contains("xdp"), before);

            GatewayProcess g = GatewayProcess.startKeepingMounts(NS, config, List.of("--attach", "dispatcher", "--pin", "--name", name));
            assertEquals(1, g.awaitExit(240_000), g.output());
            assertTrue(g.sawLine("cannot start: the gateway pinned at " + pins.dir() + " was attached with XDP links of"
                    + " its own, and this one would attach through the dispatcher: a restart keeps the attach mode"), g.output());
            assertEquals(before, link("da"), "the pinned program still runs, untouched");
            assertEquals(List.of("da", "db"), pins.linkedInterfaces());
        } finally {
            pins.remove();
        }
        assertFalse(link("da").contains("xdp"), "unpinned: detached");
    }

    @Test
    void anUnknownAttachWordListsTheWords() throws Exception {
        GatewayProcess g = GatewayProcess.startKeepingMounts(NS, config, List.of("--attach", "shared"));
        assertNotEquals(0, g.awaitExit(30_000));
        assertTrue(g.sawLine("unknown attach mode 'shared'; expected one of native, native-or-generic, dispatcher"), g.output());
    }

    /** Whether this kernel loads BPF extension programs; with {@link #REQUIRE_DISPATCHER}=1 it must. */
    static boolean extensionsLoad() {
        XdpDispatcher.ExtensionSupport support = XdpDispatcher.probeExtensions();
        if ("1".equals(System.getenv(REQUIRE_DISPATCHER))) {
            assertTrue(support.supported(), () -> REQUIRE_DISPATCHER + "=1, but this kernel (" + System.getProperty("os.version")
                    + ") refuses BPF extension programs (errno " + support.errno() + "), so the dispatcher cannot attach:\n" + support.log());
        }
        return support.supported();
    }

    @Test
    void beside_xdpFilter() throws Exception {
        boolean extensions = extensionsLoad();
        xdpTool("xdp-filter", "load", "da", "--mode", "native");
        try {
            String before = xdpTool("xdp-loader", "status", "da");
            assertEquals(extensions, before.contains(XdpDispatcher.DISPATCHER_PROGRAM),
                    () -> "probe says extensions " + (extensions ? "load" : "are refused") + "; xdp-loader status:\n" + before);
            String filterLink = link("da");
            try (GatewayProcess g = GatewayProcess.startKeepingMounts(NS, config, List.of("--attach", "dispatcher"))) {
                if (extensions) {
                    g.awaitReady(GatewayLifecycleTest.DISPATCHER_READY_MS); // CI runs this under an emulated CPU
                    String status = xdpTool("xdp-loader", "status");
                    assertTrue(status.contains("xaf_gateway") && status.contains("xdpfilt_"), status);
                    // under nsenter --net, as the gateway: libxdp finds a dispatcher's programs through its pins
                    String gatewayStatus = xdpTool(Netns.javaProcessBuilder(null, List.of(), Main.class.getName(),
                            List.of("gateway", "status", "--config", config.toString())).command().toArray(String[]::new));
                    assertTrue(gatewayStatus.contains("native, dispatcher"), gatewayStatus);
                    assertEquals(143, g.stop(), g.output()); // SIGTERM: the status a stopped gateway exits with
                    String after = xdpTool("xdp-loader", "status", "da");
                    assertTrue(after.contains("xdpfilt_") && !after.contains("xaf_gateway"), "the filter stays:\n" + after);
                } else {
                    assertEquals(1, g.awaitExit(60_000));
                    assertTrue(g.sawLine("cannot start: this kernel refuses BPF extension (freplace) programs, which"
                            + " libxdp's multiprog dispatcher needs"), g.output());
                    assertEquals(filterLink, link("da"), "xdp-filter's program is still there, alone");
                    assertFalse(link("db").contains("xdp"), "nothing of the gateway's on db: " + link("db"));
                }
            }
        } finally {
            xdpTool("xdp-filter", "unload", "--all");
        }
    }
}
