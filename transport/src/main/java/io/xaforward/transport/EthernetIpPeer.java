package io.xaforward.transport;

import io.xaforward.protocol.XafHeader;

import java.net.InetAddress;
import java.util.Objects;

/**
 * A destination on an IPv4 or IPv6 network reached by writing the frame ourselves (AF_XDP, {@link XskDatagramPort}):
 * the kernel resolves no neighbours for us, so the peer names both the next hop's MAC address (the Ethernet
 * destination) and the destination IP address. The UDP port is always {@link XafHeader#UDP_PORT}.
 *
 * @param mac 48-bit next-hop MAC, first byte most significant (as in {@link EthernetPeer})
 * @param ip  the destination's IPv4 or IPv6 address; its family must match the port's network form
 */
public record EthernetIpPeer(long mac, InetAddress ip) implements Peer {
    public EthernetIpPeer {
        Objects.requireNonNull(ip, "ip");
        if ((mac >>> 48) != 0) {
            throw new IllegalArgumentException("a MAC address has 48 bits, got 0x" + Long.toHexString(mac));
        }
    }

    /** From "02:00:00:00:00:01" and a literal IP address such as "10.0.0.2" or "fd00::2" (no name lookup). */
    public static EthernetIpPeer of(String mac, String ip) {
        return new EthernetIpPeer(EthernetPeer.of(mac).mac(), InetLiterals.parse(ip));
    }

    @Override
    public String toString() {
        return new EthernetPeer(mac) + "/" + ip.getHostAddress();
    }
}
