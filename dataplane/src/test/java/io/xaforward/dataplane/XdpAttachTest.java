package io.xaforward.dataplane;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Attaches the gateway to a veth pair in a namespace this test creates (native mode works on veth) and to that
 * namespace's lo (no native XDP: only the explicit generic fallback works), checking {@code ip link} each time.
 */
class XdpAttachTest {
    static NetNs ns;

    @BeforeAll
    static void makeNamespace() {
        ns = NetNs.create("xafdp-" + ProcessHandle.current().pid(), n -> n.vethPair("xa0", "xb0").up("lo"));
    }

    @AfterAll
    static void removeNamespace() {
        assertNotNull(ns, "namespace was never made");
        ns.close();
        assertFalse(Sh.run("ip", "netns", "list").contains(ns.name), "namespace removed");
    }

    static String link(String dev) { return ns.ip("-d", "link", "show", "dev", dev).lines().findFirst().orElse(""); }

    @Test
    void nativeAttachShowsXdpAndDetachRemovesIt() throws Throwable {
        ns.call(() -> {
            try (XafDataplane dp = XafDataplane.load()) {
                XdpAttachment a = dp.attach("xa0", false);
                assertEquals(XdpAttachment.Mode.NATIVE, a.mode());
                assertTrue(link("xa0").contains(" xdp "), () -> "ip link: " + link("xa0"));
                assertTrue(XdpAttachment.attachedProgramId(a.ifindex(), XdpAttachment.Mode.NATIVE) > 0);

                assertTrue(a.linkId() > 0);
                assertEquals(XdpAttachment.attachedProgramId(a.ifindex(), XdpAttachment.Mode.NATIVE), a.programId());

                BpfException busy = assertThrows(BpfException.class, () -> dp.attach("xa0", false));
                assertEquals(16, busy.errno());
                assertTrue(busy.getMessage().startsWith("bpf_link_create(BPF_XDP, ifindex " + a.ifindex() + " 'xa0', native): xa0 already runs program id "),
                        busy.getMessage());
                assertTrue(busy.getMessage().contains("through XDP link id " + a.linkId() + ": another 'xaf gateway'"), busy.getMessage());

                dp.detachAll();
                assertFalse(link("xa0").contains("xdp"), () -> "after detach: " + link("xa0"));
                assertEquals(0, XdpAttachment.attachedProgramId(a.ifindex(), XdpAttachment.Mode.NATIVE));
            }
            return null;
        });
    }

    @Test
    void aProgramAttachedWithoutALinkIsNamedInTheError() throws Throwable {
        ns.call(() -> {
            try (XafDataplane dp = XafDataplane.load()) {
                int ifindex = LibBpf.ifNameToIndex("xa0");
                // What `ip link set dev xa0 xdp obj ...` or an older gateway leaves: a netlink attachment, no link.
                assertEquals(0, LibBpf.xdpAttach(ifindex, dp.programFd(), XdpAttachment.XDP_FLAGS_DRV_MODE, java.lang.foreign.MemorySegment.NULL));
                try {
                    BpfException e = assertThrows(BpfException.class, () -> dp.attach("xa0", true));
                    assertTrue(e.getMessage().contains("xa0 already has program id "), e.getMessage());
                    assertTrue(e.getMessage().contains("('xaf_gateway') (native) attached without a link"), e.getMessage());
                    assertTrue(e.getMessage().contains("'ip link set dev xa0 xdp off'"), e.getMessage());
                    assertTrue(dp.attachments().isEmpty());
                } finally {
                    assertEquals(0, LibBpf.xdpDetach(ifindex, XdpAttachment.XDP_FLAGS_DRV_MODE, java.lang.foreign.MemorySegment.NULL));
                }
                assertFalse(link("xa0").contains("xdp"), () -> link("xa0"));
            }
            return null;
        });
    }

    @Test
    void closeDetachesEverything() throws Throwable {
        ns.call(() -> {
            try (XafDataplane dp = XafDataplane.load()) {
                dp.attach("xa0", false);
                dp.attach("xb0", false);
                assertTrue(link("xb0").contains(" xdp "), () -> link("xb0"));
            }
            assertFalse(link("xa0").contains("xdp"), () -> link("xa0"));
            assertFalse(link("xb0").contains("xdp"), () -> link("xb0"));
            return null;
        });
    }

    @Test
    void genericOnlyWhenTheCallerAllowsIt() throws Throwable {
        ns.call(() -> {
            try (XafDataplane dp = XafDataplane.load()) {
                BpfException e = assertThrows(BpfException.class, () -> dp.attach("lo", false));
                assertTrue(e.getMessage().startsWith("bpf_link_create(BPF_XDP, ifindex 1 'lo', native): "), e.getMessage());
                assertFalse(link("lo").contains("xdp"));

                XdpAttachment a = dp.attach("lo", true);
                assertEquals(XdpAttachment.Mode.GENERIC, a.mode());
                assertTrue(link("lo").contains("xdpgeneric"), () -> link("lo"));
                a.detach();
                assertFalse(link("lo").contains("xdp"), () -> link("lo"));
            }
            return null;
        });
    }

    @Test
    void missingInterfaceIsAClearError() throws Throwable {
        ns.call(() -> {
            try (XafDataplane dp = XafDataplane.load()) {
                BpfException e = assertThrows(BpfException.class, () -> dp.attach("xafdp-none0", false));
                assertEquals(19, e.errno());
                assertTrue(e.getMessage().contains("'xafdp-none0'"), e.getMessage());
                assertTrue(e.getMessage().contains("No such device"), e.getMessage());
                assertTrue(dp.attachments().isEmpty());
            }
            return null;
        });
    }
}

