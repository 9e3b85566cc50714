package io.xaforward.transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The 16-bit ones'-complement sum of a payload (RFC 1071 style, not inverted) that goes into the XAF header's
 * payload_sum: with it a gateway can build a UDP checksum without touching the payload.
 */
final class PayloadChecksums {
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private PayloadChecksums() {
    }

    /** Sum of the big-endian 16-bit words of the bytes; an odd last byte is padded with a zero byte. */
    static int onesComplementSum(MemorySegment segment, long offset, int length) {
        long sum = 0;
        int i = 0;
        // Adding 32-bit words and folding gives the same ones'-complement result as adding 16-bit words.
        for (; i + 4 <= length; i += 4) {
            sum += Integer.toUnsignedLong(segment.get(BE_INT, offset + i));
        }
        for (; i + 2 <= length; i += 2) {
            sum += (Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, offset + i)) << 8)
                    | Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, offset + i + 1));
        }
        if (i < length) {
            sum += Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, offset + i)) << 8;
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return (int) sum;
    }
}
