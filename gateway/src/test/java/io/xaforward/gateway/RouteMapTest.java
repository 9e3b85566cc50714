package io.xaforward.gateway;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The engines' route map agrees with a HashMap, through growth and overwrites, and its lookups allocate nothing. */
class RouteMapTest {
    record Route(int networkId) {}

    @Property(tries = 200)
    void behavesLikeAMap(@ForAll @Size(max = 300) List<Integer> keys, @ForAll @Size(max = 50) List<Integer> probes) {
        RouteMap<Route> table = new RouteMap<>();
        Map<Integer, Route> expected = new HashMap<>();
        for (int k : keys) {
            Route r = new Route(k);
            table.put(k, r);
            expected.put(k, r);
        }
        assertEquals(expected.size(), table.size());
        for (int k : keys) assertSame(expected.get(k), table.get(k));
        for (int k : probes) assertSame(expected.get(k), table.get(k));
    }

    @Test
    void collidingKeysStayApart() {
        RouteMap<Route> table = new RouteMap<>();
        // keys that differ only above the bits the slot function keeps collide in the first probe
        for (int i = 0; i < 1000; i++) table.put(i << 24 | 0x55, new Route(i << 24 | 0x55));
        for (int i = 0; i < 1000; i++) assertEquals(i << 24 | 0x55, table.get(i << 24 | 0x55).networkId());
        assertNull(table.get(0x56));
        assertEquals(256, table.size(), "i << 24 wraps after 256 distinct values");
    }

    @Test
    void refusesANullRoute() {
        assertThrows(IllegalArgumentException.class, () -> new RouteMap<Route>().put(1, null));
    }

    @Test
    void lookupsAllocateNothing() {
        RouteMap<Route> table = new RouteMap<>();
        for (int i = 0; i < 500; i++) table.put(i * 7919, new Route(i * 7919));
        var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long sink = lookups(table); // warm up: the JIT's own first calls may allocate
        long before = mx.getCurrentThreadAllocatedBytes();
        sink += lookups(table);
        long allocated = mx.getCurrentThreadAllocatedBytes() - before;
        // one object per lookup would be 3.2 MB; the bound leaves room for the JIT and the measurement itself
        assertTrue(allocated < 4096, allocated + " bytes allocated by 200000 lookups (sink " + sink + ")");
    }

    private static long lookups(RouteMap<Route> table) {
        long found = 0;
        for (int i = 0; i < 200_000; i++) if (table.get(i * 7919 % 5_000_000) != null) found++;
        return found;
    }
}
