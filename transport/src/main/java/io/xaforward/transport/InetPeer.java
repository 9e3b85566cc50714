package io.xaforward.transport;

import java.net.InetSocketAddress;
import java.util.Objects;

/** A UDP peer (IPv4 or IPv6 socket address) for {@link UdpDatagramPort}. */
public record InetPeer(InetSocketAddress address) implements Peer {
    public InetPeer {
        Objects.requireNonNull(address, "address");
        if (address.isUnresolved()) {
            throw new IllegalArgumentException("peer address " + address + " is unresolved");
        }
    }

    public static InetPeer of(String host, int port) {
        return new InetPeer(new InetSocketAddress(host, port));
    }
}
