package io.xaforward.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Flyweight over the fixed 40-byte IPv6 header, read and written in place. Addresses are copied to and from
 * caller-owned 16-byte arrays so nothing is allocated per packet.
 *
 * <pre>
 *  0: version(4 bits) | traffic class(8) | flow label(20)   4: payload length   6: next header   7: hop limit
 *  8: source address (16)   24: destination address (16)
 * </pre>
 */
public final class Ipv6Header {
    public static final int LENGTH = 40;
    public static final int ADDR_LENGTH = 16;
    public static final int VERSION_CLASS_FLOW_OFFSET = 0;
    public static final int PAYLOAD_LENGTH_OFFSET = 4;
    public static final int NEXT_HEADER_OFFSET = 6;
    public static final int HOP_LIMIT_OFFSET = 7;
    public static final int SRC_ADDR_OFFSET = 8;
    public static final int DST_ADDR_OFFSET = 24;

    /** Version 6, traffic class 0, flow label 0. */
    public static final int VERSION_CLASS_FLOW_DEFAULT = 0x6000_0000;
    public static final int NEXT_HEADER_HOP_BY_HOP = 0;
    public static final int NEXT_HEADER_TCP = 6;
    public static final int NEXT_HEADER_UDP = 17;
    public static final int NEXT_HEADER_ROUTING = 43;
    public static final int NEXT_HEADER_FRAGMENT = 44;

    private MemorySegment segment;
    private long base;

    public Ipv6Header wrap(MemorySegment segment, long offset) {
        this.segment = segment;
        this.base = offset;
        return this;
    }

    public MemorySegment segment() { return segment; }
    public long offset() { return base; }

    public int versionClassFlow() { return segment.get(XafHeader.BE_INT, base + VERSION_CLASS_FLOW_OFFSET); }
    public Ipv6Header versionClassFlow(int v) {
        segment.set(XafHeader.BE_INT, base + VERSION_CLASS_FLOW_OFFSET, v);
        return this;
    }
    public int version() { return versionClassFlow() >>> 28; }
    public int payloadLength() { return Short.toUnsignedInt(segment.get(XafHeader.BE_SHORT, base + PAYLOAD_LENGTH_OFFSET)); }
    public Ipv6Header payloadLength(int v) {
        segment.set(XafHeader.BE_SHORT, base + PAYLOAD_LENGTH_OFFSET, (short) v);
        return this;
    }
    public int nextHeader() { return Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, base + NEXT_HEADER_OFFSET)); }
    public Ipv6Header nextHeader(int v) {
        segment.set(ValueLayout.JAVA_BYTE, base + NEXT_HEADER_OFFSET, (byte) v);
        return this;
    }
    public int hopLimit() { return Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, base + HOP_LIMIT_OFFSET)); }
    public Ipv6Header hopLimit(int v) {
        segment.set(ValueLayout.JAVA_BYTE, base + HOP_LIMIT_OFFSET, (byte) v);
        return this;
    }

    /** Copies the source address into the first 16 bytes of {@code into}. */
    public void readSrcAddr(byte[] into) { read(SRC_ADDR_OFFSET, into); }
    public void readDstAddr(byte[] into) { read(DST_ADDR_OFFSET, into); }
    /** Writes the source address from the first 16 bytes of {@code addr}. */
    public Ipv6Header srcAddr(byte[] addr) { write(SRC_ADDR_OFFSET, addr); return this; }
    public Ipv6Header dstAddr(byte[] addr) { write(DST_ADDR_OFFSET, addr); return this; }

    private void read(int off, byte[] into) {
        MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, base + off, into, 0, ADDR_LENGTH);
    }

    private void write(int off, byte[] addr) {
        if (addr.length < ADDR_LENGTH) {
            throw new IllegalArgumentException("an IPv6 address needs 16 bytes, got " + addr.length);
        }
        MemorySegment.copy(addr, 0, segment, ValueLayout.JAVA_BYTE, base + off, ADDR_LENGTH);
    }
}
