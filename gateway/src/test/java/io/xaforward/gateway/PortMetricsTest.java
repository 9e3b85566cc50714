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
    /** Two ports: slot 0 and slot 5. */
    static final List<GatewayConfig.PortConfig> PORTS = List.of(new GatewayConfig.PortConfig("dc-a0", NetworkForm.IPV4, 0),
            new GatewayConfig.PortConfig("dc-b0", NetworkForm.ID, 5));

    @Test
    void eachConfiguredPortIsExposedWithItsSlotsCounters() {
        long[] rxP = new long[SharedLayouts.MAX_PORTS], rxB = rxP.clone(), txP = rxP.clone(), txB = rxP.clone(), big = rxP.clone();
        big[5] = 2;
        rxP[0] = 10; rxB[0] = 1000; txP[0] = 3; txB[0] = 330;
        rxP[5] = 4; rxB[5] = 440; txP[5] = 9; txB[5] = 990;
        rxP[7] = 99; // a slot no configured port uses: not exposed
        StringBuilder b = new StringBuilder();
        GatewayMetricsText.appendPortCounters(b, new PortCounterSnapshot(rxP, rxB, txP, txB, big), PORTS);
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
        PortTraffic a = new PortTraffic(), b = new PortTraffic();
        a.received(100);
        a.received(50);
        b.sent(140);
        b.tooBig();
        long[] outcomes = {7, 0, 3};
        String text = EngineMetrics.javaEngine("test", new String[]{"forwarded", "drop_malformed", "drop_send"}, i -> outcomes[i],
                PORTS, List.of(a, b));
        Map<String, Long> expected = new java.util.TreeMap<>(Map.of(
                "xaf_packets_total{forwarded}", 7L, "xaf_packets_total{drop_malformed}", 0L, "xaf_packets_total{drop_send}", 3L,
                "xaf_port_rx_packets_total{dc-a0}", 2L, "xaf_port_rx_bytes_total{dc-a0}", 150L,
                "xaf_port_rx_packets_total{dc-b0}", 0L, "xaf_port_rx_bytes_total{dc-b0}", 0L,
                "xaf_port_tx_packets_total{dc-a0}", 0L, "xaf_port_tx_bytes_total{dc-a0}", 0L));
        expected.putAll(Map.of("xaf_port_tx_packets_total{dc-b0}", 1L, "xaf_port_tx_bytes_total{dc-b0}", 140L,
                "xaf_port_tx_too_big_packets_total{dc-a0}", 0L, "xaf_port_tx_too_big_packets_total{dc-b0}", 1L));
        assertEquals(expected, new java.util.TreeMap<>(GatewayMetrics.parse(text)), text);
    }
}
