package io.xaforward.testbed.mode;

import io.xaforward.gateway.GatewayMain;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The XDP gateway in the gateway namespace: the gateway service ({@code xaf gateway}, main class
 * {@link GatewayMain}) as its own process, configured from {@link IdentifierPlan#gatewayYaml}, with its Prometheus
 * endpoint on {@value ProcessGatewayRunner#METRICS_PORT} inside the namespace. The veth peers of the gateway ports get an XDP_PASS
 * program, without which XDP_REDIRECT between veths drops every frame.
 */
public final class XdpGateway extends ProcessGatewayRunner {
    private final PeerXdpPass peerPass = new PeerXdpPass();
    private final int dropOneIn;

    public XdpGateway() {
        this(0);
    }

    /** A gateway whose routes drop 1 in {@code dropOneIn} frames (fault injection for tests; 0 = never). */
    public XdpGateway(int dropOneIn) {
        this.dropOneIn = dropOneIn;
    }

    @Override
    public GatewayMode mode() {
        return GatewayMode.XDP;
    }

    @Override
    public void start(TestbedState state, IdentifierPlan plan, String gateway) {
        startProcess(state, gateway, () -> {
            closeTheEdge(state, gateway);
            peerPass.attach(state.gatewayPorts(gateway));
            Path configFile = writeConfig(plan, gateway, "gw", dropOneIn);
            return GatewayProcess.start(namespace, GatewayMain.class.getName(), List.of("--config", configFile.toString()),
                    GatewayMain.READY, Duration.ofSeconds(30));
        });
    }

    @Override
    protected void afterStop() {
        peerPass.close();
    }
}
