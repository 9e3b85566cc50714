package io.xaforward.testbed;

import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.XafHeader;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The edge firewall of a gateway namespace, as a data center edge would run it. FORWARD policy DROP; INVALID
 * dropped; ESTABLISHED,RELATED accepted first (conntrack); ICMP accepted; between every two same-family subnets:
 * UDP to the XAF port 9450, new TCP connections to 5201 (bulk transfers) and 22 (ssh). {@link Testbed#up} loads it
 * into every gateway namespace between the subnets of the data centers the gateway joins, so whatever runs there
 * (a gateway mode, or {@code xaf gateway} started by hand) forwards nothing else between data centers in the
 * kernel. XDP redirects and AF_XDP take their frames before netfilter; the relay's sockets are local (INPUT).
 */
public final class GatewayFirewall {
    /** TCP ports the rule set opens between data centers besides the XAF UDP port. */
    public static final List<Integer> OPEN_TCP_PORTS = List.of(5201, 22);
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private GatewayFirewall() {
    }

    /** Loads the rule set between the subnets of a gateway's ports (its data centers), replacing FORWARD's rules. */
    public static void install(String namespace, List<Node> gatewayPorts) {
        install(namespace, subnets(gatewayPorts, NetworkForm.IPV4), subnets(gatewayPorts, NetworkForm.IPV6));
    }

    /** Loads the rule set between the given subnets, replacing FORWARD's rules; an empty family forwards only ICMP. */
    public static void install(String namespace, List<String> ipv4Subnets, List<String> ipv6Subnets) {
        load(namespace, "iptables-restore", rules(ipv4Subnets, "icmp"));
        load(namespace, "ip6tables-restore", rules(ipv6Subnets, "ipv6-icmp"));
    }

    /** Empties the FORWARD chains (policy ACCEPT): for a namespace that is a plain switch, not a gateway. */
    public static void open(String namespace) {
        if (namespace == null || !Netns.exists(namespace)) return;
        for (String tool : List.of("iptables", "ip6tables")) {
            Netns.tryExec(namespace, TIMEOUT, null, List.of(tool, "-F", "FORWARD"));
            Netns.tryExec(namespace, TIMEOUT, null, List.of(tool, "-P", "FORWARD", "ACCEPT"));
        }
    }

    /**
     * Lets new TCP connections of any port through the edge (both families), for a job that opens its own ports
     * between data centers (PyTorch's Gloo does); the rest of the rule set stays. Removed with the namespace.
     */
    public static void allowNewTcp(String namespace) {
        for (String tool : List.of("iptables", "ip6tables")) {
            Netns.exec(namespace, TIMEOUT, null, List.of(tool, "-I", "FORWARD", "-p", "tcp", "-m", "conntrack",
                    "--ctstate", "NEW", "-j", "ACCEPT"));
        }
    }

    /** "address/length" of each port of the family. */
    public static List<String> subnets(List<Node> ports, NetworkForm family) {
        List<String> out = new ArrayList<>();
        for (Node p : ports) if (p.form() == family) out.add(p.ipText() + "/" + p.prefixLength());
        return out;
    }

    /** The iptables-restore input for one address family: XAF and the open TCP ports between every two subnets. */
    public static String rules(List<String> subnets, String icmp) {
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
            throw new NetnsException("gateway firewall: cannot load the rules with " + tool
                    + " (is the iptables package installed?): " + e.getMessage(), e);
        }
    }
}
