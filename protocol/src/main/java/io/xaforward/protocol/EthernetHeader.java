package io.xaforward.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Flyweight over a 14-byte Ethernet II header (no VLAN tag), read and written in place. MAC addresses are copied
 * to and from caller-owned 6-byte arrays, or handled as 48-bit longs, so nothing is allocated per packet.
 *
 * <pre>
 *  0: destination MAC (6)   6: source MAC (6)   12: EtherType (2, big-endian)
 * </pre>
 */
public final class EthernetHeader {
    public static final int LENGTH = 14;
    public static final int MAC_LENGTH = 6;
    public static final int DST_MAC_OFFSET = 0;
    public static final int SRC_MAC_OFFSET = 6;
    public static final int ETHER_TYPE_OFFSET = 12;

    public static final int ETHER_TYPE_IPV4 = 0x0800;
    public static final int ETHER_TYPE_ARP = 0x0806;
    public static final int ETHER_TYPE_IPV6 = 0x86DD;
    /** EtherType of the identifier-native (ID) network form, XAF_ETH_P_ID. */
    public static final int ETHER_TYPE_XAF_ID = 0x0812;

    private MemorySegment segment;
    private long base;

    public EthernetHeader wrap(MemorySegment segment, long offset) {
        this.segment = segment;
        this.base = offset;
        return this;
    }

    public MemorySegment segment() { return segment; }
    public long offset() { return base; }

    public int etherType() { return Short.toUnsignedInt(segment.get(XafHeader.BE_SHORT, base + ETHER_TYPE_OFFSET)); }
    public EthernetHeader etherType(int v) {
        segment.set(XafHeader.BE_SHORT, base + ETHER_TYPE_OFFSET, (short) v);
        return this;
    }

    /** Copies the 6-byte destination MAC into {@code into} (length at least 6). */
    public void readDstMac(byte[] into) { readMac(DST_MAC_OFFSET, into); }
    public void readSrcMac(byte[] into) { readMac(SRC_MAC_OFFSET, into); }
    /** Writes the destination MAC from the first 6 bytes of {@code mac}. */
    public EthernetHeader dstMac(byte[] mac) { writeMac(DST_MAC_OFFSET, mac); return this; }
    public EthernetHeader srcMac(byte[] mac) { writeMac(SRC_MAC_OFFSET, mac); return this; }

    /** The destination MAC as a 48-bit value, first byte most significant. */
    public long dstMac() { return macAsLong(DST_MAC_OFFSET); }
    public long srcMac() { return macAsLong(SRC_MAC_OFFSET); }
    public EthernetHeader dstMac(long mac) { macFromLong(DST_MAC_OFFSET, mac); return this; }
    public EthernetHeader srcMac(long mac) { macFromLong(SRC_MAC_OFFSET, mac); return this; }

    private void readMac(int off, byte[] into) {
        MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, base + off, into, 0, MAC_LENGTH);
    }

    private void writeMac(int off, byte[] mac) {
        if (mac.length < MAC_LENGTH) {
            throw new IllegalArgumentException("a MAC address needs 6 bytes, got " + mac.length);
        }
        MemorySegment.copy(mac, 0, segment, ValueLayout.JAVA_BYTE, base + off, MAC_LENGTH);
    }

    private long macAsLong(int off) {
        long hi = Short.toUnsignedLong(segment.get(XafHeader.BE_SHORT, base + off));
        long lo = Integer.toUnsignedLong(segment.get(XafHeader.BE_INT, base + off + 2));
        return (hi << 32) | lo;
    }

    private void macFromLong(int off, long mac) {
        segment.set(XafHeader.BE_SHORT, base + off, (short) (mac >>> 32));
        segment.set(XafHeader.BE_INT, base + off + 2, (int) mac);
    }
}
