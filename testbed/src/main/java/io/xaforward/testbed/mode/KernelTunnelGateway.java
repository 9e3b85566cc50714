package io.xaforward.testbed.mode;

import io.xaforward.protocol.NetworkForm;
import io.xaforward.testbed.Datacenter;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The Linux-native baseline for joining an IPv4 and an IPv6 data center: the workers all speak IPv4, and the IPv6
 * data centers carry it in kernel tunnels to the gateway, which forwards plain IPv4 behind the firewall of
 * {@link KernelGateway}. Nothing in user space touches a packet.
 *
 * <p>What it builds, for every IPv6 data center D (index d) that this gateway joins:
 * <ul>
 *   <li>in the gateway namespace a VXLAN device {@code xafvx<d>} (VNI 7800+d, UDP 4789) over its IPv6 port, with
 *       address 10.78.d.254/24, a static forwarding entry and a permanent neighbour for every host of D (no
 *       flooding, no learning, no ARP on the path);</li>
 *   <li>in every host of D a VXLAN device {@code xafvx} whose remote is the gateway port's IPv6 address, with the
 *       host's tunnel address 10.78.d.(host+1)/24 and routes to every IPv4 data center of the gateway, and to the
 *       tunnel addresses of the other hosts of D, via 10.78.d.254;</li>
 *   <li>in every host of the IPv4 data centers of the gateway a route to 10.78.d.0/24 via the gateway port.</li>
 * </ul>
 * Hosts of IPv4 data centers keep their form entirely. Hosts of IPv6 data centers keep IPv6 on their wire (and on
 * the WAN): every frame there is IPv6/UDP/VXLAN around an Ethernet frame around the worker's IPv4/UDP packet, 70
 * bytes more than the worker's packet; inside their own data center they still talk IPv6 directly. This kernel has
 * no ip6tnl, sit or GRE (CONFIG_IPV6_TUNNEL, CONFIG_IPV6_SIT, CONFIG_NET_IPGRE are off), VXLAN is built in: the
 * same IPv4-over-IPv6 idea with 30 bytes more per packet than ip6tnl would add.
 */
public final class KernelTunnelGateway implements GatewayRunner {
    /** The device name of the tunnel in a host namespace. */
    public static final String HOST_DEVICE = "xafvx";
    /** First VXLAN network identifier; data center d uses VNI_BASE + d. */
    public static final int VNI_BASE = 7800;
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private final KernelGateway firewall = new KernelGateway();
    private String namespace;
    private final List<String> gatewayDevices = new ArrayList<>();
    private final List<String> tunnelHosts = new ArrayList<>();
    private final Map<String, List<String>> ipv4HostRoutes = new LinkedHashMap<>();

    @Override
    public GatewayMode mode() {
        return GatewayMode.KERNEL_TUNNEL;
    }

    @Override
    public void start(TestbedState state, IdentifierPlan plan, String gateway) {
        namespace = state.gatewayNamespace(gateway);
        List<Node> ports = state.gatewayPorts(gateway);
        List<Node> v4Ports = ports.stream().filter(p -> p.form() == NetworkForm.IPV4).toList();
        List<Node> v6Ports = ports.stream().filter(p -> p.form() == NetworkForm.IPV6).toList();
        if (v4Ports.isEmpty() || v6Ports.isEmpty())
            throw new IllegalArgumentException("the kernel-tunnel mode joins IPv4 and IPv6 data centers; gateway '" + gateway
                    + "' of " + state.topology().name() + " does not join both families");
        try {
            List<String> poolSubnets = new ArrayList<>();
            StringBuilder gw = new StringBuilder();
            for (Node port : v6Ports) {
                Datacenter dc = state.topology().datacenter(port.datacenter());
                String dev = "xafvx" + dc.index();
                poolSubnets.add(ModeAddressing.tunnelSubnet(dc));
                gatewayDevices.add(dev);
                gw.append("link add ").append(dev).append(" address ").append(mac(dc.index(), 0xfe)).append(" type vxlan id ")
                        .append(VNI_BASE + dc.index()).append(" local ").append(port.ipText()).append(" dstport 4789 dev ")
                        .append(port.iface()).append(" nolearning\n");
                gw.append("link set dev ").append(dev).append(" up\n");
                gw.append("addr add 10.78.").append(dc.index()).append(".254/24 dev ").append(dev).append('\n');
                for (Node h : state.hosts(dc.name())) {
                    String hostMac = mac(dc.index(), hostIndex(h) + 1);
                    gw.append("neigh replace ").append(ModeAddressing.tunnelAddress(h).getHostAddress()).append(" lladdr ")
                            .append(hostMac).append(" dev ").append(dev).append(" nud permanent\n");
                    StringBuilder host = new StringBuilder();
                    host.append("link add ").append(HOST_DEVICE).append(" address ").append(hostMac).append(" type vxlan id ")
                            .append(VNI_BASE + dc.index()).append(" local ").append(h.ipText()).append(" remote ")
                            .append(port.ipText()).append(" dstport 4789 dev ").append(h.iface()).append(" nolearning\n");
                    host.append("link set dev ").append(HOST_DEVICE).append(" up\n");
                    host.append("addr add ").append(ModeAddressing.tunnelAddress(h).getHostAddress()).append("/24 dev ")
                            .append(HOST_DEVICE).append('\n');
                    host.append("neigh replace 10.78.").append(dc.index()).append(".254 lladdr ").append(mac(dc.index(), 0xfe))
                            .append(" dev ").append(HOST_DEVICE).append(" nud permanent\n");
                    for (Node v4 : v4Ports)
                        host.append("route replace ").append(subnetOf(state, v4)).append(" via 10.78.").append(dc.index())
                                .append(".254 dev ").append(HOST_DEVICE).append('\n');
                    // The other hosts' tunnel addresses through the gateway too: the tunnel is point to point, so an
                    // application that uses one IPv4 address per host everywhere (PyTorch's Gloo) reaches them.
                    for (Node sibling : state.hosts(dc.name()))
                        if (sibling != h)
                            host.append("route replace ").append(ModeAddressing.tunnelAddress(sibling).getHostAddress())
                                    .append("/32 via 10.78.").append(dc.index()).append(".254 dev ").append(HOST_DEVICE)
                                    .append('\n');
                    tunnelHosts.add(h.namespace());
                    batch(h.namespace(), host.toString());
                }
            }
            batch(namespace, gw.toString());
            // Forwarding entries need the devices: the bridge tool has no batch file per namespace here.
            for (Node port : v6Ports) {
                Datacenter dc = state.topology().datacenter(port.datacenter());
                for (Node h : state.hosts(dc.name()))
                    Netns.exec(namespace, "bridge", "fdb", "append", mac(dc.index(), hostIndex(h) + 1), "dev",
                            "xafvx" + dc.index(), "dst", h.ipText());
            }
            for (Node v4 : v4Ports) {
                for (Node h : state.hosts(v4.datacenter())) {
                    StringBuilder r = new StringBuilder();
                    for (String pool : poolSubnets) {
                        r.append("route replace ").append(pool).append(" via ").append(v4.ipText()).append(" dev ")
                                .append(h.iface()).append('\n');
                        ipv4HostRoutes.computeIfAbsent(h.namespace(), k -> new ArrayList<>()).add(pool);
                    }
                    batch(h.namespace(), r.toString());
                }
            }
            List<String> v4Subnets = new ArrayList<>(v4Ports.stream().map(p -> subnetOf(state, p)).toList());
            v4Subnets.addAll(poolSubnets);
            firewall.startWithSubnets(namespace, state.gatewayPorts(gateway), v4Subnets);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private static String subnetOf(TestbedState state, Node port) {
        return state.topology().datacenter(port.datacenter()).subnet().toString();
    }

    private static int hostIndex(Node h) {
        return (h.identity() & 0xFFFF) - 1;
    }

    /** Locally administered MAC of a VXLAN end: 02:78:dc:00:00:nn (nn = host+1, or 0xfe for the gateway). */
    static String mac(int dc, int n) {
        return String.format("02:78:%02x:00:%02x:%02x", dc & 0xff, (n >> 8) & 0xff, n & 0xff);
    }

    private static void batch(String ns, String commands) {
        if (!commands.isEmpty()) Netns.exec(null, TIMEOUT, commands, List.of("ip", "-n", ns, "-b", "-"));
    }

    /** Packets through the gateway's tunnel devices: "tunnel_packets{xafvx1,rx}" -> count, and tx likewise. */
    @Override
    public Map<String, Long> counters() {
        Map<String, Long> c = new LinkedHashMap<>();
        if (namespace == null) return c;
        for (String dev : gatewayDevices) {
            String[] v = Netns.exec(namespace, "cat", "/sys/class/net/" + dev + "/statistics/rx_packets",
                    "/sys/class/net/" + dev + "/statistics/tx_packets").stdout().trim().split("\\s+");
            c.put("tunnel_packets{" + dev + ",rx}", Long.parseLong(v[0]));
            c.put("tunnel_packets{" + dev + ",tx}", Long.parseLong(v[1]));
        }
        return c;
    }

    @Override
    public void close() {
        firewall.close();
        if (namespace != null && Netns.exists(namespace))
            for (String dev : gatewayDevices) Netns.tryExec(null, TIMEOUT, null, List.of("ip", "-n", namespace, "link", "del", dev));
        gatewayDevices.clear();
        for (String ns : tunnelHosts)
            if (Netns.exists(ns)) Netns.tryExec(null, TIMEOUT, null, List.of("ip", "-n", ns, "link", "del", HOST_DEVICE));
        tunnelHosts.clear();
        ipv4HostRoutes.forEach((ns, pools) -> {
            if (!Netns.exists(ns)) return;
            for (String pool : pools) Netns.tryExec(null, TIMEOUT, null, List.of("ip", "-n", ns, "route", "del", pool));
        });
        ipv4HostRoutes.clear();
        namespace = null;
    }
}
