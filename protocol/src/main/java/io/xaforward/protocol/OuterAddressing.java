package io.xaforward.protocol;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;

/**
 * The outer-header values {@link FrameWriter} writes in front of an XAF header: MACs, IP addresses, UDP ports,
 * ID-form identities and the IP hop limit. It mirrors the addressing part of {@code struct xaf_route}, is mutable
 * and meant to be filled once per peer and reused for every frame. Not thread-safe.
 */
public final class OuterAddressing {
    /** IPv4 TTL / IPv6 hop limit written when none is set. */
    public static final int DEFAULT_IP_HOP_LIMIT = 64;

    final byte[] srcMac = new byte[EthernetHeader.MAC_LENGTH];
    final byte[] dstMac = new byte[EthernetHeader.MAC_LENGTH];
    final byte[] srcIp = new byte[Ipv6Header.ADDR_LENGTH];
    final byte[] dstIp = new byte[Ipv6Header.ADDR_LENGTH];
    int srcIpLength;
    int dstIpLength;
    int srcPort = XafHeader.UDP_PORT;
    int dstPort = XafHeader.UDP_PORT;
    int srcId;
    int dstId;
    int ipHopLimit = DEFAULT_IP_HOP_LIMIT;

    public OuterAddressing srcMac(byte[] mac) { copyMac(mac, srcMac); return this; }
    public OuterAddressing dstMac(byte[] mac) { copyMac(mac, dstMac); return this; }
    /** Source MAC as a 48-bit value, first byte most significant (e.g. 0x02_00_00_00_00_01L). */
    public OuterAddressing srcMac(long mac) { macFromLong(mac, srcMac); return this; }
    public OuterAddressing dstMac(long mac) { macFromLong(mac, dstMac); return this; }
    public long srcMac() { return macToLong(srcMac); }
    public long dstMac() { return macToLong(dstMac); }

    /** Source IP as 4 (IPv4) or 16 (IPv6) bytes in network order. */
    public OuterAddressing srcIp(byte[] addr) { srcIpLength = copyIp(addr, srcIp); return this; }
    public OuterAddressing dstIp(byte[] addr) { dstIpLength = copyIp(addr, dstIp); return this; }
    public OuterAddressing srcIp(InetAddress addr) { return srcIp(addr.getAddress()); }
    public OuterAddressing dstIp(InetAddress addr) { return dstIp(addr.getAddress()); }
    /** Source IPv4 address as an int in network order (first octet most significant). */
    public OuterAddressing srcIpv4(int addr) { srcIpLength = intToIp(addr, srcIp); return this; }
    public OuterAddressing dstIpv4(int addr) { dstIpLength = intToIp(addr, dstIp); return this; }
    /** 4, 16, or 0 when no source IP is set. */
    public int srcIpLength() { return srcIpLength; }
    public int dstIpLength() { return dstIpLength; }
    /** The source IP as an InetAddress (allocates: for configuration and messages, not per packet). */
    public InetAddress srcIp() { return toInet(srcIp, srcIpLength); }
    public InetAddress dstIp() { return toInet(dstIp, dstIpLength); }

    public OuterAddressing srcPort(int port) { srcPort = checkPort(port); return this; }
    public OuterAddressing dstPort(int port) { dstPort = checkPort(port); return this; }
    public int srcPort() { return srcPort; }
    /** UDP destination port; {@link XafHeader#UDP_PORT} unless set. */
    public int dstPort() { return dstPort; }

    /** ID form: identity of this sender. */
    public OuterAddressing srcId(int id) { srcId = id; return this; }
    /** ID form: identity of the destination, normally the network index identifier. */
    public OuterAddressing dstId(int id) { dstId = id; return this; }
    public int srcId() { return srcId; }
    public int dstId() { return dstId; }

    /** IPv4 TTL / IPv6 hop limit, 1..255; {@link #DEFAULT_IP_HOP_LIMIT} unless set. */
    public OuterAddressing ipHopLimit(int hops) {
        if (hops < 1 || hops > 255) {
            throw new IllegalArgumentException("IP hop limit must be 1..255, got " + hops);
        }
        ipHopLimit = hops;
        return this;
    }
    public int ipHopLimit() { return ipHopLimit; }

    private static void copyMac(byte[] mac, byte[] into) {
        if (mac.length != EthernetHeader.MAC_LENGTH) {
            throw new IllegalArgumentException("a MAC address has 6 bytes, got " + mac.length);
        }
        System.arraycopy(mac, 0, into, 0, EthernetHeader.MAC_LENGTH);
    }

    private static void macFromLong(long mac, byte[] into) {
        if ((mac >>> 48) != 0) {
            throw new IllegalArgumentException("a MAC address has 48 bits, got 0x" + Long.toHexString(mac));
        }
        for (int i = 0; i < EthernetHeader.MAC_LENGTH; i++) {
            into[i] = (byte) (mac >>> (40 - 8 * i));
        }
    }

    private static long macToLong(byte[] mac) {
        long v = 0;
        for (byte b : mac) {
            v = (v << 8) | (b & 0xFF);
        }
        return v;
    }

    private static int copyIp(byte[] addr, byte[] into) {
        if (addr.length != 4 && addr.length != Ipv6Header.ADDR_LENGTH) {
            throw new IllegalArgumentException("an IP address has 4 or 16 bytes, got " + addr.length);
        }
        Arrays.fill(into, (byte) 0);
        System.arraycopy(addr, 0, into, 0, addr.length);
        return addr.length;
    }

    private static int intToIp(int addr, byte[] into) {
        Arrays.fill(into, (byte) 0);
        for (int i = 0; i < 4; i++) {
            into[i] = (byte) (addr >>> (24 - 8 * i));
        }
        return 4;
    }

    private static InetAddress toInet(byte[] ip, int length) {
        if (length == 0) {
            return null;
        }
        try {
            InetAddress a = InetAddress.getByAddress(Arrays.copyOf(ip, length));
            assert length == 4 ? a instanceof Inet4Address : a instanceof Inet6Address;
            return a;
        } catch (UnknownHostException e) {
            throw new IllegalStateException("unreachable: address of length " + length, e);
        }
    }

    private static int checkPort(int port) {
        if (port < 0 || port > 0xFFFF) {
            throw new IllegalArgumentException("a UDP port is 0..65535, got " + port);
        }
        return port;
    }
}
