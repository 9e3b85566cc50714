package io.xaforward.testbed.mode;

import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.XafHeader;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.NetnsException;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The kernel baseline: Linux IP forwarding in the gateway namespace behind a firewall as a data center edge would
 * run it. FORWARD policy DROP; INVALID dropped; ESTABLISHED,RELATED accepted first (conntrack); ICMP accepted;
 * between every two same-family DC subnets: UDP to the XAF port 9450, new TCP connections to 5201 (bulk transfers)
 * and 22 (ssh). Senders address the destination host's IP; the testbed's routes lead through the gateway.
 * The kernel never translates between forms: {@link GatewayMode#supports} says so.
 */
public final class KernelGateway implements GatewayRunner {
    /** TCP ports the rule set opens between data centers besides the XAF UDP port. */
    public static final List<Integer> OPEN_TCP_PORTS = List.of(5201, 22);
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private String namespace;

    @Override
    public GatewayMode mode() {
        return GatewayMode.KERNEL;
    }

    @Override
    public void start(TestbedState state, IdentifierPlan plan, String gateway) {
        start(state.gatewayNamespace(gateway), subnets(state.gatewayPorts(gateway), NetworkForm.IPV4),
                subnets(state.gatewayPorts(gateway), NetworkForm.IPV6));
    }

    private static List<String> subnets(List<Node> ports, NetworkForm family) {
        List<String> out = new ArrayList<>();
        for (Node p : ports) if (p.form() == family) out.add(p.ipText() + "/" + p.prefixLength());
        return out;
    }

    /**
     * Loads this mode's edge rule set into the FORWARD chains of {@code namespace} without touching forwarding. The
     * other modes load it too: frames they do not take (non-XAF) fall through to the kernel, which must then forward
     * exactly what this mode forwards.
     */
    static void installFirewall(String namespace, List<Node> ports) {
        load(namespace, "iptables-restore", rules(subnets(ports, NetworkForm.IPV4), "icmp"));
        load(namespace, "ip6tables-restore", rules(subnets(ports, NetworkForm.IPV6), "ipv6-icmp"));
    }

    /** Empties the FORWARD chains again (policy ACCEPT), as {@code topo up} left them. */
    static void removeFirewall(String namespace) {
        if (namespace == null || !Netns.exists(namespace)) return;
        for (String tool : List.of("iptables", "ip6tables")) {
            Netns.tryExec(namespace, TIMEOUT, null, List.of(tool, "-F", "FORWARD"));
            Netns.tryExec(namespace, TIMEOUT, null, List.of(tool, "-P", "FORWARD", "ACCEPT"));
        }
    }

    /**
     * Loads the firewall between the given IPv4 subnets (the kernel-tunnel mode's data centers and tunnel pools)
     * and enables forwarding; IPv6 forwarding is closed.
     */
    void startWithSubnets(String gatewayNamespace, List<String> ipv4Subnets) {
        start(gatewayNamespace, ipv4Subnets, List.of());
    }

    private void start(String gatewayNamespace, List<String> ipv4Subnets, List<String> ipv6Subnets) {
        namespace = gatewayNamespace;
        load(namespace, "iptables-restore", rules(ipv4Subnets, "icmp"));
        load(namespace, "ip6tables-restore", rules(ipv6Subnets, "ipv6-icmp"));
        Netns.exec(namespace, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1");
    }

    /** The iptables-restore input for one address family: XAF and the open TCP ports between every two subnets. */
    static String rules(List<String> subnets, String icmp) {
        StringBuilder r = new StringBuilder("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT ACCEPT [0:0]\n");
        r.append("-A FORWARD -m conntrack --ctstate INVALID -j DROP\n");
        r.append("-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n");
        r.append("-A FORWARD -p ").append(icmp).append(" -j ACCEPT\n");
        for (String s : subnets) {
            for (String d : subnets) {
                if (s.equals(d)) continue;
                r.append("-A FORWARD -s ").append(s).append(" -d ").append(d).append(" -p udp --dport ")
                        .append(XafHeader.UDP_PORT).append(" -j ACCEPT\n");
                for (int port : OPEN_TCP_PORTS)
                    r.append("-A FORWARD -s ").append(s).append(" -d ").append(d).append(" -p tcp --dport ").append(port)
                            .append(" -m conntrack --ctstate NEW -j ACCEPT\n");
            }
        }
        return r.append("COMMIT\n").toString();
    }

    private static void load(String namespace, String tool, String rules) {
        try {
            Netns.exec(namespace, TIMEOUT, rules, List.of(tool));
        } catch (NetnsException e) {
            throw new NetnsException("kernel gateway: cannot load the firewall with " + tool
                    + " (is the iptables package installed?): " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        removeFirewall(namespace);
        namespace = null;
    }
}
