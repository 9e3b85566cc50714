package io.xaforward.testbed.mode;

import io.xaforward.protocol.NetworkForm;
import io.xaforward.testbed.GatewayFirewall;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The ideal without any gateway: the data centers are one L2 network and the workers one IP subnet. The gateway
 * namespace becomes a switch (a Linux bridge {@value #BRIDGE} of its ports, no IP forwarding, no firewall, no XDP),
 * and every host of the data centers it joins gets an address in the flat network of {@link ModeAddressing} (IPv4
 * 10.79.0.0/16 or IPv6 fd79::/64, the family of the topology's first data center). Cross-DC traffic still crosses
 * the topology's WAN link, so only translation and routing are taken away.
 */
public final class DirectNetwork implements GatewayRunner {
    /** The bridge in the gateway namespace. */
    public static final String BRIDGE = "xafdirect";
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private String namespace;
    private List<Node> ports = List.of();
    private final List<String[]> addedAddresses = new ArrayList<>(); // {namespace, address/len, iface}

    @Override
    public GatewayMode mode() {
        return GatewayMode.DIRECT;
    }

    @Override
    public void start(TestbedState state, IdentifierPlan plan, String gateway) {
        namespace = state.gatewayNamespace(gateway);
        ports = state.gatewayPorts(gateway);
        ModeAddressing addressing = new ModeAddressing(GatewayMode.DIRECT, state.topology());
        try {
            StringBuilder b = new StringBuilder();
            b.append("link add name ").append(BRIDGE).append(" type bridge stp_state 0 forward_delay 0\n");
            b.append("link set dev ").append(BRIDGE).append(" up\n");
            for (Node p : ports) {
                if (p.form() == NetworkForm.ID)
                    throw new IllegalArgumentException(GatewayMode.DIRECT.unsupportedReason(NetworkForm.ID, NetworkForm.ID));
                b.append("link set dev ").append(p.iface()).append(" master ").append(BRIDGE).append('\n');
            }
            Netns.exec(null, TIMEOUT, b.toString(), List.of("ip", "-n", namespace, "-b", "-"));
            // A switch filters nothing: with br_netfilter loaded, bridged frames would meet the edge firewall.
            GatewayFirewall.open(namespace);
            for (Node p : ports) {
                for (Node h : state.hosts(p.datacenter())) {
                    String addr = addressing.flatAddress(h).getHostAddress() + "/" + addressing.flatPrefixLength();
                    List<String> cmd = new ArrayList<>(List.of("ip", "-n", h.namespace(), "addr", "replace", addr, "dev", h.iface()));
                    if (addressing.flatFamily() == NetworkForm.IPV6) cmd.add("nodad");
                    Netns.exec(null, TIMEOUT, null, cmd);
                    addedAddresses.add(new String[]{h.namespace(), addr, h.iface()});
                }
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    @Override
    public void close() {
        for (String[] a : addedAddresses)
            if (Netns.exists(a[0])) Netns.tryExec(null, TIMEOUT, null, List.of("ip", "-n", a[0], "addr", "del", a[1], "dev", a[2]));
        addedAddresses.clear();
        if (namespace != null && Netns.exists(namespace)) {
            Netns.tryExec(null, TIMEOUT, null, List.of("ip", "-n", namespace, "link", "del", BRIDGE));
            GatewayFirewall.install(namespace, ports); // the gateway namespace's edge again, as topo up left it
        }
        namespace = null;
        ports = List.of();
    }
}
