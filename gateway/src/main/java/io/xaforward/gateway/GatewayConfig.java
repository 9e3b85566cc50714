package io.xaforward.gateway;

import io.xaforward.common.ConfigWord;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.RankRegistration;

import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * What {@code xaf gateway --config FILE} runs: the interfaces the gateway attaches to (each speaking one network
 * form) and the routes keyed by network index identifier. Parsed and validated by {@link GatewayConfigParser};
 * docs/GATEWAY.md documents the file.
 */
public record GatewayConfig(AttachMode attach, Optional<MetricsEndpoint> metrics, boolean reload,
                            List<PortConfig> ports, List<RouteConfig> routes, int maxHopLimit) {

    /**
     * The default cap on the hop limit of arriving frames ({@code max-hop-limit}): a frame that arrives with more
     * is forwarded as if it carried this many (docs/PROTOCOL.md §6).
     */
    public static final int DEFAULT_MAX_HOP_LIMIT = ForwardingDecision.DEFAULT_MAX_HOP_LIMIT;

    public GatewayConfig {
        if (maxHopLimit < 2 || maxHopLimit > 255) {
            throw new IllegalArgumentException("max-hop-limit must be 2..255, was " + maxHopLimit);
        }
    }

    /** With the default hop limit cap. */
    public GatewayConfig(AttachMode attach, Optional<MetricsEndpoint> metrics, boolean reload,
                         List<PortConfig> ports, List<RouteConfig> routes) {
        this(attach, metrics, reload, ports, routes, DEFAULT_MAX_HOP_LIMIT);
    }

    public enum AttachMode implements ConfigWord {
        /** Native (driver) XDP only; fail if the interface cannot do it. */
        NATIVE,
        /** Native, and generic as an explicit, logged fallback. */
        NATIVE_OR_GENERIC,
        /**
         * Native, through libxdp's multiprog dispatcher (xdp-tools), beside other XDP programs on the same interface
         * (firewalls, load balancers); docs/DEPLOY.md, "Sharing the NIC".
         */
        DISPATCHER;

        /** Reads the config's {@code attach:} word, native, native-or-generic or dispatcher ({@link ConfigWord#parse}). */
        public static AttachMode fromName(String name) {
            return ConfigWord.parse(AttachMode.class, "attach mode", name);
        }

        @Override
        public String configName() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    public record MetricsEndpoint(String host, int port) {}

    /**
     * One attached interface; {@code slot} is its bit in a route's ingress mask and its devmap key. {@code datacenter}
     * names the data center the port faces, as its workers register it (used when routes follow the registrations).
     */
    public record PortConfig(String iface, NetworkForm form, int slot, Optional<String> datacenter) {
        public PortConfig(String iface, NetworkForm form, int slot) {
            this(iface, form, slot, Optional.empty());
        }
    }

    public enum Action { FORWARD, LOCAL }

    /**
     * One route. For {@code FORWARD}, {@code egress} names a port; MACs and addresses describe the next hop on the
     * egress network. {@code srcMac} empty means the egress interface's own MAC. {@code ingress} empty means any port
     * but the egress port (no hairpin, PROTOCOL.md §7).
     * {@code srcPortSpan} (1..{@value #MAX_SRC_PORT_SPAN}, {@code src-port-span}): the IP forms' frames leave from one of
     * that many consecutive UDP source ports from {@code srcPort}, one per flow (docs/PROTOCOL.md §7, "The egress flow").
     */
    public record RouteConfig(int networkId, int jobId, int jobToken, Action action, Optional<String> egress,
                              Optional<NetworkForm> form, List<String> ingress,
                              Optional<byte[]> srcMac, Optional<byte[]> dstMac,
                              Optional<byte[]> srcIp, Optional<byte[]> dstIp,
                              int srcPort, int srcPortSpan, int dstPort, int srcId) {}

    /** The most UDP source ports one route spreads flows over ({@code src-port-span}). */
    public static final int MAX_SRC_PORT_SPAN = RankRegistration.MAX_FLOWS;

    public Optional<PortConfig> port(String iface) {
        return ports.stream().filter(p -> p.iface().equals(iface)).findFirst();
    }
}
