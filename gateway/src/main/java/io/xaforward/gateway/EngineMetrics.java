package io.xaforward.gateway;

import java.util.List;
import java.util.function.IntToLongFunction;
import java.util.function.Supplier;

/**
 * The counters contract of every gateway engine: each serves its counters as Prometheus text on the {@code metrics}
 * endpoint of its gateway config, under the same names, so one reader ({@link GatewayMetrics}) reads any engine.
 * Outcomes are samples of {@code xaf_packets_total{outcome="NAME"}} (NAME as the XDP program's counters are named:
 * {@code forwarded}, {@code drop_no_route}, ...; an engine may have outcomes of its own, such as the relay's
 * {@code drop_send}); per-port traffic is the {@code xaf_port_*} families labelled with the port's interface.
 */
public final class EngineMetrics {
    /** The per-port counter families, in the order they are served. */
    public enum PortFamily {
        RX_PACKETS("xaf_port_rx_packets_total", "XAF frames received on the port."),
        RX_BYTES("xaf_port_rx_bytes_total", "Bytes of the XAF frames received on the port (ingress frame lengths)."),
        TX_PACKETS("xaf_port_tx_packets_total", "Frames forwarded out of the port."),
        TX_BYTES("xaf_port_tx_bytes_total", "Bytes of the frames forwarded out of the port (egress frame lengths)."),
        TX_TOO_BIG("xaf_port_tx_too_big_packets_total", "Frames routed out of the port but dropped: larger than its MTU (outcome drop_too_big).");

        private final String metric, help;

        PortFamily(String metric, String help) {
            this.metric = metric;
            this.help = help;
        }

        /** The metric's name. */
        public String metric() { return metric; }

        /** One port's value of this family as {@link PortTraffic} counts it. */
        long of(PortTraffic t) {
            return switch (this) {
                case RX_PACKETS -> t.rxPackets();
                case RX_BYTES -> t.rxBytes();
                case TX_PACKETS -> t.txPackets();
                case TX_BYTES -> t.txBytes();
                case TX_TOO_BIG -> t.txTooBig();
            };
        }
    }

    /** A port's value of a family: {@code ports.get(index)}'s. */
    @FunctionalInterface
    public interface PortValues {
        long value(int portIndex, PortFamily family);
    }

    private EngineMetrics() {}

    /** Appends the per-port families, one sample per port of {@code ports} labelled with its interface. */
    public static void appendPortCounters(StringBuilder b, List<GatewayConfig.PortConfig> ports, PortValues values) {
        for (PortFamily f : PortFamily.values()) {
            b.append("# HELP ").append(f.metric).append(' ').append(f.help).append('\n')
                    .append("# TYPE ").append(f.metric).append(" counter\n");
            for (int i = 0; i < ports.size(); i++)
                b.append(f.metric).append("{port=\"").append(ports.get(i).iface()).append("\"} ").append(values.value(i, f)).append('\n');
        }
    }

    /**
     * The Prometheus text of a Java engine ({@code engine}: "relay", "AF_XDP"): its outcome counters (name
     * {@code outcomes[i]}, value {@code outcome.applyAsLong(i)}) and its ports' traffic ({@code traffic.get(i)} of
     * {@code ports.get(i)}).
     */
    public static String javaEngine(String engine, String[] outcomes, IntToLongFunction outcome,
                                    List<GatewayConfig.PortConfig> ports, List<PortTraffic> traffic) {
        StringBuilder b = new StringBuilder(2048);
        b.append("# HELP xaf_packets_total Frames seen by the ").append(engine).append(" gateway, by outcome.\n")
                .append("# TYPE xaf_packets_total counter\n");
        for (int i = 0; i < outcomes.length; i++)
            b.append("xaf_packets_total{outcome=\"").append(outcomes[i]).append("\"} ").append(outcome.applyAsLong(i)).append('\n');
        appendPortCounters(b, ports, (i, f) -> f.of(traffic.get(i)));
        return b.toString();
    }

    /** Serves {@code body} on {@code config}'s metrics endpoint; null when the config has none ({@code metrics: off}). */
    public static MetricsServer serve(GatewayConfig config, Supplier<String> body) {
        return config.metrics().map(ep -> new MetricsServer(ep.host(), ep.port(), body)).orElse(null);
    }
}
