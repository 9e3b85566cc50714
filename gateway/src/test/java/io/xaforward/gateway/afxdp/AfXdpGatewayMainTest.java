package io.xaforward.gateway.afxdp;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

class AfXdpGatewayMainTest {
    @Test
    void countersLineParsesBack() {
        Map<String, Long> c = AfXdpGatewayMain.parseCounters(AfXdpGatewayMain.COUNTERS_PREFIX + "forwarded=900 drop_no_route=3 non_xaf=0");
        assertEquals(Map.of("forwarded", 900L, "drop_no_route", 3L, "non_xaf", 0L), c);
    }
}
