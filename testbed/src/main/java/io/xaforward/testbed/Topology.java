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

    /** Gateways with a port in the given DC, in file order. */
    public List<GatewaySpec> gatewaysOf(String dcName) {
        return gateways.stream().filter(g -> g.joins().contains(dcName)).toList();
    }
}
