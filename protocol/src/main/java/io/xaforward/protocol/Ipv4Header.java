package io.xaforward.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Flyweight over an IPv4 header, read and written in place. XAF frames use the 20-byte header without options;
 * the getters also work on headers with options ({@link #headerLength()} tells how long it is).
 *
 * <pre>
 *  0: version(4 bits) | IHL(4 bits)   1: DSCP/ECN   2: total length   4: identification
 *  6: flags(3 bits) | fragment offset(13 bits)   8: TTL   9: protocol   10: header checksum
 * 12: source address   16: destination address
 * </pre>
 */
public final class Ipv4Header {
    public static final int LENGTH = 20;
    public static final int VERSION_IHL_OFFSET = 0;
    public static final int TOS_OFFSET = 1;
    public static final int TOTAL_LENGTH_OFFSET = 2;
    public static final int IDENTIFICATION_OFFSET = 4;
    public static final int FLAGS_FRAGMENT_OFFSET = 6;
    public static final int TTL_OFFSET = 8;
    public static final int PROTOCOL_OFFSET = 9;
    public static final int CHECKSUM_OFFSET = 10;
    public static final int SRC_ADDR_OFFSET = 12;
    public static final int DST_ADDR_OFFSET = 16;

    public static final int VERSION_IHL_NO_OPTIONS = 0x45;
    public static final int FLAG_DONT_FRAGMENT = 0x4000;
    public static final int FLAG_MORE_FRAGMENTS = 0x2000;
    public static final int FRAGMENT_OFFSET_MASK = 0x1FFF;
    public static final int PROTOCOL_TCP = 6;
    public static final int PROTOCOL_UDP = 17;

    private MemorySegment segment;
    private long base;

    public Ipv4Header wrap(MemorySegment segment, long offset) {
        this.segment = segment;
        this.base = offset;
        return this;
    }

    public MemorySegment segment() { return segment; }
    public long offset() { return base; }

    private int u8(int off) { return Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, base + off)); }
    private void u8(int off, int v) { segment.set(ValueLayout.JAVA_BYTE, base + off, (byte) v); }
    private int u16(int off) { return Short.toUnsignedInt(segment.get(XafHeader.BE_SHORT, base + off)); }
    private void u16(int off, int v) { segment.set(XafHeader.BE_SHORT, base + off, (short) v); }

    public int versionIhl() { return u8(VERSION_IHL_OFFSET); }
    public Ipv4Header versionIhl(int v) { u8(VERSION_IHL_OFFSET, v); return this; }
    public int version() { return versionIhl() >>> 4; }
    /** Header length in bytes (IHL x 4). */
    public int headerLength() { return (versionIhl() & 0x0F) * 4; }
    public int tos() { return u8(TOS_OFFSET); }
    public Ipv4Header tos(int v) { u8(TOS_OFFSET, v); return this; }
    public int totalLength() { return u16(TOTAL_LENGTH_OFFSET); }
    public Ipv4Header totalLength(int v) { u16(TOTAL_LENGTH_OFFSET, v); return this; }
    public int identification() { return u16(IDENTIFICATION_OFFSET); }
    public Ipv4Header identification(int v) { u16(IDENTIFICATION_OFFSET, v); return this; }
    /** The 16-bit flags + fragment offset word. */
    public int flagsFragment() { return u16(FLAGS_FRAGMENT_OFFSET); }
    public Ipv4Header flagsFragment(int v) { u16(FLAGS_FRAGMENT_OFFSET, v); return this; }
    public boolean moreFragments() { return (flagsFragment() & FLAG_MORE_FRAGMENTS) != 0; }
    /** Fragment offset in 8-byte units; non-zero for every fragment but the first. */
    public int fragmentOffset() { return flagsFragment() & FRAGMENT_OFFSET_MASK; }
    public int ttl() { return u8(TTL_OFFSET); }
    public Ipv4Header ttl(int v) { u8(TTL_OFFSET, v); return this; }
    public int protocol() { return u8(PROTOCOL_OFFSET); }
    public Ipv4Header protocol(int v) { u8(PROTOCOL_OFFSET, v); return this; }
    public int checksum() { return u16(CHECKSUM_OFFSET); }
    public Ipv4Header checksum(int v) { u16(CHECKSUM_OFFSET, v); return this; }
    /** Source address in network order as an int (first octet most significant). */
    public int srcAddr() { return segment.get(XafHeader.BE_INT, base + SRC_ADDR_OFFSET); }
    public Ipv4Header srcAddr(int v) { segment.set(XafHeader.BE_INT, base + SRC_ADDR_OFFSET, v); return this; }
    public int dstAddr() { return segment.get(XafHeader.BE_INT, base + DST_ADDR_OFFSET); }
    public Ipv4Header dstAddr(int v) { segment.set(XafHeader.BE_INT, base + DST_ADDR_OFFSET, v); return this; }

    /** Computes and writes the header checksum over {@link #headerLength()} bytes. */
    public Ipv4Header updateChecksum() {
        checksum(0);
        checksum(InternetChecksum.complement(InternetChecksum.sum(segment, base, headerLength())));
        return this;
    }

    /** True when the header checksum over {@link #headerLength()} bytes is correct. */
    public boolean checksumValid() {
        return InternetChecksum.isValid(InternetChecksum.sum(segment, base, headerLength()));
    }
}
