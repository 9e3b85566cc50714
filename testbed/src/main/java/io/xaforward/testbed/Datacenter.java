package io.xaforward.testbed;

import io.xaforward.protocol.NetworkForm;

import java.util.List;

/**
 * One emulated data center: an L2 segment whose hosts all speak the same {@link NetworkForm}.
 *
 * @param index  position in the topology file, 0-based; drives default subnets, MACs and identities
 * @param hosts  host names, unique within the DC
 * @param subnet the IP prefix of the segment, or {@code null} for the ID form
 */
public record Datacenter(String name, int index, NetworkForm form, int mtu, List<String> hosts, IpPrefix subnet) {
    public Datacenter {
        hosts = List.copyOf(hosts);
    }

    /** Default IPv4 subnet of the DC at {@code index}: 10.77.index.0/24. */
    public static IpPrefix defaultIpv4(int index) {
        return IpPrefix.parse("10.77." + index + ".0/24");
    }

    /** Default IPv6 subnet of the DC at {@code index}: fd77:0:index::/64. */
    public static IpPrefix defaultIpv6(int index) {
        return IpPrefix.parse("fd77:0:" + Integer.toHexString(index) + "::/64");
    }
}
