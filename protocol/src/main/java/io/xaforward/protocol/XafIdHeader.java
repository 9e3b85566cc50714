package io.xaforward.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Flyweight over the 12-byte header of the identifier-native (ID) network form, {@code struct xaf_id_hdr} in
 * xaf_shared.h. It follows an Ethernet header with EtherType 0x0812 and, like the identifier modality of
 * polymorphic-network testbeds, carries 32-bit source and destination identities before the next header.
 *
 * <pre>
 *  0: src_id (4)   4: dst_id (4, = network index identifier)   8: next_hdr (0xFD = XAF)   9: reserved (0)
 * 10: length (2, bytes after this header: XAF header + payload)
 * </pre>
 */
public final class XafIdHeader {
    public static final int LENGTH = 12;
    public static final int SRC_ID_OFFSET = 0;
    public static final int DST_ID_OFFSET = 4;
    public static final int NEXT_HDR_OFFSET = 8;
    public static final int RESERVED_OFFSET = 9;
    public static final int LENGTH_OFFSET = 10;

    /** next_hdr value announcing an XAF header (RFC 3692 experimental protocol number 253). */
    public static final int NEXT_HDR_XAF = 0xFD;

    private MemorySegment segment;
    private long base;

    public XafIdHeader wrap(MemorySegment segment, long offset) {
        this.segment = segment;
        this.base = offset;
        return this;
    }

    public MemorySegment segment() { return segment; }
    public long offset() { return base; }

    /** Identity of the sending node (the gateway, after a hop); unsigned 32-bit held in an int. */
    public int srcId() { return segment.get(XafHeader.BE_INT, base + SRC_ID_OFFSET); }
    public XafIdHeader srcId(int v) { segment.set(XafHeader.BE_INT, base + SRC_ID_OFFSET, v); return this; }
    /** Identity of the destination: the network index identifier. */
    public int dstId() { return segment.get(XafHeader.BE_INT, base + DST_ID_OFFSET); }
    public XafIdHeader dstId(int v) { segment.set(XafHeader.BE_INT, base + DST_ID_OFFSET, v); return this; }
    public int nextHdr() { return Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, base + NEXT_HDR_OFFSET)); }
    public XafIdHeader nextHdr(int v) { segment.set(ValueLayout.JAVA_BYTE, base + NEXT_HDR_OFFSET, (byte) v); return this; }
    public int reserved() { return Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, base + RESERVED_OFFSET)); }
    public XafIdHeader reserved(int v) { segment.set(ValueLayout.JAVA_BYTE, base + RESERVED_OFFSET, (byte) v); return this; }
    /** Bytes after this header (XAF header + payload). */
    public int length() { return Short.toUnsignedInt(segment.get(XafHeader.BE_SHORT, base + LENGTH_OFFSET)); }
    public XafIdHeader length(int v) { segment.set(XafHeader.BE_SHORT, base + LENGTH_OFFSET, (short) v); return this; }
}
