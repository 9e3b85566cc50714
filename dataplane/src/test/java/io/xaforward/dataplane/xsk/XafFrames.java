package io.xaforward.dataplane.xsk;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Identifier-native XAF frames written byte by byte (Ethernet 0x0812 / 12-byte ID header / 48-byte XAF header /
 * payload), independent of the protocol module. Frame {@code seq} is fully determined by its arguments, so a
 * receiver can rebuild what it should have got. Writes in place, allocation-free.
 */
final class XafFrames {
    private XafFrames() {}

    static final int JOB = 77, TOKEN = 0x5eed1234;
    static final int ETHERTYPE_ID = 0x0812;
    static final int XAF_OFFSET = 14 + 12;
    static final int HOP_OFFSET = XAF_OFFSET + 5;
    static final int STEP_OFFSET = XAF_OFFSET + 24;
    static final int NEXT_HDR_OFFSET = 14 + 8;
    static final int INITIAL_HOP = 8;

    private static final ValueLayout.OfShort BE16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /** Payload length of frame {@code seq}: 16..1415 bytes, so frames are 90..1489 bytes. */
    static int payloadLength(int seq) { return 16 + (int) ((seq * 37L) % 1400); }

    static int frameLength(int seq) { return XAF_OFFSET + 48 + payloadLength(seq); }

    /** Writes XAF frame {@code seq} for {@code networkId} at {@code off}; returns its length. */
    static int write(MemorySegment f, long off, int seq, int networkId) {
        int payloadLen = payloadLength(seq);
        for (int i = 0; i < 6; i++) f.set(ValueLayout.JAVA_BYTE, off + i, (byte) 0xff);
        for (int i = 0; i < 6; i++) f.set(ValueLayout.JAVA_BYTE, off + 6 + i, (byte) (i == 0 ? 0x02 : i));
        f.set(BE16, off + 12, (short) ETHERTYPE_ID);
        long id = off + 14;
        f.set(BE32, id, 0x0A000001);                       // src_id
        f.set(BE32, id + 4, networkId);                     // dst_id
        f.set(ValueLayout.JAVA_BYTE, id + 8, (byte) 0xFD);  // next header: XAF
        f.set(ValueLayout.JAVA_BYTE, id + 9, (byte) 0);
        f.set(BE16, id + 10, (short) (48 + payloadLen));
        long x = off + XAF_OFFSET;
        f.set(BE16, x, (short) 0x5846);
        f.set(ValueLayout.JAVA_BYTE, x + 2, (byte) 1);      // version
        f.set(ValueLayout.JAVA_BYTE, x + 3, (byte) 1);      // DATA
        f.set(ValueLayout.JAVA_BYTE, x + 4, (byte) 1);      // LAST_CHUNK
        f.set(ValueLayout.JAVA_BYTE, x + 5, (byte) INITIAL_HOP);
        f.set(ValueLayout.JAVA_BYTE, x + 6, (byte) 48);
        f.set(ValueLayout.JAVA_BYTE, x + 7, (byte) 0);      // BYTES
        f.set(BE32, x + 8, networkId);
        f.set(BE32, x + 12, JOB);
        f.set(BE32, x + 16, TOKEN);
        f.set(BE16, x + 20, (short) 1);
        f.set(BE16, x + 22, (short) 2);
        f.set(BE32, x + 24, seq);                           // step: the sequence number
        f.set(BE32, x + 28, 0);
        f.set(BE32, x + 32, 0);
        f.set(BE32, x + 36, 1);
        f.set(BE16, x + 40, (short) payloadLen);
        long p = x + 48;
        long sum = 0;
        for (int i = 0; i < payloadLen; i++) {
            byte b = (byte) (seq * 31 + i * 7 + (i >> 5));
            f.set(ValueLayout.JAVA_BYTE, p + i, b);
            sum += (i & 1) == 0 ? (b & 0xff) << 8 : b & 0xff;
        }
        while ((sum >> 16) != 0) sum = (sum & 0xffff) + (sum >> 16);
        f.set(BE16, x + 42, (short) sum);
        f.set(BE32, x + 44, 0); // CRC32C: not checked by gateways, left zero
        return XAF_OFFSET + 48 + payloadLen;
    }

    /** A non-XAF frame of the ID EtherType (next header 0x11): the XDP program must pass it to the kernel. */
    static int writeNonXaf(MemorySegment f, int seq) {
        int len = write(f, 0, seq, 0);
        f.set(ValueLayout.JAVA_BYTE, NEXT_HDR_OFFSET, (byte) 0x11);
        return len;
    }

    static int seqOf(MemorySegment f, long off) { return f.get(BE32, off + STEP_OFFSET); }
}
