package io.xaforward.testbed.mode;

import io.xaforward.gateway.relay.RelayGatewayMain;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

/**
 * Runs {@link RelayGatewayMain}, the user-space relay baseline, as its own process in the gateway namespace with
 * the gateway config of the identifier plan. Senders address the gateway port as they do for the XDP gateway.
 */
public final class RelayGateway extends ProcessGatewayRunner {

    @Override
    public GatewayMode mode() {
        return GatewayMode.RELAY;
    }

    @Override
    public void start(TestbedState state, IdentifierPlan plan, String gateway) {
        startProcess(state, plan, gateway, new Launch(RelayGatewayMain.class, RelayGatewayMain.READY_LINE, true));
    }
}
