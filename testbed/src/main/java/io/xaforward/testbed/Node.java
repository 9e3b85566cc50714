package io.xaforward.testbed;

import io.xaforward.protocol.NetworkForm;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.util.HexFormat;
import java.util.Optional;

/**
 * One addressable endpoint of the testbed: a host's interface or a gateway's port into a DC. Everything a data
 * plane or a transport needs to reach it: namespace, interface, ifindex (in its namespace), MAC, IP, identity.
 *
 * @param name          host name for hosts, gateway name for gateway ports
 * @param ifindex       interface index inside {@link #namespace()}; -1 in a plan that was not brought up
 * @param ip            IPv4 or IPv6 address per {@link #form()}, {@code null} for the ID form
 * @param prefixLength  length of the DC subnet, 0 for the ID form
 * @param identity      deterministic 32-bit identity of the node (a gateway's ports share the gateway's identity)
 * @param peerNamespace namespace of the veth peer (the bridge namespace, or the other end of a direct link)
 * @param peerIface     the veth peer's interface name
 */
public record Node(Kind kind, String name, String datacenter, NetworkForm form, String namespace, String iface, int ifindex,
                   String mac, InetAddress ip, int prefixLength, int identity, int mtu,
                   String peerNamespace, String peerIface) {

    /** What the node is. */
    public enum Kind { HOST, GATEWAY_PORT }

    public Optional<Inet4Address> ipv4() {
        return ip instanceof Inet4Address a ? Optional.of(a) : Optional.empty();
    }

    public Optional<Inet6Address> ipv6() {
        return ip instanceof Inet6Address a ? Optional.of(a) : Optional.empty();
    }

    /** The IP address as text (IPv6 in short form), or "-" for the ID form. */
    public String ipText() {
        return ip == null ? "-" : IpPrefix.format(ip);
    }

    /** The 6 bytes of the MAC address. */
    public byte[] macBytes() {
        return macBytesOf(mac);
    }

    /** The 6 bytes of a MAC address written aa:bb:cc:dd:ee:ff. */
    public static byte[] macBytesOf(String mac) {
        return HexFormat.ofDelimiter(":").parseHex(mac);
    }

    Node withIfindex(int newIfindex) {
        return new Node(kind, name, datacenter, form, namespace, iface, newIfindex, mac, ip, prefixLength, identity,
                mtu, peerNamespace, peerIface);
    }

    /** Identity of host {@code hostIndex} in DC {@code dcIndex}: (dcIndex+1) in the upper 16 bits, hostIndex+1 below. */
    public static int hostIdentity(int dcIndex, int hostIndex) {
        return ((dcIndex + 1) << 16) | (hostIndex + 1);
    }

    /** Identity of gateway {@code gwIndex}: 0xFFFF in the upper 16 bits, gwIndex+1 below. */
    public static int gatewayIdentity(int gwIndex) {
        return 0xFFFF0000 | (gwIndex + 1);
    }
}
