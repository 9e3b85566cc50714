package io.xaforward.cluster.rendezvous;

import io.xaforward.protocol.NetworkForm;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.HexFormat;
import java.util.Optional;

/** This host's address on an interface, as a rank registers it: IP of the form's family, MAC, MTU. */
record LocalAddress(Optional<InetAddress> ip, String mac, int mtu) {
    /** Peers address us by the global address; the scope (this interface's name) means nothing to them. */
    private static InetAddress withoutScope(InetAddress a) {
        try {
            return InetAddress.getByAddress(a.getAddress());
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    static LocalAddress of(String iface, NetworkForm form) {
        NetworkInterface ni;
        try {
            ni = NetworkInterface.getByName(iface);
        } catch (SocketException e) {
            ni = null;
        }
        if (ni == null) throw new IllegalArgumentException("interface '" + iface + "' does not exist on this host");
        try {
            byte[] hw = ni.getHardwareAddress();
            if (hw == null || hw.length != 6) throw new IllegalArgumentException("interface '" + iface + "' has no MAC address");
            String mac = HexFormat.ofDelimiter(":").formatHex(hw);
            Optional<InetAddress> ip = Optional.empty();
            if (form != NetworkForm.ID) {
                ip = ni.inetAddresses()
                        .filter(a -> form == NetworkForm.IPV4 ? a instanceof Inet4Address
                                : a instanceof Inet6Address && !a.isLinkLocalAddress())
                        .findFirst()
                        .map(LocalAddress::withoutScope);
                if (ip.isEmpty()) {
                    throw new IllegalArgumentException("interface '" + iface + "' has no " + form.configName() + " address");
                }
            }
            return new LocalAddress(ip, mac, ni.getMTU());
        } catch (SocketException e) {
            throw new IllegalArgumentException("cannot read interface '" + iface + "': " + e.getMessage());
        }
    }
}
