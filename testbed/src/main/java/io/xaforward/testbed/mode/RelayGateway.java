package io.xaforward.testbed.mode;

import io.xaforward.gateway.relay.RelayGatewayMain;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

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
        startProcess(state, gateway, () -> {
            Path configFile = writeConfig(plan, gateway, "relay", 0);
            closeTheEdge(state, gateway);
            return GatewayProcess.start(namespace, RelayGatewayMain.class.getName(),
                    List.of("--config", configFile.toString()), RelayGatewayMain.READY_LINE, Duration.ofSeconds(30)).stopWithStdin();
        });
    }
}
