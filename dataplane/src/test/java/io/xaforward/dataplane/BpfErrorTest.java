package io.xaforward.dataplane;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Failures must explain themselves: errno, strerror text, the object/map/interface involved, the verifier log. */
class BpfErrorTest {

    @Test
    void missingObjectFileNamesPathAndEnoent() {
        Path missing = Path.of("/nonexistent/xaf-missing.bpf.o");
        BpfException e = assertThrows(BpfException.class, () -> BpfObject.open(missing));
        assertEquals(2, e.errno());
        assertEquals("bpf_object__open_file('/nonexistent/xaf-missing.bpf.o'): No such file or directory (errno 2)", e.getMessage());
    }

    @Test
    void missingClasspathResource() {
        BpfException e = assertThrows(BpfException.class, () -> BpfObject.openResource("bpf/does-not-exist.bpf.o"));
        assertEquals(2, e.errno());
        assertTrue(e.getMessage().contains("bpf/does-not-exist.bpf.o"), e.getMessage());
    }

    @Test
    void verifierRejectionCarriesTheVerifierLog(@TempDir Path dir) throws IOException {
        Path src = dir.resolve("bad.bpf.c");
        Files.writeString(src, """
                #include <linux/bpf.h>
                #include <bpf/bpf_helpers.h>
                SEC("xdp")
                int reads_without_bounds_check(struct xdp_md *ctx)
                {
                	void *data = (void *)(long)ctx->data;
                	return *(volatile unsigned int *)data == 7 ? XDP_DROP : XDP_PASS;
                }
                char _license[] SEC("license") = "GPL";
                """);
        Path obj = dir.resolve("bad.bpf.o");
        Sh.run("clang", "-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c", src.toString(), "-o", obj.toString());
        try (BpfObject o = BpfObject.open(obj)) {
            BpfException e = assertThrows(BpfException.class, o::load);
            assertEquals(13, e.errno(), e.getMessage());
            assertTrue(e.verifierLog().contains("invalid access to packet"), () -> "log: " + e.verifierLog());
            assertTrue(e.getMessage().startsWith("bpf_object__load(" + obj + "): Permission denied (errno 13)"), e.getMessage());
            assertTrue(e.getMessage().contains("invalid access to packet"));
            assertFalse(o.isLoaded());
        }
    }

    @Test
    void unknownProgramAndMapNames() {
        try (XafDataplane dp = XafDataplane.load()) {
            BpfException p = assertThrows(BpfException.class, () -> dp.object().programFd("no_such_prog"));
            assertEquals(2, p.errno());
            assertTrue(p.getMessage().contains("'no_such_prog'"));
            BpfException m = assertThrows(BpfException.class, () -> dp.object().map("no_such_map"));
            assertTrue(m.getMessage().contains("'no_such_map'"));
        }
    }

    @Test
    void wrongKeyOrValueSizesAreRefusedBeforeTheKernelSeesThem() {
        try (XafDataplane dp = XafDataplane.load(); Arena arena = Arena.ofConfined()) {
            BpfMap ports = dp.object().map("ports");
            BpfMap routes = dp.object().map("routes");
            assertEquals(88, routes.valueSize());
            MemorySegment key = arena.allocate(4);
            MemorySegment route = arena.allocate(SharedLayouts.ROUTE);
            RouteCodec.write(Route.local(0, 1, 2), route);
            IllegalArgumentException v = assertThrows(IllegalArgumentException.class, () -> ports.update(key, route, BpfMap.ANY));
            assertEquals("map 'ports': value is 88 bytes, map needs 8 (value_size)", v.getMessage());
            IllegalArgumentException k = assertThrows(IllegalArgumentException.class, () -> routes.update(arena.allocate(8), route, BpfMap.ANY));
            assertEquals("map 'routes': key is 8 bytes, map key_size is 4", k.getMessage());
            BpfMap counters = dp.object().map("counters");
            assertThrows(IllegalArgumentException.class, () -> counters.lookup(key, arena.allocate(8)),
                    "a per-CPU map needs value_size x CPUs bytes");
        }
    }

    @Test
    void kernelErrorsCarryErrnoAndMapName() {
        try (XafDataplane dp = XafDataplane.load(); Arena arena = Arena.ofConfined()) {
            dp.putRoute(5, Route.local(0, 1, 2));
            MemorySegment key = arena.allocateFrom(ValueLayout.JAVA_INT, 5);
            MemorySegment value = arena.allocate(SharedLayouts.ROUTE);
            BpfException exists = assertThrows(BpfException.class, () -> dp.routesMap().update(key, value, BpfMap.NOEXIST));
            assertEquals(17, exists.errno());
            assertEquals("bpf_map_update_elem(map 'routes'): File exists (errno 17)", exists.getMessage());

            BpfException dev = assertThrows(BpfException.class, () -> dp.setTxPort(0, 999_999));
            assertTrue(dev.getMessage().startsWith("bpf_map_update_elem(map 'tx_ports')"), dev.getMessage());

            assertThrows(IllegalArgumentException.class, () -> dp.setTxPort(64, 1));
            assertThrows(IllegalArgumentException.class, () -> dp.setPort(1, 0, 9));
        }
    }

    @Test
    void routesRoundTripThroughTheKernelMap() {
        try (XafDataplane dp = XafDataplane.load()) {
            Route r = Route.forward(3, SharedLayouts.FORM_ID, 6, 10, 11, 12, TestFrames.mac(5), TestFrames.mac(6),
                    TestFrames.ip4(1, 2, 3, 4), TestFrames.ip4(5, 6, 7, 8), 1000, 9450);
            dp.putRoute(0xFFFF_FFFE, r);
            assertEquals(r, dp.route(0xFFFF_FFFE));
            assertNull(dp.route(1));
            assertTrue(dp.deleteRoute(0xFFFF_FFFE));
            assertFalse(dp.deleteRoute(0xFFFF_FFFE));
            assertNull(dp.route(0xFFFF_FFFE));
        }
    }

    @Test
    void closedObjectRefusesUse() {
        XafDataplane dp = XafDataplane.load();
        BpfObject o = dp.object();
        dp.close();
        assertThrows(IllegalStateException.class, () -> o.programFd(XafDataplane.PROGRAM));
        o.close(); // idempotent
    }
}
