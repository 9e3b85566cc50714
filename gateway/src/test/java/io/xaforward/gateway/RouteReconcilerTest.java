package io.xaforward.gateway;

import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.XafDataplane;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Reloads against the XDP program's real route map (loaded, not attached: needs root, as CI runs): the result is
 * the wanted set exactly, whatever the map held, and a write that fails half-way leaves the map as it was.
 */
class RouteReconcilerTest {
    static final byte[] MAC_A = {2, 0, 0, 0, 0, 1}, MAC_B = {2, 0, 0, 0, 0, 2};

    static Route route(int slot, byte[] dstMac) {
        return Route.forward(slot, 2, 0, 7, 0x1234, 0x00010000, MAC_A, dstMac, null, null, 9450, 9450);
    }

    static Map<Integer, Route> contents(XafDataplane dp) {
        Map<Integer, Route> m = new HashMap<>();
        for (int id : dp.routeIds()) m.put(id, dp.route(id));
        return m;
    }

    @Test
    void reconcilesAgainstWhatTheMapReallyHolds() {
        try (XafDataplane dp = XafDataplane.load()) {
            dp.putRoute(1, route(0, MAC_A));
            dp.putRoute(99, route(1, MAC_A)); // left behind by an earlier, failed reload: in no config
            Map<Integer, Route> wanted = new LinkedHashMap<>();
            wanted.put(1, route(0, MAC_B));
            wanted.put(2, route(1, MAC_B));
            RouteReconciler.Result r = RouteReconciler.apply(RouteTable.of(dp), wanted);
            assertEquals(new RouteReconciler.Result(1, 1, 1), r);
            assertEquals(wanted, contents(dp));
        }
    }

    @Test
    void aFailedWriteRollsEveryChangeBack() {
        try (XafDataplane dp = XafDataplane.load()) {
            dp.putRoute(1, route(0, MAC_A));
            dp.putRoute(2, route(0, MAC_A));
            dp.putRoute(3, route(0, MAC_A));
            Map<Integer, Route> before = contents(dp);
            RouteTable real = RouteTable.of(dp);
            // The third write fails (as a full map or a kernel error would), after an add and a change went in.
            RouteTable failing = new RouteTable() {
                int writes;
                @Override public List<Integer> ids() { return real.ids(); }
                @Override public Route get(int id) { return real.get(id); }
                @Override public void put(int id, Route route) {
                    if (++writes == 3) throw new IllegalStateException("bpf_map_update_elem: -E2BIG");
                    real.put(id, route);
                }
                @Override public boolean delete(int id) { return real.delete(id); }
                @Override public int capacity() { return real.capacity(); }
            };
            Map<Integer, Route> wanted = new LinkedHashMap<>();
            wanted.put(1, route(1, MAC_B)); // changed
            wanted.put(10, route(1, MAC_B)); // added
            wanted.put(11, route(1, MAC_B)); // fails
            var e = assertThrows(IllegalStateException.class, () -> RouteReconciler.apply(failing, wanted));
            assertTrue(e.getMessage().contains("previous routes restored"), e.getMessage());
            assertEquals(before, contents(dp), "the map holds exactly what it held before the reload");
        }
    }

    @Test
    void moreRoutesThanTheMapHoldsIsRejectedBeforeAnyWrite() {
        try (XafDataplane dp = XafDataplane.load()) {
            dp.putRoute(1, route(0, MAC_A));
            RouteTable real = RouteTable.of(dp);
            RouteTable small = new RouteTable() {
                @Override public List<Integer> ids() { return real.ids(); }
                @Override public Route get(int id) { return real.get(id); }
                @Override public void put(int id, Route route) { real.put(id, route); }
                @Override public boolean delete(int id) { return real.delete(id); }
                @Override public int capacity() { return 2; }
            };
            Map<Integer, Route> wanted = Map.of(5, route(0, MAC_B), 6, route(0, MAC_B), 7, route(0, MAC_B));
            var e = assertThrows(IllegalArgumentException.class, () -> RouteReconciler.apply(small, wanted));
            assertEquals("3 routes, more than the 2 the route map holds", e.getMessage());
            assertEquals(Map.of(1, route(0, MAC_A)), contents(dp));
        }
    }
}
