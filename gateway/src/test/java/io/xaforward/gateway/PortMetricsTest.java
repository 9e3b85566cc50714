package io.xaforward.gateway;

import io.xaforward.dataplane.PortCounterSnapshot;
import io.xaforward.dataplane.SharedLayouts;
import io.xaforward.protocol.NetworkForm;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * The per-port families of the metrics endpoint: one sample per configured port, read from that port's slot; the
 * Java engines serve the same names from their own counters.
 */
class PortMetricsTest {
    @Test
    void eachConfiguredPortIsExposedWithItsSlotsCounters() {
        long[] rxP = new long[SharedLayouts.MAX_PORTS], rxB = rxP.clone(), txP = rxP.clone(), txB = rxP.clone(), big = rxP.clone();
        big[5] = 2;
        rxP[0] = 10; rxB[0] = 1000; txP[0] = 3; txB[0] = 330;
        rxP[5] = 4; rxB[5] = 440; txP[5] = 9; txB[5] = 990;
        rxP[7] = 99; // a slot no configured port uses: not exposed
        List<GatewayConfig.PortConfig> ports = List.of(new GatewayConfig.PortConfig("dc-a0", NetworkForm.IPV4, 0),
                new GatewayConfig.PortConfig("dc-b0", NetworkForm.ID, 5));
        StringBuilder b = new StringBuilder();
        GatewayService.appendPortCounters(b, new PortCounterSnapshot(rxP, rxB, txP, txB, big), ports);
        Map<String, Long> m = GatewayMetrics.parse(b.toString());
        assertEquals(10L, m.get("xaf_port_rx_packets_total{dc-a0}"), b::toString);
        assertEquals(1000L, m.get("xaf_port_rx_bytes_total{dc-a0}"));
        assertEquals(3L, m.get("xaf_port_tx_packets_total{dc-a0}"));
        assertEquals(330L, m.get("xaf_port_tx_bytes_total{dc-a0}"));
        assertEquals(4L, m.get("xaf_port_rx_packets_total{dc-b0}"));
        assertEquals(440L, m.get("xaf_port_rx_bytes_total{dc-b0}"));
        assertEquals(9L, m.get("xaf_port_tx_packets_total{dc-b0}"));
        assertEquals(990L, m.get("xaf_port_tx_bytes_total{dc-b0}"));
        assertEquals(0L, m.get("xaf_port_tx_too_big_packets_total{dc-a0}"));
        assertEquals(2L, m.get("xaf_port_tx_too_big_packets_total{dc-b0}"));
        assertEquals(10, m.size(), m::toString);
        assertFalse(b.toString().contains(" 99\n"), "unconfigured slots stay out");
    }

    @Test
    void aJavaEngineServesTheSameNames() {
        List<GatewayConfig.PortConfig> ports = List.of(new GatewayConfig.PortConfig("dc-a0", NetworkForm.IPV4, 0),
                new GatewayConfig.PortConfig("dc-b0", NetworkForm.ID, 5));
        PortTraffic a = new PortTraffic(), b = new PortTraffic();
        a.received(100);
        a.received(50);
        b.sent(140);
        b.tooBig();
        long[] outcomes = {7, 0, 3};
        String text = EngineMetrics.javaEngine("test", new String[]{"forwarded", "drop_malformed", "drop_send"}, i -> outcomes[i],
                ports, List.of(a, b));
        Map<String, Long> m = GatewayMetrics.parse(text);
        assertEquals(7L, m.get("xaf_packets_total{forwarded}"), text);
        assertEquals(0L, m.get("xaf_packets_total{drop_malformed}"));
        assertEquals(3L, m.get("xaf_packets_total{drop_send}"));
        assertEquals(2L, m.get("xaf_port_rx_packets_total{dc-a0}"));
        assertEquals(150L, m.get("xaf_port_rx_bytes_total{dc-a0}"));
        assertEquals(1L, m.get("xaf_port_tx_packets_total{dc-b0}"));
        assertEquals(140L, m.get("xaf_port_tx_bytes_total{dc-b0}"));
        assertEquals(1L, m.get("xaf_port_tx_too_big_packets_total{dc-b0}"));
        assertEquals(0L, m.get("xaf_port_tx_too_big_packets_total{dc-a0}"));
        assertEquals(3 + 10, m.size(), m::toString);
    }
}
