package io.xaforward.dataplane;

import io.xaforward.dataplane.sys.PacketSocket;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;

import static io.xaforward.dataplane.GoldenFixtures.*;
import static io.xaforward.dataplane.TestFrames.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code attach: dispatcher}: the gateway beside xdp-tools' xdp-filter on one port, through libxdp's multiprog
 * dispatcher, in a namespace made here.
 *
 * <p>The dispatcher needs a kernel that loads BPF extension (freplace) programs. Whether this kernel does is asked
 * twice, independently: our probe ({@link XdpDispatcher#probeExtensions}) and xdp-tools itself (xdp-filter loads
 * through a dispatcher where it can and alone where it cannot); the two must agree. Where extensions load, the
 * gateway must forward XAF frames while the filter drops what its rule names, and a detach must leave the filter; where
 * they do not (the kernel of the development machines, 6.18 "fc", answers EPERM even to root), the gateway must refuse
 * with an error naming the cause and leave the interface exactly as it found it. Both branches have run: the refusal
 * on 6.18, the shared port on Linux 6.1 (Debian 12's kernel in a VM, the same classes over 9p).
 */
class DispatcherTest {
    private static final int XDP_FILTER_PRIORITY = 10;
    /**
     * Set to 1 where the kernel is known to load BPF extension programs (CI's Debian 12 VM, .ci/dispatcher-vm): a
     * refusal then fails these tests instead of sending them down their refusal branch (the same switch as the cli's
     * GatewayDispatcherTest).
     */
    static final String REQUIRE_DISPATCHER = "XAF_REQUIRE_DISPATCHER";

    /** The kernel's answer to an extension program; with {@link #REQUIRE_DISPATCHER}=1 it must be a yes. */
    static XdpDispatcher.ExtensionSupport probeExtensions() {
        XdpDispatcher.ExtensionSupport support = XdpDispatcher.probeExtensions();
        if ("1".equals(System.getenv(REQUIRE_DISPATCHER))) {
            assertTrue(support.supported(), () -> REQUIRE_DISPATCHER + "=1, but this kernel (" + System.getProperty("os.version")
                    + ") refuses BPF extension programs (errno " + support.errno() + "), so the dispatcher cannot attach:\n" + support.log());
        }
        return support;
    }

    static Path compiledObject(String resource) throws Exception {
        return Path.of(DispatcherTest.class.getClassLoader().getResource(resource).toURI());
    }

    @Test
    void libxdpReadsTheGatewaysRunConfig() throws Exception {
        XdpDispatcher.Component gw = XdpDispatcher.runConfig(compiledObject(XafDataplane.OBJECT_RESOURCE));
        assertEquals(XafDataplane.PROGRAM, gw.name());
        assertEquals(20, gw.priority(), "priority from .xdp_run_config (libxdp's default would be 50)");
        assertTrue(gw.chainCallOnPass(), "frames the gateway passes go on to the next program");
        // xdp-filter, the firewall of xdp-tools, runs at 10: before the gateway, so its drops apply to XAF traffic too
        XdpDispatcher.Component filter = XdpDispatcher.runConfig(Path.of("/usr/lib/x86_64-linux-gnu/bpf/xdpfilt_dny_udp.o"));
        assertEquals(XDP_FILTER_PRIORITY, filter.priority());
        assertTrue(filter.priority() < gw.priority());
    }

    @Test
    void aMissingLibxdpIsNamedWithThePackageToInstall() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> LibXdp.load("libxdp-not-installed.so.1"));
        assertTrue(e.getMessage().startsWith("libxdp-not-installed.so.1 (libxdp, from xdp-tools) cannot be loaded"), e.getMessage());
        assertTrue(e.getMessage().contains("apt-get install libxdp1 xdp-tools"), e.getMessage());
        assertTrue(e.getMessage().contains("use 'attach: native'"), e.getMessage());
    }

    static String xdp(NetNs ns, String... args) {
        String[] cmd = new String[args.length + 2];
        cmd[0] = "nsenter"; cmd[1] = "--net=/run/netns/" + ns.name; // keeps /sys/fs/bpf, where libxdp pins
        System.arraycopy(args, 0, cmd, 2, args.length);
        return Sh.run(cmd);
    }

    @Test
    void theGatewaySharesAPortWithXdpFilter() throws Throwable {
        XdpDispatcher.ExtensionSupport support = probeExtensions();
        try (NetNs ns = NetNs.create("xafdd-" + ProcessHandle.current().pid(),
                n -> n.vethPair("da0", "da1").vethPair("db0", "db1").disableIpv6())) {
            xdp(ns, "xdp-filter", "load", "da1", "--mode", "native");
            try {
                int da1 = ns.call(() -> LibBpf.ifNameToIndex("da1"));
                XdpDispatcher.Component lone = ns.call(() -> XdpDispatcher.loneProgram(da1));
                List<XdpDispatcher.Component> before = ns.call(() -> XdpDispatcher.components(da1));
                // xdp-tools' own answer: a dispatcher where the kernel loads extensions, a lone program where not
                assertEquals(support.supported(), lone == null, () -> "probe " + support + ", xdp-filter alone: " + lone);
                if (support.supported()) {
                    assertEquals(1, before.size(), before::toString);
                    sharedPort(ns, before.getFirst());
                } else {
                    refused(ns, support, lone);
                }
            } finally {
                xdp(ns, "xdp-filter", "unload", "--all");
            }
        }
    }

    /** Extensions refused: a clear error, the filter untouched, nothing of the gateway's on the interface. */
    private static void refused(NetNs ns, XdpDispatcher.ExtensionSupport support, XdpDispatcher.Component filter) throws Throwable {
        assertTrue(filter.name().startsWith("xdpfilt_"), filter::toString);
        ns.call(() -> {
            try (XafDataplane dp = XafDataplane.loadForDispatcher()) {
                BpfException e = assertThrows(BpfException.class, () -> dp.attachThroughDispatcher("da1"));
                assertEquals(support.errno(), e.errno());
                assertTrue(e.getMessage().startsWith("this kernel refuses BPF extension (freplace) programs, which libxdp's"
                        + " multiprog dispatcher needs"), e.getMessage());
                assertTrue(e.getMessage().contains("use 'attach: native'"), e.getMessage());
                assertTrue(dp.dispatcherAttachments().isEmpty());
                int da1 = LibBpf.ifNameToIndex("da1");
                assertEquals(filter, XdpDispatcher.loneProgram(da1), "xdp-filter's program still runs, alone");
                assertEquals(filter.id(), XdpAttachment.attachedProgramId(da1, XdpAttachment.Mode.NATIVE));
            }
            return null;
        });
    }

    /** Extensions load: filter at 10, gateway at 20, both on da1; XAF frames forwarded unless the filter's rule names them. */
    private static void sharedPort(NetNs ns, XdpDispatcher.Component filter) throws Throwable {
        xdp(ns, "xdp-filter", "port", "9", "--proto", "udp"); // a rule that does not match XAF traffic
        ns.call(() -> {
            try (XafDataplane dp = XafDataplane.loadForDispatcher(); XafDataplane peer = XafDataplane.load()) {
                int da1 = LibBpf.ifNameToIndex("da1"), db1 = LibBpf.ifNameToIndex("db1");
                dp.setPort(da1, IN_SLOT, SharedLayouts.FORM_IPV4);
                dp.setTxPort(TX_SLOT, db1);
                dp.putRoute(NET, route(SharedLayouts.FORM_IPV6));
                DispatcherAttachment a = dp.attachThroughDispatcher("da1");
                peer.attach("db0", false); // a veth only accepts redirected XDP frames when its peer runs XDP

                List<XdpDispatcher.Component> chain = XdpDispatcher.components(da1);
                assertEquals(2, chain.size(), chain::toString);
                assertEquals(filter.name(), chain.get(0).name(), "the filter runs first");
                assertEquals(new XdpDispatcher.Component(a.programId(), XafDataplane.PROGRAM, 20, true), chain.get(1));
                String status = xdp(ns, "xdp-loader", "status", "da1");
                assertTrue(status.contains(XafDataplane.PROGRAM) && status.contains(filter.name())
                        && status.contains(XdpDispatcher.DISPATCHER_PROGRAM), status);
                // the gateway's maps are the ones the dispatcher's extension uses
                assertTrue(KernelObjects.program(KernelObjects.programFdById(a.programId())).mapIds()
                        .contains(KernelObjects.map(dp.routesMap().fd()).id()));

                Xaf x = Xaf.of(9, NET, JOB, TOKEN, payload(1001, 77));
                byte[] frame = ingress(SharedLayouts.FORM_IPV4, x.bytes());
                byte[] expected = expectedEgress(SharedLayouts.FORM_IPV6, x.withHop(8).bytes());
                assertArrayEquals(expected, send(dp, frame, expected.length), "forwarded through the dispatcher");

                xdp(ns, "xdp-filter", "port", Integer.toString(XAF_PORT), "--proto", "udp"); // now the filter drops XAF traffic
                CounterSnapshot before = dp.counters();
                assertNull(send(dp, frame, expected.length), "the filter dropped it");
                assertEquals(0, dp.counters().minus(before).packets(Counter.RX_XAF), "before the gateway saw it");

                a.detach();
                assertEquals(List.of(filter.name()), XdpDispatcher.components(da1).stream().map(XdpDispatcher.Component::name).toList(),
                        "the filter stays after the gateway leaves");
            }
            return null;
        });
    }

    /** Sends {@code frame} into da0 and returns the first frame of {@code length} IPv6 bytes out of db0 within 2 s, or null. */
    private static byte[] send(XafDataplane dp, byte[] frame, int length) {
        try (PacketSocket tx = new PacketSocket("da0", PacketSocket.ETH_P_ALL);
             PacketSocket rx = new PacketSocket("db0", PacketSocket.ETH_P_ALL);
             Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(65536);
            tx.send(arena.allocateFrom(ValueLayout.JAVA_BYTE, frame), frame.length);
            long deadline = System.nanoTime() + 2_000_000_000L;
            while (System.nanoTime() < deadline) {
                int n = rx.receive(in, 200);
                byte[] f = n < 0 ? null : in.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
                if (f != null && f.length == length && getShort(f, 12) == ETH_IPV6) return f;
            }
            return null;
        }
    }
    /**
     * The safety net behind the probe: where libxdp cannot build a dispatcher it attaches the program alone; the
     * attachment must notice, detach it and fail, leaving the interface empty. Skipping the probe (the package-private
     * attach) reaches that path on a kernel that refuses extensions; elsewhere the same call must simply succeed.
     */
    @Test
    void aLoneFallbackOfLibxdpIsDetachedAgain() throws Throwable {
        boolean supported = probeExtensions().supported();
        try (NetNs ns = NetNs.create("xafdl-" + ProcessHandle.current().pid(), n -> n.vethPair("dl0", "dl1"))) {
            ns.call(() -> {
                try (XafDataplane dp = XafDataplane.loadForDispatcher()) {
                    BpfObject second = BpfObject.openResource(XafDataplane.OBJECT_RESOURCE);
                    for (String name : XafDataplane.MAP_NAMES) second.reuseMap(name, dp.map(name).fd());
                    try (DispatcherAttachment.Program program = new DispatcherAttachment.Program(second)) {
                        int ifindex = LibBpf.ifNameToIndex("dl0");
                        if (supported) {
                            DispatcherAttachment a = DispatcherAttachment.attach(program, "dl0", KernelObjects.map(dp.routesMap().fd()).id());
                            assertEquals(XafDataplane.PROGRAM, XdpDispatcher.components(ifindex).getFirst().name());
                            a.detach();
                        } else {
                            BpfException e = assertThrows(BpfException.class, () -> DispatcherAttachment.attach(program, "dl0", KernelObjects.map(dp.routesMap().fd()).id()));
                            assertEquals(95, e.errno(), e::getMessage);
                            assertTrue(e.getMessage().contains("libxdp attached the gateway alone, without a dispatcher"), e.getMessage());
                        }
                        assertEquals(0, XdpAttachment.attachedProgramId(ifindex, XdpAttachment.Mode.NATIVE), "nothing left on dl0");
                    }
                }
                return null;
            });
        }
    }
}
