package io.xaforward.testbed.mode;

import io.xaforward.gateway.GatewayMain;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;


/**
 * The XDP gateway in the gateway namespace: the gateway service ({@code xaf gateway}, main class
 * {@link GatewayMain}) as its own process, configured from {@link IdentifierPlan#gatewayYaml}, with its Prometheus
 * endpoint on {@value ProcessGatewayRunner#METRICS_PORT} inside the namespace. The veth peers of the gateway ports get an XDP_PASS
 * program, without which XDP_REDIRECT between veths drops every frame.
 */
public final class XdpGateway extends ProcessGatewayRunner {
    private final PeerXdpPass peerPass = new PeerXdpPass();

    @Override
    public GatewayMode mode() {
        return GatewayMode.XDP;
    }

    @Override
    public void start(TestbedState state, IdentifierPlan plan, String gateway) {
        startProcess(state, plan, gateway, new Launch(GatewayMain.class, GatewayMain.READY, false));
    }

    @Override
    protected void beforeStart(TestbedState state, String gateway) {
        peerPass.attach(state.gatewayPorts(gateway));
    }

    @Override
    protected void afterStop() {
        peerPass.close();
    }
}
