package io.xaforward.testbed;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A validated multi-data-center topology: what {@link Testbed#up(Topology)} builds. Load one with {@link #load(Path)}.
 *
 * @param prefix unique name prefix (1-6 of [a-z0-9], starting with a letter) of every namespace and interface
 * @param wan    the emulated wide-area link, if the file declares one
 * @param source where the topology came from (file name), used in error messages
 */
public record Topology(String name, String prefix, List<Datacenter> datacenters, List<GatewaySpec> gateways,
                       List<LinkLimit> links, Optional<WanLink> wan, String source) {

    public Topology {
        datacenters = List.copyOf(datacenters);
        gateways = List.copyOf(gateways);
        links = List.copyOf(links);
    }

    /** A topology without a WAN link. */
    public Topology(String name, String prefix, List<Datacenter> datacenters, List<GatewaySpec> gateways,
                    List<LinkLimit> links, String source) {
        this(name, prefix, datacenters, gateways, links, Optional.empty(), source);
    }

    /** Reads and validates a topology file; every problem is a {@link TopologyException} naming file and field. */
    public static Topology load(Path file) {
        String text;
        try {
            text = Files.readString(file);
        } catch (IOException e) {
            throw new TopologyException(file.toString(), "(file)", "cannot read: " + e);
        }
        return parse(text, file.toString());
    }

    /** Parses and validates topology YAML; {@code source} names it in error messages. */
    public static Topology parse(String yaml, String source) {
        return TopologyParser.parse(yaml, source);
    }

    /** The same topology under another prefix (tests use a unique one per run); re-validates interface names. */
    public Topology withPrefix(String newPrefix) {
        TopologyParser.checkPrefix(newPrefix, source, "prefix");
        Topology t = new Topology(name, newPrefix, datacenters, gateways, links, wan, source);
        Layout.of(t); // throws if an interface name gets too long
        return t;
    }

    public Datacenter datacenter(String dcName) {
        return datacenters.stream().filter(d -> d.name().equals(dcName)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no datacenter '" + dcName + "' in " + name));
    }

    public GatewaySpec gateway(String gwName) {
        return gateways.stream().filter(g -> g.name().equals(gwName)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no gateway '" + gwName + "' in " + name));
    }

    /** The rate limit on the link between a gateway and a DC, if the file declares one. */
    public Optional<LinkLimit> limit(String gwName, String dcName) {
        return links.stream().filter(l -> l.gateway().equals(gwName) && l.datacenter().equals(dcName)).findFirst();
    }

    /**
     * The MTU of the link between gateway {@code gwName} and data center {@code dcName}: the WAN's when the WAN joins
     * them, else the DC's. It is the MTU of that gateway port, the egress limit for frames it forwards into the DC.
     */
    public int linkMtu(String gwName, String dcName) {
        return wan.filter(w -> w.gateway().equals(gwName) && w.datacenter().equals(dcName)).map(WanLink::mtu)
                .orElse(datacenter(dcName).mtu());
    }

    /**
     * The smallest MTU on the path between a host of {@code dcA} and a host of {@code dcB} (either order): both DCs'
     * own MTUs and the links of the gateway that joins them (the WAN's MTU where the WAN is on the path). A sender
     * sizes its frames for this: a gateway drops, as {@code drop_too_big}, what does not fit its egress port (see
     * docs/PROTOCOL.md §7). The same DC: that DC's MTU. When several gateways join both, the smallest over them; when
     * none does, the smallest MTU of the whole topology (a bound every path respects).
     */
    public int pathMtu(String dcA, String dcB) {
        int mtu = Math.min(datacenter(dcA).mtu(), datacenter(dcB).mtu());
        if (dcA.equals(dcB)) return mtu;
        List<GatewaySpec> joining = gateways.stream().filter(g -> g.joins().contains(dcA) && g.joins().contains(dcB)).toList();
        if (joining.isEmpty()) return smallestMtu();
        int best = Integer.MAX_VALUE;
        for (GatewaySpec g : joining) best = Math.min(best, Math.min(linkMtu(g.name(), dcA), linkMtu(g.name(), dcB)));
        return Math.min(mtu, best);
    }

    /** The smallest MTU of any link in the topology (every DC's and the WAN's): a bound every path respects. */
    public int smallestMtu() {
        int mtu = datacenters.stream().mapToInt(Datacenter::mtu).min().orElseThrow();
        return wan.map(w -> Math.min(mtu, w.mtu())).orElse(mtu);
    }

    /** Gateways with a port in the given DC, in file order. */
    public List<GatewaySpec> gatewaysOf(String dcName) {
        return gateways.stream().filter(g -> g.joins().contains(dcName)).toList();
    }
}
