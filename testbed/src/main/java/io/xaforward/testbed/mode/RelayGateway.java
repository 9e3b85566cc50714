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
        startProcess(() -> {
            Path configFile = writeConfig("relay-" + gateway, plan.gatewayYaml(gateway, "off", 0));
            closeTheEdge(state, gateway);
            return GatewayProcess.start(state.gatewayNamespace(gateway), RelayGatewayMain.class.getName(),
                    List.of("--config", configFile.toString()), RelayGatewayMain.READY_LINE, Duration.ofSeconds(30)).stopWithStdin();
        });
    }

    /** The relay's counters ("forwarded", "drop_too_big", "tx_too_big.IFACE", ...), as {@link AfXdpGateway#counters}. */
    @Override
    public java.util.Map<String, Long> counters() {
        return requestCounters(RelayGatewayMain.COUNTERS_PREFIX);
    }

    @Override
    public void close() {
        try {
            if (process != null) process.close();
        } finally {
            deleteConfig(); // the process stays readable: its output holds the final counters
        }
    }
}
