package io.xaforward.transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * The 16-bit ones'-complement sum of a payload (RFC 1071 style, not inverted) that goes into the XAF header's
 * payload_sum: with it a gateway can build a UDP checksum without touching the payload.
 */
final class PayloadChecksums {
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private PayloadChecksums() {
    }

    /**
     * Sum of the big-endian 16-bit words of the bytes; an odd last byte is padded with a zero byte. The bulk is summed
     * 4 bytes at a time in little-endian order into a 64-bit accumulator and byte-swapped at the end: a
     * ones'-complement sum does not depend on the byte order it is computed in, except for that final swap (RFC 1071,
     * 2.(B)), and 32-bit words zero-extended into 64 bits lose no carry below 2^32 words.
     *
     * <p>Why this shape: the loop is a canonical counted loop ({@code i < words}, int index, constant stride) over
     * {@code offset + i}, so the JIT proves every access in range from the one check before it, drops the per-access
     * bounds checks and vectorizes the loop. The loop it replaces ({@code i + 8 <= length}) kept a check per access
     * and ran about 10x slower (PayloadSumBenchmark, docs/bench/endpoint-cost.md). No slice is taken: escape analysis
     * did not always remove it, which left an allocation per datagram.
     */
    static int onesComplementSum(MemorySegment segment, long offset, int length) {
        Objects.checkFromIndexSize(offset, length, segment.byteSize());
        int words = length & ~3;
        long little = 0;
        for (int i = 0; i < words; i += 4) {
            little += Integer.toUnsignedLong(segment.get(LE_INT, offset + i));
        }
        while ((little >>> 16) != 0) {
            little = (little & 0xFFFF) + (little >>> 16);
        }
        long sum = ((little & 0xFF) << 8) | (little >>> 8); // to big-endian word order
        long at = offset + words;
        int rest = length - words;
        if (rest >= 2) {
            sum += (Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, at)) << 8)
                    | Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, at + 1));
            at += 2;
            rest -= 2;
        }
        if (rest == 1) {
            sum += Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, at)) << 8;
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return (int) sum;
    }
}
