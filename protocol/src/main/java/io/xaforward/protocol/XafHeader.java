package io.xaforward.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Flyweight over the 48-byte XAF header (version 1), read and written in place over a {@link MemorySegment}.
 * All fields are big-endian on the wire. One instance is reused for every packet: {@link #wrap} moves it,
 * nothing is allocated per packet.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |         magic "XF"            |    version    |     type      |  0
 * +-------------------------------+---------------+---------------+
 * |     flags     |   hop_limit   |    hdr_len    |   elem_type   |  4
 * +---------------+---------------+---------------+---------------+
 * |                network index identifier (forwarding key)      |  8
 * |                           job_id                              | 12
 * |                          job_token                            | 16
 * +-------------------------------+-------------------------------+
 * |           src_rank            |           dst_rank            | 20
 * +-------------------------------+-------------------------------+
 * |                             step                              | 24
 * |                           bucket_id                           | 28
 * |                          chunk_index                          | 32
 * |                          chunk_count                          | 36
 * +-------------------------------+-------------------------------+
 * |          payload_len          |  payload_sum (ones' complement)| 40
 * +-------------------------------+-------------------------------+
 * |                        payload_crc32c                         | 44
 * +---------------------------------------------------------------+
 * </pre>
 *
 * The layout is the C struct {@code xaf_hdr} in dataplane/src/main/bpf/xaf_shared.h; docs/PROTOCOL.md is the
 * specification.
 */
public final class XafHeader {
    public static final int LENGTH = 48;
    public static final short MAGIC = 0x5846;
    public static final int VERSION = 1;
    public static final int UDP_PORT = 9450;

    public static final int MAGIC_OFFSET = 0;
    public static final int VERSION_OFFSET = 2;
    public static final int TYPE_OFFSET = 3;
    public static final int FLAGS_OFFSET = 4;
    public static final int HOP_LIMIT_OFFSET = 5;
    public static final int HDR_LEN_OFFSET = 6;
    public static final int ELEM_TYPE_OFFSET = 7;
    public static final int NETWORK_ID_OFFSET = 8;
    public static final int JOB_ID_OFFSET = 12;
    public static final int JOB_TOKEN_OFFSET = 16;
    public static final int SRC_RANK_OFFSET = 20;
    public static final int DST_RANK_OFFSET = 22;
    public static final int STEP_OFFSET = 24;
    public static final int BUCKET_ID_OFFSET = 28;
    public static final int CHUNK_INDEX_OFFSET = 32;
    public static final int CHUNK_COUNT_OFFSET = 36;
    public static final int PAYLOAD_LEN_OFFSET = 40;
    public static final int PAYLOAD_SUM_OFFSET = 42;
    public static final int PAYLOAD_CRC32C_OFFSET = 44;

    /** Largest payload one header can describe (payload_len is 16 bits). */
    public static final int MAX_PAYLOAD = 0xFFFF;
    public static final int DEFAULT_HOP_LIMIT = 16;

    public static final int FLAG_LAST_CHUNK = 0x01;
    public static final int FLAG_RETRANSMIT = 0x02;
    public static final int FLAG_ACK_REQUEST = 0x04;
    /** payload_crc32c covers the header (all but hop_limit, payload_sum and itself) before the payload. */
    public static final int FLAG_HEADER_CHECKED = 0x08;
    /** The payload ends with a 16-byte tag and an 8-byte sequence number keyed by the job secret. */
    public static final int FLAG_AUTHENTICATED = 0x10;
    /** The payload before that trailer is AES-256-GCM ciphertext (implies FLAG_AUTHENTICATED). */
    public static final int FLAG_ENCRYPTED = 0x20;
    /** The flag bits that say how a datagram is protected end to end. */
    public static final int WIRE_SECURITY_FLAGS = FLAG_HEADER_CHECKED | FLAG_AUTHENTICATED | FLAG_ENCRYPTED;
    /** Header bytes [0, this) are the part the end-to-end checks cover (hop_limit taken as zero). */
    public static final int CHECKED_HEADER_LENGTH = PAYLOAD_SUM_OFFSET;

    static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private MemorySegment segment;
    private long base;

    /** Points this flyweight at the header that starts at {@code offset} of {@code segment}. */
    public XafHeader wrap(MemorySegment segment, long offset) {
        this.segment = segment;
        this.base = offset;
        return this;
    }

    public MemorySegment segment() { return segment; }
    public long offset() { return base; }
    /** Offset of the first payload byte in {@link #segment()}. */
    public long payloadOffset() { return base + LENGTH; }

    /** Writes magic, version, header length and the default hop limit; zeroes every other field. */
    public XafHeader init() {
        for (int i = 0; i < LENGTH; i += Long.BYTES) { // not asSlice().fill(): no slice object per packet
            segment.set(ValueLayout.JAVA_LONG_UNALIGNED, base + i, 0L);
        }
        segment.set(BE_SHORT, base + MAGIC_OFFSET, MAGIC);
        segment.set(ValueLayout.JAVA_BYTE, base + VERSION_OFFSET, (byte) VERSION);
        segment.set(ValueLayout.JAVA_BYTE, base + HDR_LEN_OFFSET, (byte) LENGTH);
        segment.set(ValueLayout.JAVA_BYTE, base + HOP_LIMIT_OFFSET, (byte) DEFAULT_HOP_LIMIT);
        return this;
    }

    private int u8(int off) { return Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, base + off)); }
    private void u8(int off, int v) { segment.set(ValueLayout.JAVA_BYTE, base + off, (byte) v); }
    private int u16(int off) { return Short.toUnsignedInt(segment.get(BE_SHORT, base + off)); }
    private void u16(int off, int v) { segment.set(BE_SHORT, base + off, (short) v); }
    private int i32(int off) { return segment.get(BE_INT, base + off); }
    private void i32(int off, int v) { segment.set(BE_INT, base + off, v); }

    public int magic() { return u16(MAGIC_OFFSET); }
    public int version() { return u8(VERSION_OFFSET); }
    public int type() { return u8(TYPE_OFFSET); }
    public XafHeader type(int v) { u8(TYPE_OFFSET, v); return this; }
    public int flags() { return u8(FLAGS_OFFSET); }
    public XafHeader flags(int v) { u8(FLAGS_OFFSET, v); return this; }
    public int hopLimit() { return u8(HOP_LIMIT_OFFSET); }
    public XafHeader hopLimit(int v) { u8(HOP_LIMIT_OFFSET, v); return this; }
    public int hdrLen() { return u8(HDR_LEN_OFFSET); }
    public int elemType() { return u8(ELEM_TYPE_OFFSET); }
    public XafHeader elemType(int v) { u8(ELEM_TYPE_OFFSET, v); return this; }
    /** The network index identifier, the key gateways forward on (an unsigned 32-bit value held in an int). */
    public int networkId() { return i32(NETWORK_ID_OFFSET); }
    public XafHeader networkId(int v) { i32(NETWORK_ID_OFFSET, v); return this; }
    public int jobId() { return i32(JOB_ID_OFFSET); }
    public XafHeader jobId(int v) { i32(JOB_ID_OFFSET, v); return this; }
    public int jobToken() { return i32(JOB_TOKEN_OFFSET); }
    public XafHeader jobToken(int v) { i32(JOB_TOKEN_OFFSET, v); return this; }
    public int srcRank() { return u16(SRC_RANK_OFFSET); }
    public XafHeader srcRank(int v) { u16(SRC_RANK_OFFSET, v); return this; }
    public int dstRank() { return u16(DST_RANK_OFFSET); }
    public XafHeader dstRank(int v) { u16(DST_RANK_OFFSET, v); return this; }
    public int step() { return i32(STEP_OFFSET); }
    public XafHeader step(int v) { i32(STEP_OFFSET, v); return this; }
    public int bucketId() { return i32(BUCKET_ID_OFFSET); }
    public XafHeader bucketId(int v) { i32(BUCKET_ID_OFFSET, v); return this; }
    public int chunkIndex() { return i32(CHUNK_INDEX_OFFSET); }
    public XafHeader chunkIndex(int v) { i32(CHUNK_INDEX_OFFSET, v); return this; }
    public int chunkCount() { return i32(CHUNK_COUNT_OFFSET); }
    public XafHeader chunkCount(int v) { i32(CHUNK_COUNT_OFFSET, v); return this; }
    public int payloadLength() { return u16(PAYLOAD_LEN_OFFSET); }
    public XafHeader payloadLength(int v) { u16(PAYLOAD_LEN_OFFSET, v); return this; }
    /** Ones'-complement 16-bit sum of the payload, not inverted; lets gateways build UDP checksums in O(1). */
    public int payloadSum() { return u16(PAYLOAD_SUM_OFFSET); }
    public XafHeader payloadSum(int v) { u16(PAYLOAD_SUM_OFFSET, v); return this; }
    public int payloadCrc32c() { return i32(PAYLOAD_CRC32C_OFFSET); }
    public XafHeader payloadCrc32c(int v) { i32(PAYLOAD_CRC32C_OFFSET, v); return this; }
}
