package io.xaforward.cluster.world;

import io.xaforward.protocol.NetworkForm;

import java.net.Inet4Address;
import java.net.InetAddress;

/** The IP network form of an address. */
final class NetworkForms {
    private NetworkForms() {}

    static NetworkForm of(InetAddress ip) {
        return ip instanceof Inet4Address ? NetworkForm.IPV4 : NetworkForm.IPV6;
    }
}
