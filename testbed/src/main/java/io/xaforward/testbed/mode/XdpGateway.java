package io.xaforward.testbed.mode;

import io.xaforward.gateway.GatewayMain;
import io.xaforward.gateway.GatewayMetrics;

import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * The XDP gateway in the gateway namespace: the gateway service ({@code xaf gateway}, main class
 * {@link GatewayMain}) as its own process, configured from {@link IdentifierPlan#gatewayYaml}, with its Prometheus
 * endpoint on {@value #METRICS_PORT} inside the namespace. The veth peers of the gateway ports get an XDP_PASS
 * program, without which XDP_REDIRECT between veths drops every frame.
 */
public final class XdpGateway extends ProcessGatewayRunner {
    /** Port of the gateway's metrics endpoint on 127.0.0.1 inside its namespace. */
    public static final int METRICS_PORT = 9464;

    private final PeerXdpPass peerPass = new PeerXdpPass();
    private String namespace;

    @Override
    public GatewayMode mode() {
        return GatewayMode.XDP;
    }

    @Override
    public void start(TestbedState state, IdentifierPlan plan, String gateway) {
        namespace = state.gatewayNamespace(gateway);
        String yaml = plan.gatewayYaml(gateway, "127.0.0.1:" + METRICS_PORT, dropOneIn);
        startProcess(() -> {
            closeTheEdge(state, gateway);
            peerPass.attach(state.gatewayPorts(gateway));
            Path configFile = writeConfig("gw-" + gateway, yaml);
            return GatewayProcess.start(namespace, GatewayMain.class.getName(), List.of("--config", configFile.toString()),
                    GatewayMain.READY, Duration.ofSeconds(30));
        });
    }

    private final int dropOneIn;

    public XdpGateway() {
        this(0);
    }

    /** A gateway whose routes drop 1 in {@code dropOneIn} frames (fault injection for tests; 0 = never). */
    public XdpGateway(int dropOneIn) {
        this.dropOneIn = dropOneIn;
    }

    /** The gateway's counters from its metrics endpoint ("xaf_packets_total{forwarded}" -> value, ...). */
    @Override
    public Map<String, Long> counters() {
        return process == null ? Map.of() : GatewayMetrics.scrape(namespace, "127.0.0.1", METRICS_PORT);
    }



    @Override
    public void close() {
        try {
            if (process != null) process.close();
        } finally {
            process = null;
            peerPass.close();
            deleteConfig();
        }
    }
}
