package io.xaforward.cluster.world;

import io.xaforward.protocol.NetworkForm;

import java.net.InetAddress;
import java.util.Objects;
import java.util.Optional;

/**
 * Where one rank of a job lives: its data center, the network form and MTU there, and its address on that network
 * (an IP address for the IPv4/IPv6 forms, a MAC address and a 32-bit identity for the identifier-native form).
 *
 * @param iface the interface the rank uses, when known (the worker checks it against its own)
 */
public record RankAddress(int rank, String datacenter, NetworkForm form, int mtu, Optional<InetAddress> ip,
                          Optional<String> mac, int identity, Optional<String> iface) {
    public RankAddress {
        Objects.requireNonNull(datacenter, "datacenter");
        Objects.requireNonNull(form, "form");
        if (rank < 0) throw new IllegalArgumentException("rank must not be negative, was " + rank);
        if (mtu < 576 || mtu > 65535) throw new IllegalArgumentException("rank " + rank + ": mtu must be 576..65535, was " + mtu);
        if (form == NetworkForm.ID && mac.isEmpty()) {
            throw new IllegalArgumentException("rank " + rank + ": the id form needs a mac address");
        }
        if (form != NetworkForm.ID && ip.isEmpty()) {
            throw new IllegalArgumentException("rank " + rank + ": the " + form.configName() + " form needs an ip address");
        }
    }
}
