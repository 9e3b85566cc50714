package io.xaforward.gateway;

import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.SharedLayouts;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** What a config route becomes in the XDP program's route map. */
class GatewayServiceRouteTest {
    static final byte[] MAC_A = {2, 0, 0, 0, 0, 0x0A}, MAC_B = {2, 0, 0, 0, 0, 0x0B};

    @Test
    void aConfigRouteKeepsItsSourcePortSpan() {
        GatewayConfig c = GatewayConfigParser.parse("""
                ports:
                  - {interface: gw-a, form: ipv4}
                  - {interface: gw-b, form: ipv6}
                routes:
                  - {id: 0x10, job: 1, token: 2, egress: gw-b, ingress: [gw-a], dst-mac: 02:00:00:00:00:01,
                     src-ip: "fd00::1", dst-ip: "fd00::2", src-port: 9460, src-port-span: 4}
                  - {id: 0x11, job: 1, token: 2, egress: gw-a, dst-mac: 02:00:00:00:00:02, src-ip: 10.0.0.1, dst-ip: 10.0.0.2}
                """, "gw.yaml");
        Map<String, byte[]> macs = Map.of("gw-a", MAC_A, "gw-b", MAC_B);
        Route spread = GatewayService.toRoute(c, c.routes().get(0), macs);
        assertEquals(SharedLayouts.FORM_IPV6, spread.egressForm());
        assertEquals(1, spread.txSlot());
        assertEquals(1L, spread.ingressMask());
        assertEquals(9460, spread.srcPort());
        assertEquals(4, spread.srcPortSpan());
        assertArrayEquals(MAC_B, spread.srcMac(), "the egress port's own MAC");
        Route plain = GatewayService.toRoute(c, c.routes().get(1), macs);
        assertEquals(9450, plain.srcPort());
        assertEquals(1, plain.srcPortSpan(), "no src-port-span: one port");
    }
}
