package io.xaforward.testbed.mode;

import io.xaforward.protocol.NetworkForm;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.GatewayFirewall;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.util.List;

/**
 * The kernel baseline: Linux IP forwarding in the gateway namespace behind the edge firewall of
 * {@link GatewayFirewall} (the one {@code topo up} already loads). Senders address the destination host's IP; the
 * testbed's routes lead through the gateway. The kernel never translates between forms: {@link GatewayMode#supports}
 * says so. The kernel-tunnel mode widens the rule set to its tunnel pools; {@link #close} restores the topology's.
 */
public final class KernelGateway implements GatewayRunner {
    /** TCP ports the rule set opens between data centers besides the XAF UDP port. */
    public static final List<Integer> OPEN_TCP_PORTS = GatewayFirewall.OPEN_TCP_PORTS;

    private String namespace;
    private List<Node> ports = List.of();

    @Override
    public GatewayMode mode() {
        return GatewayMode.KERNEL;
    }

    @Override
    public void start(TestbedState state, IdentifierPlan plan, String gateway) {
        List<Node> gatewayPorts = state.gatewayPorts(gateway);
        start(state.gatewayNamespace(gateway), gatewayPorts, GatewayFirewall.subnets(gatewayPorts, NetworkForm.IPV4),
                GatewayFirewall.subnets(gatewayPorts, NetworkForm.IPV6));
    }

    /**
     * Loads the firewall between the given IPv4 subnets (the kernel-tunnel mode's data centers and tunnel pools)
     * and enables forwarding; IPv6 forwarding is closed. {@code gatewayPorts} are the gateway's own, whose rule set
     * {@link #close} restores.
     */
    void startWithSubnets(String gatewayNamespace, List<Node> gatewayPorts, List<String> ipv4Subnets) {
        start(gatewayNamespace, gatewayPorts, ipv4Subnets, List.of());
    }

    private void start(String gatewayNamespace, List<Node> gatewayPorts, List<String> ipv4Subnets, List<String> ipv6Subnets) {
        namespace = gatewayNamespace;
        ports = gatewayPorts;
        GatewayFirewall.install(namespace, ipv4Subnets, ipv6Subnets);
        Netns.exec(namespace, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1");
    }

    /** Back to the rule set {@code topo up} loaded: the gateway's data centers only. */
    @Override
    public void close() {
        if (namespace != null && Netns.exists(namespace)) GatewayFirewall.install(namespace, ports);
        namespace = null;
        ports = List.of();
    }
}
