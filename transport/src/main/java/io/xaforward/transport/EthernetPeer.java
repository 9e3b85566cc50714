package io.xaforward.transport;

import java.util.HexFormat;

/** A next hop on an identifier-native network: the MAC address to put in the Ethernet header. */
public record EthernetPeer(long mac) implements Peer {
    public static EthernetPeer of(String mac) {
        byte[] b = HexFormat.ofDelimiter(":").parseHex(mac);
        if (b.length != 6) throw new IllegalArgumentException("'" + mac + "' is not a MAC address");
        long v = 0;
        for (byte x : b) v = (v << 8) | (x & 0xFF);
        return new EthernetPeer(v);
    }

    @Override
    public String toString() {
        return String.format("%02x:%02x:%02x:%02x:%02x:%02x", (mac >>> 40) & 0xFF, (mac >>> 32) & 0xFF,
                (mac >>> 24) & 0xFF, (mac >>> 16) & 0xFF, (mac >>> 8) & 0xFF, mac & 0xFF);
    }
}
