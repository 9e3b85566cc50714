package io.xaforward.testbed;

import java.util.List;
import java.util.stream.Stream;

/**
 * A running testbed as other modules see it: every host and gateway port with its live ifindex. Returned by
 * {@link Testbed#up(Topology)} and {@link Testbed#state(Topology)}.
 */
public record TestbedState(Topology topology, List<Node> hosts, List<Node> gatewayPorts) {

    public TestbedState {
        hosts = List.copyOf(hosts);
        gatewayPorts = List.copyOf(gatewayPorts);
    }

    /** Host {@code index} (0-based, file order) of a DC. */
    public Node host(String dc, int index) {
        List<Node> inDc = hosts(dc);
        if (index < 0 || index >= inDc.size())
            throw new IllegalArgumentException("datacenter '" + dc + "' has " + inDc.size() + " hosts, no index " + index);
        return inDc.get(index);
    }

    /** Host by DC and host name. */
    public Node host(String dc, String name) {
        return hosts.stream().filter(n -> n.datacenter().equals(dc) && n.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no host '" + name + "' in datacenter '" + dc + "'"));
    }

    /** Hosts of one DC in file order. */
    public List<Node> hosts(String dc) {
        topology.datacenter(dc); // fails clearly on an unknown DC
        return hosts.stream().filter(n -> n.datacenter().equals(dc)).toList();
    }

    /** The port of gateway {@code gw} into DC {@code dc}. */
    public Node gatewayPort(String gw, String dc) {
        return gatewayPorts.stream().filter(n -> n.name().equals(gw) && n.datacenter().equals(dc)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("gateway '" + gw + "' has no port into datacenter '" + dc + "'"));
    }

    /** All ports of one gateway, in the order of its {@code joins}. */
    public List<Node> gatewayPorts(String gw) {
        topology.gateway(gw);
        return gatewayPorts.stream().filter(n -> n.name().equals(gw)).toList();
    }

    /** The namespace of a gateway. */
    public String gatewayNamespace(String gw) {
        return Layout.of(topology).gatewayNamespace(topology.gateway(gw).name());
    }

    /** The host or gateway port with that identity in that DC (gateway ports share their gateway's identity). */
    public Node byIdentity(String dc, int identity) {
        return Stream.concat(hosts.stream(), gatewayPorts.stream())
                .filter(n -> n.datacenter().equals(dc) && n.identity() == identity).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no node with identity 0x" + Integer.toHexString(identity) + " in '" + dc + "'"));
    }

    /** Every namespace of the testbed. */
    public List<String> namespaces() {
        return Layout.of(topology).namespaces();
    }
}
