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

    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * Sum of the big-endian 16-bit words of the bytes; an odd last byte is padded with a zero byte. The bulk is summed
     * 8 bytes at a time in little-endian order and byte-swapped at the end: a ones'-complement sum does not depend
     * on the byte order it is computed in, except for that final swap (RFC 1071, 2.(B)).
     */
    static int onesComplementSum(MemorySegment segment, long offset, int length) {
        long little = 0;
        int i = 0;
        for (; i + 8 <= length; i += 8) {
            long w = segment.get(LE_LONG, offset + i);
            little += (w & 0xFFFF_FFFFL) + (w >>> 32); // 32-bit halves: no carry is lost in 2^31 iterations
        }
        while ((little >>> 16) != 0) {
            little = (little & 0xFFFF) + (little >>> 16);
        }
        long sum = ((little & 0xFF) << 8) | (little >>> 8); // to big-endian word order
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
