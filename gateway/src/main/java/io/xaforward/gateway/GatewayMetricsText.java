package io.xaforward.gateway;

import io.xaforward.dataplane.Counter;
import io.xaforward.dataplane.CounterSnapshot;
import io.xaforward.dataplane.PortCounterSnapshot;
import io.xaforward.dataplane.XafDataplane;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;

/**
 * The Prometheus text that {@code xaf gateway} serves on its metrics endpoint: the XDP program's counters by outcome,
 * the per-port families every engine shares ({@link EngineMetrics}), each port's MTU and hop limit cap, the routes,
 * the reloads ({@link ReloadCounters}), and the lines others add (a route registry's state). Built afresh for every
 * scrape from what the running gateway reads out of the kernel's maps.
 */
final class GatewayMetricsText {
    private final GatewayService gateway;
    private final ReloadCounters reloads;
    private final List<Supplier<String>> extraMetrics = new CopyOnWriteArrayList<>();

    GatewayMetricsText(GatewayService gateway, ReloadCounters reloads) {
        this.gateway = gateway;
        this.reloads = reloads;
    }

    /** Adds lines (Prometheus text) to every answer. */
    void add(Supplier<String> lines) {
        extraMetrics.add(lines);
    }

    /** Counters in the Prometheus text format. */
    String render() {
        CounterSnapshot s = gateway.counters();
        StringBuilder b = new StringBuilder(2048);
        b.append("# HELP xaf_rx_packets_total XAF frames received by the XDP program (each also counts once under an outcome).\n")
                .append("# TYPE xaf_rx_packets_total counter\nxaf_rx_packets_total ").append(s.packets(Counter.RX_XAF)).append('\n');
        b.append("# HELP xaf_rx_bytes_total Bytes of the XAF frames received by the XDP program.\n")
                .append("# TYPE xaf_rx_bytes_total counter\nxaf_rx_bytes_total ").append(s.bytes(Counter.RX_XAF)).append('\n');
        b.append("# HELP xaf_packets_total Frames seen by the XAForward XDP program, by outcome.\n");
        b.append("# TYPE xaf_packets_total counter\n");
        for (Counter c : Counter.values()) {
            if (c == Counter.RX_XAF) continue;
            b.append("xaf_packets_total{outcome=\"").append(c.name().toLowerCase(Locale.ROOT)).append("\"} ").append(s.packets(c)).append('\n');
        }
        b.append("# HELP xaf_bytes_total Bytes of the frames seen by the XAForward XDP program, by outcome.\n");
        b.append("# TYPE xaf_bytes_total counter\n");
        for (Counter c : Counter.values()) {
            if (c == Counter.RX_XAF) continue;
            b.append("xaf_bytes_total{outcome=\"").append(c.name().toLowerCase(Locale.ROOT)).append("\"} ").append(s.bytes(c)).append('\n');
        }
        appendPortCounters(b, gateway.portCounters(), gateway.config().ports());
        b.append("# HELP xaf_port_mtu_bytes The MTU the gateway applies to frames leaving by the port (read at start and on reload).\n")
                .append("# TYPE xaf_port_mtu_bytes gauge\n");
        for (GatewayConfig.PortConfig port : gateway.config().ports()) {
            b.append("xaf_port_mtu_bytes{port=\"").append(port.iface()).append("\"} ").append(gateway.portMtu(port.iface())).append('\n');
        }
        b.append("# HELP xaf_port_max_hop_limit The hop limit cap the data plane applies to frames arriving on the port (max-hop-limit).\n")
                .append("# TYPE xaf_port_max_hop_limit gauge\n");
        Map<Integer, XafDataplane.PortEntry> portMap = gateway.portEntries();
        for (GatewayConfig.PortConfig port : gateway.config().ports()) {
            XafDataplane.PortEntry e = portMap.get(gateway.ifindex(port.iface()));
            b.append("xaf_port_max_hop_limit{port=\"").append(port.iface()).append("\"} ").append(e == null ? 0 : e.maxHopLimit()).append('\n');
        }
        b.append("# HELP xaf_routes Routes programmed.\n# TYPE xaf_routes gauge\nxaf_routes ").append(gateway.config().routes().size()).append('\n');
        ReloadCounters.Snapshot r = reloads.snapshot();
        b.append("# HELP xaf_config_reloads_total Successful config reloads.\n# TYPE xaf_config_reloads_total counter\n")
                .append("xaf_config_reloads_total ").append(r.reloads()).append('\n');
        b.append("# HELP xaf_config_reload_failures_total Config reloads rejected (the running routes stayed).\n")
                .append("# TYPE xaf_config_reload_failures_total counter\n")
                .append("xaf_config_reload_failures_total ").append(r.failures()).append('\n');
        b.append("# HELP xaf_config_file_refusals_total Config reloads refused because the file failed its owner, mode or"
                + " symbolic-link check (also counted in xaf_config_reload_failures_total).\n")
                .append("# TYPE xaf_config_file_refusals_total counter\n")
                .append("xaf_config_file_refusals_total ").append(r.fileRefusals()).append('\n');
        b.append("# HELP xaf_config_last_reload_successful Whether the last reload attempt was applied (1) or rejected (0).\n")
                .append("# TYPE xaf_config_last_reload_successful gauge\nxaf_config_last_reload_successful ").append(r.lastSuccessful() ? 1 : 0).append('\n');
        b.append("# HELP xaf_config_last_reload_attempt_timestamp_seconds When the last reload was attempted (Unix time; 0: never).\n")
                .append("# TYPE xaf_config_last_reload_attempt_timestamp_seconds gauge\nxaf_config_last_reload_attempt_timestamp_seconds ")
                .append((long) r.lastAttemptEpochSeconds()).append('\n');
        b.append("# HELP xaf_config_last_reload_success_timestamp_seconds When the running config was applied (Unix time).\n")
                .append("# TYPE xaf_config_last_reload_success_timestamp_seconds gauge\nxaf_config_last_reload_success_timestamp_seconds ")
                .append((long) r.lastSuccessEpochSeconds()).append('\n');
        for (Supplier<String> extra : extraMetrics) b.append(extra.get());
        return b.toString();
    }

    /** The per-port families of EngineMetrics, from the XDP program's per-port counters (by each port's slot). */
    static void appendPortCounters(StringBuilder b, PortCounterSnapshot p, List<GatewayConfig.PortConfig> ports) {
        EngineMetrics.appendPortCounters(b, ports, (i, f) -> {
            int slot = ports.get(i).slot();
            return switch (f) {
                case RX_PACKETS -> p.rxPackets(slot);
                case RX_BYTES -> p.rxBytes(slot);
                case TX_PACKETS -> p.txPackets(slot);
                case TX_BYTES -> p.txBytes(slot);
                case TX_TOO_BIG -> p.txTooBig(slot);
            };
        });
    }
}
