package io.xaforward.protocol;

import java.lang.foreign.MemorySegment;

/**
 * Flyweight over the 8-byte UDP header, read and written in place.
 *
 * <pre>
 *  0: source port   2: destination port   4: length (header + data)   6: checksum
 * </pre>
 */
public final class UdpHeader {
    public static final int LENGTH = 8;
    public static final int SRC_PORT_OFFSET = 0;
    public static final int DST_PORT_OFFSET = 2;
    public static final int LENGTH_OFFSET = 4;
    public static final int CHECKSUM_OFFSET = 6;

    private MemorySegment segment;
    private long base;

    public UdpHeader wrap(MemorySegment segment, long offset) {
        this.segment = segment;
        this.base = offset;
        return this;
    }

    public MemorySegment segment() { return segment; }
    public long offset() { return base; }

    private int u16(int off) { return Short.toUnsignedInt(segment.get(XafHeader.BE_SHORT, base + off)); }
    private void u16(int off, int v) { segment.set(XafHeader.BE_SHORT, base + off, (short) v); }

    public int srcPort() { return u16(SRC_PORT_OFFSET); }
    public UdpHeader srcPort(int v) { u16(SRC_PORT_OFFSET, v); return this; }
    public int dstPort() { return u16(DST_PORT_OFFSET); }
    public UdpHeader dstPort(int v) { u16(DST_PORT_OFFSET, v); return this; }
    /** UDP length: header plus data, in bytes. */
    public int length() { return u16(LENGTH_OFFSET); }
    public UdpHeader length(int v) { u16(LENGTH_OFFSET, v); return this; }
    public int checksum() { return u16(CHECKSUM_OFFSET); }
    public UdpHeader checksum(int v) { u16(CHECKSUM_OFFSET, v); return this; }
}
