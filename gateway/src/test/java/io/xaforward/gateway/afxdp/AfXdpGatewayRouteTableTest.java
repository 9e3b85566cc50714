package io.xaforward.gateway.afxdp;

import io.xaforward.protocol.NetworkForm;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/** The AF_XDP gateway's identifier table agrees with a HashMap, through growth and overwrites; counters parse back. */
class AfXdpGatewayRouteTableTest {
    private static AfXdpGatewayForwarder.Route route(int id) {
        return new AfXdpGatewayForwarder.Route(id, null, NetworkForm.IPV4, 0, 1, 2, null);
    }

    @Property(tries = 200)
    void behavesLikeAMap(@ForAll @Size(max = 300) List<Integer> keys, @ForAll @Size(max = 50) List<Integer> probes) {
        AfXdpGatewayForwarder.RouteTable table = new AfXdpGatewayForwarder.RouteTable();
        Map<Integer, AfXdpGatewayForwarder.Route> expected = new HashMap<>();
        for (int k : keys) {
            AfXdpGatewayForwarder.Route r = route(k);
            table.put(k, r);
            expected.put(k, r);
        }
        assertEquals(expected.size(), table.size());
        for (int k : keys) assertSame(expected.get(k), table.get(k));
        for (int k : probes) assertSame(expected.get(k), table.get(k));
    }

    @Test
    void collidingKeysStayApart() {
        AfXdpGatewayForwarder.RouteTable table = new AfXdpGatewayForwarder.RouteTable();
        // keys that differ only above the bits the slot function keeps collide in the first probe
        for (int i = 0; i < 1000; i++) table.put(i << 24 | 0x55, route(i << 24 | 0x55));
        for (int i = 0; i < 1000; i++) assertEquals(i << 24 | 0x55, table.get(i << 24 | 0x55).networkId());
        assertNull(table.get(0x56));
        assertEquals(256, table.size(), "i << 24 wraps after 256 distinct values");
    }

    @Test
    void countersLineParsesBack() {
        Map<String, Long> c = AfXdpGatewayMain.parseCounters(AfXdpGatewayMain.COUNTERS_PREFIX + "forwarded=900 drop_no_route=3 non_xaf=0");
        assertEquals(Map.of("forwarded", 900L, "drop_no_route", 3L, "non_xaf", 0L), c);
    }
}
