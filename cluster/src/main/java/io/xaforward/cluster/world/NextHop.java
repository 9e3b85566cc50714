package io.xaforward.cluster.world;

import java.net.InetAddress;
import java.util.Optional;

/**
 * The gateway port a data center's hosts send to for every destination outside their data center: its IP address
 * on the IPv4/IPv6 forms, its MAC address on the identifier-native form.
 */
public record NextHop(Optional<InetAddress> ip, Optional<String> mac) {
    public NextHop {
        if (ip.isEmpty() && mac.isEmpty()) throw new IllegalArgumentException("a gateway next hop needs an ip or a mac");
    }
}
