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
    /** A route map in memory that counts the calls the reconciler makes (each would be one bpf syscall). */
    static final class CountingTable implements RouteTable {
        final Map<Integer, Route> map = new HashMap<>();
        int idsCalls, gets, puts, deletes;

        @Override public List<Integer> ids() { idsCalls++; return List.copyOf(map.keySet()); }
        @Override public Route get(int id) { gets++; return map.get(id); }
        @Override public void put(int id, Route route) { puts++; map.put(id, route); }
        @Override public boolean delete(int id) { deletes++; return map.remove(id) != null; }
        @Override public int capacity() { return 65536; }

        void resetCounts() { idsCalls = gets = puts = deletes = 0; }
    }

    @Test
    void anUpdateWritesOnlyTheDifferenceAndNeverReadsTheMapBack() {
        CountingTable table = new CountingTable();
        for (int id = 0; id < 60_000; id++) table.map.put(id, route(id % 4, MAC_A)); // an adopted map, full of routes
        RouteReconciler reconciler = RouteReconciler.readFrom(table);
        assertEquals(1, table.idsCalls, "the map is read once, when the reconciler is made");
        assertEquals(60_000, table.gets);

        Map<Integer, Route> wanted = new HashMap<>(table.map);
        wanted.put(7, route(1, MAC_B));          // changed
        wanted.put(70_000, route(2, MAC_B));     // added
        wanted.remove(9);                        // removed
        wanted.remove(10);                       // removed
        table.resetCounts();
        assertEquals(new RouteReconciler.Result(1, 1, 2), reconciler.apply(wanted));
        assertEquals(0, table.idsCalls + table.gets, "nothing read back from the map");
        assertEquals(2, table.puts, "one write per added or changed route");
        assertEquals(2, table.deletes, "one delete per removed route");
        assertEquals(wanted, table.map);

        table.resetCounts();
        assertEquals(new RouteReconciler.Result(0, 0, 0), reconciler.apply(wanted), "the same set again changes nothing");
        assertEquals(0, table.idsCalls + table.gets + table.puts + table.deletes);
    }

    @Test
    void aFailedIncrementalUpdateLeavesTheMapAndTheViewAsBefore() {
        try (XafDataplane dp = XafDataplane.load()) {
            RouteTable real = RouteTable.of(dp);
            int[] writes = {0};
            int[] failAt = {-1};
            RouteTable failing = new RouteTable() {
                @Override public List<Integer> ids() { return real.ids(); }
                @Override public Route get(int id) { return real.get(id); }
                @Override public void put(int id, Route route) {
                    if (++writes[0] == failAt[0]) throw new IllegalStateException("bpf_map_update_elem: -ENOMEM");
                    real.put(id, route);
                }
                @Override public boolean delete(int id) { return real.delete(id); }
                @Override public int capacity() { return real.capacity(); }
            };
            RouteReconciler reconciler = RouteReconciler.readFrom(failing);
            Map<Integer, Route> first = Map.of(1, route(0, MAC_A), 2, route(0, MAC_A), 3, route(0, MAC_A));
            assertEquals(new RouteReconciler.Result(3, 0, 0), reconciler.apply(first));
            assertEquals(first, contents(dp));

            Map<Integer, Route> second = new LinkedHashMap<>();
            second.put(1, route(1, MAC_B)); // changed
            second.put(4, route(1, MAC_B)); // added, then the next write fails
            second.put(5, route(1, MAC_B));
            writes[0] = 0;
            failAt[0] = 3;
            assertThrows(IllegalStateException.class, () -> reconciler.apply(second));
            assertEquals(first, contents(dp), "the map holds exactly what it held before");
            assertEquals(first, reconciler.installed(), "and the view agrees with it");

            failAt[0] = -1;
            assertEquals(new RouteReconciler.Result(2, 1, 2), reconciler.apply(second));
            assertEquals(second, contents(dp));
        }
    }
}
