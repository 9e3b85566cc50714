package io.xaforward.bench.cluster;

import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Starts the gateway of one mode in one gateway namespace: the extension point through which a cluster run gets
 * its gateways. {@code xdp} is built in; other modes (relay, kernel, ...) register a launcher under their name with
 * {@link #register} and are then available to every job ({@code xaf train}, {@code xaf bench allreduce}).
 */
@FunctionalInterface
public interface GatewayLauncher {

    /**
     * @param gateway   the gateway's name in the topology
     * @param workDir   where configs and logs may go
     * @param dropOneIn &gt; 0 asks the gateway to drop one in that many forwarded frames (loss injection for tests);
     *                  a mode that cannot inject loss must refuse with an exception rather than ignore it
     */
    GatewayHandle start(TestbedState state, IdentifierPlan plan, String gateway, Path workDir, int metricsPort,
                        int dropOneIn) throws Exception;

    /** Launchers by mode name. */
    Map<String, GatewayLauncher> REGISTRY = new ConcurrentHashMap<>(Map.of("xdp", XdpGatewayProcess::start));

    static void register(String mode, GatewayLauncher launcher) {
        REGISTRY.put(mode, launcher);
    }

    static Set<String> modes() {
        return new TreeMap<>(REGISTRY).keySet();
    }

    static GatewayLauncher of(String mode) {
        GatewayLauncher l = REGISTRY.get(mode);
        if (l == null) {
            throw new IllegalArgumentException("gateway mode '" + mode + "' is not available (available: "
                    + String.join(", ", modes()) + ")");
        }
        return l;
    }
}
