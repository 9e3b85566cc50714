package io.xaforward.testbed;

import io.xaforward.protocol.NetworkForm;

import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.zip.CRC32;

/**
 * Every name, MAC and address a topology turns into, computed without touching the system. {@link Testbed} builds
 * exactly this; tests and tools can read it without root.
 *
 * <p>Naming (P = prefix): host namespace and interface {@code P-dc-host}; gateway namespace {@code P-gw}, its port
 * into a DC {@code P-gw-dc}; a DC with more than one host (or more than one gateway) gets a bridge namespace
 * {@code P-dc-sw} with bridge {@code P-dc-br}, whose ports are the veth peers {@code P-dc-host-s} and
 * {@code P-gw-dc-s}. A DC with one host and one gateway gets one direct veth between them.
 * MACs are 02:hh:kk:..: (locally administered), hh = a byte of the prefix hash, kk = 01 host, 02 gateway port,
 * 03 bridge-side host peer, 04 bridge-side gateway peer, 05 WAN port towards the gateway, 06 WAN port towards the DC.
 *
 * <p>A {@link WanLink} between gateway G and DC D puts a namespace {@code P-G-D-w} between them: the gateway port's
 * veth peer is {@code P-G-D-w} there, a second veth leads from {@code P-G-D-v} there to where the gateway port used
 * to lead (the DC's bridge, or its single host), and a bridge {@value #WAN_BRIDGE} joins the two.
 */
public final class Layout {
    /** Linux limit on interface names (IFNAMSIZ - 1). */
    public static final int MAX_IFNAME = 15;

    /** A veth pair to create; end A lives in {@code nsA}, end B in {@code nsB}. */
    public record VethPair(String nsA, String devA, String macA, String nsB, String devB, String macB, int mtu, NetworkForm form) {}

    /** Name of the bridge inside a WAN namespace (one per namespace, so a fixed name). */
    public static final String WAN_BRIDGE = "wan";

    /**
     * The WAN namespace of a {@link WanLink}: {@code gatewaySide} faces the gateway port, {@code dcSide} the DC; the
     * kernel there bridges the two and shapes each one's egress.
     */
    public record WanSegment(WanLink link, String namespace, String gatewaySide, String dcSide) {}

    /** A Linux bridge in a DC's switch namespace. */
    public record Bridge(String datacenter, String namespace, String name, List<String> ports) {}

    private final Topology topology;
    private final List<Node> hosts = new ArrayList<>();
    private final List<Node> gatewayPorts = new ArrayList<>();
    private final List<VethPair> veths = new ArrayList<>();
    private final List<Bridge> bridges = new ArrayList<>();
    private final Set<String> namespaces = new LinkedHashSet<>();
    private WanSegment wan;

    private Layout(Topology t) {
        this.topology = t;
        String p = t.prefix();
        int hash = prefixHash(p);
        for (GatewaySpec g : t.gateways()) namespaces.add(gatewayNamespace(g.name()));
        for (Datacenter dc : t.datacenters()) {
            List<GatewaySpec> gws = t.gatewaysOf(dc.name());
            boolean direct = dc.hosts().size() == 1 && gws.size() == 1;
            String swNs = p + "-" + dc.name() + "-sw";
            WanLink wanLink = t.wan().filter(w -> w.datacenter().equals(dc.name())).orElse(null);
            if (wanLink != null) {
                String base = gatewayPortName(wanLink.gateway(), dc.name());
                wan = new WanSegment(wanLink, base + "-w", checkLength(base + "-w", "wan"), checkLength(base + "-v", "wan"));
                namespaces.add(wan.namespace());
            }
            List<String> bridgePorts = new ArrayList<>();
            List<Node> dcHosts = new ArrayList<>();
            for (int i = 0; i < dc.hosts().size(); i++) {
                String host = dc.hosts().get(i);
                String ns = hostNamespace(dc.name(), host);
                String dev = checkLength(ns, "datacenters[" + dc.index() + "].hosts[" + i + "]");
                String mac = mac(hash, 1, dc.index(), i >> 8, i & 0xff);
                InetAddress ip = dc.subnet() == null ? null : dc.subnet().offset(i + 1L);
                String peerNs, peerDev;
                int hostMtu = dc.mtu();
                if (direct && wanLink != null) {
                    peerNs = wan.namespace();
                    peerDev = wan.dcSide();
                    hostMtu = wanLink.mtu(); // the host's one link is the WAN's
                    veths.add(new VethPair(peerNs, peerDev, mac(hash, 6, dc.index(), 0, 0), ns, dev, mac, hostMtu, dc.form()));
                } else if (direct) {
                    peerNs = gatewayNamespace(gws.get(0).name());
                    peerDev = gatewayPortName(gws.get(0).name(), dc.name());
                } else {
                    peerNs = swNs;
                    peerDev = checkLength(dev + "-s", "datacenters[" + dc.index() + "].hosts[" + i + "]");
                    veths.add(new VethPair(ns, dev, mac, swNs, peerDev, mac(hash, 3, dc.index(), i >> 8, i & 0xff), dc.mtu(), dc.form()));
                    bridgePorts.add(peerDev);
                }
                namespaces.add(ns);
                Node n = new Node(Node.Kind.HOST, host, dc.name(), dc.form(), ns, dev, -1, mac, ip,
                        dc.subnet() == null ? 0 : dc.subnet().length(), Node.hostIdentity(dc.index(), i), hostMtu, peerNs, peerDev);
                dcHosts.add(n);
                hosts.add(n);
            }
            for (int k = 0; k < gws.size(); k++) {
                GatewaySpec g = gws.get(k);
                String ns = gatewayNamespace(g.name());
                String dev = checkLength(gatewayPortName(g.name(), dc.name()), "gateways[" + g.index() + "].name");
                String mac = mac(hash, 2, g.index(), dc.index(), 0);
                InetAddress ip = gatewayPortAddress(dc, k);
                String peerNs, peerDev;
                int portMtu = dc.mtu();
                if (wanLink != null && wanLink.gateway().equals(g.name())) {
                    peerNs = wan.namespace();
                    peerDev = wan.gatewaySide();
                    portMtu = wanLink.mtu(); // every link of the WAN, the gateway's port into it included, has the WAN's MTU
                    veths.add(new VethPair(ns, dev, mac, peerNs, peerDev, mac(hash, 5, g.index(), dc.index(), 0), portMtu, dc.form()));
                    if (!direct) {
                        String swPort = checkLength(dev + "-s", "gateways[" + g.index() + "].name");
                        veths.add(new VethPair(wan.namespace(), wan.dcSide(), mac(hash, 6, dc.index(), 0, 0), swNs, swPort,
                                mac(hash, 4, g.index(), dc.index(), 0), portMtu, dc.form()));
                        bridgePorts.add(swPort);
                    }
                } else if (direct) {
                    Node h = dcHosts.get(0);
                    peerNs = h.namespace();
                    peerDev = h.iface();
                    veths.add(new VethPair(ns, dev, mac, peerNs, peerDev, h.mac(), dc.mtu(), dc.form()));
                } else {
                    peerNs = swNs;
                    peerDev = checkLength(dev + "-s", "gateways[" + g.index() + "].name");
                    veths.add(new VethPair(ns, dev, mac, swNs, peerDev, mac(hash, 4, g.index(), dc.index(), 0), dc.mtu(), dc.form()));
                    bridgePorts.add(peerDev);
                }
                gatewayPorts.add(new Node(Node.Kind.GATEWAY_PORT, g.name(), dc.name(), dc.form(), ns, dev, -1, mac, ip,
                        dc.subnet() == null ? 0 : dc.subnet().length(), Node.gatewayIdentity(g.index()), portMtu, peerNs, peerDev));
            }
            if (!direct) {
                namespaces.add(swNs);
                bridges.add(new Bridge(dc.name(), swNs, checkLength(p + "-" + dc.name() + "-br", "datacenters[" + dc.index() + "].name"), bridgePorts));
            }
        }
    }

    /** Computes the layout; throws {@link TopologyException} if a generated interface name exceeds 15 characters. */
    public static Layout of(Topology t) {
        return new Layout(t);
    }

    private String checkLength(String ifname, String field) {
        if (ifname.length() > MAX_IFNAME)
            throw new TopologyException(topology.source(), field, "name too long: interface name '" + ifname + "' has "
                    + ifname.length() + " characters, Linux allows " + MAX_IFNAME + "; shorten the prefix '"
                    + topology.prefix() + "' or the names");
        return ifname;
    }

    /** Gateway port k (k-th gateway joining the DC): IPv4 top of the subnet (.254 in a /24), IPv6 ::fe, minus k. */
    static InetAddress gatewayPortAddress(Datacenter dc, int k) {
        if (dc.subnet() == null) return null;
        long offset = dc.form() == NetworkForm.IPV4 ? (1L << dc.subnet().hostBits()) - 2 - k : 0xfe - k;
        return dc.subnet().offset(offset);
    }

    private static String mac(int hash, int kind, int a, int b, int c) {
        return String.format("02:%02x:%02x:%02x:%02x:%02x", hash & 0xff, kind, a & 0xff, b & 0xff, c & 0xff);
    }

    private static int prefixHash(String prefix) {
        CRC32 crc = new CRC32();
        crc.update(prefix.getBytes(StandardCharsets.UTF_8));
        return (int) crc.getValue();
    }

    public String hostNamespace(String dc, String host) {
        return topology.prefix() + "-" + dc + "-" + host;
    }

    public String gatewayNamespace(String gw) {
        return topology.prefix() + "-" + gw;
    }

    public String gatewayPortName(String gw, String dc) {
        return topology.prefix() + "-" + gw + "-" + dc;
    }

    public Topology topology() {
        return topology;
    }

    /** The WAN namespace, when the topology declares a WAN link. */
    public Optional<WanSegment> wan() {
        return Optional.ofNullable(wan);
    }

    /** All namespaces in creation order: gateways, then per DC its WAN namespace (if any), hosts and bridge namespace. */
    public List<String> namespaces() {
        return List.copyOf(namespaces);
    }

    public List<Node> hosts() {
        return List.copyOf(hosts);
    }

    public List<Node> gatewayPorts() {
        return List.copyOf(gatewayPorts);
    }

    public List<VethPair> veths() {
        return List.copyOf(veths);
    }

    public List<Bridge> bridges() {
        return List.copyOf(bridges);
    }
}
