package io.xaforward.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The Internet checksum (RFC 1071): a ones'-complement sum of 16-bit big-endian words, over a
 * {@link MemorySegment} range, without allocation.
 *
 * <p>A <em>partial sum</em> is an int in 0..0xFFFF: the folded ones'-complement sum, not inverted. Partial sums
 * of separate ranges are {@link #combine combined} into the sum of the whole, which is what lets a sender carry the
 * payload's sum in the XAF header and a gateway build a UDP checksum in O(1).
 *
 * <p><b>Word alignment.</b> {@link #sum} always reads the byte at {@code offset} as the <em>high</em> byte of a
 * 16-bit word, i.e. a range is summed as if it started at an even position of the checksummed data, whatever its
 * offset in the segment (the segment's own alignment does not matter). An odd-length range is padded with one zero
 * byte, as RFC 1071 says. A range that really starts at an odd position of the checksummed data must be combined
 * with {@link #combine(int, int, long)} (which swaps its bytes). XAF never needs that: every header length is even.
 */
public final class InternetChecksum {
    private static final ValueLayout.OfInt LE_INT =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Bytes summed before the accumulator is folded: 2^28 ints, each below 2^32, stay below 2^60. */
    private static final int BYTES_PER_FOLD = 1 << 30;

    private InternetChecksum() {}

    /**
     * Ones'-complement sum of {@code length} bytes of {@code segment} from {@code offset}, folded to 16 bits and not
     * inverted.
     *
     * <p>The bulk is summed 4 bytes at a time in <em>little-endian</em> order into a 64-bit accumulator and
     * byte-swapped once at the end: a ones'-complement sum does not depend on the byte order it is computed in,
     * except for that final swap (RFC 1071, 2.(B)). Why this shape: the inner loop is a canonical counted loop
     * ({@code int i < bytes}, constant stride) over {@code at + i}, so the JIT proves every access in range from one
     * check before it, drops the per-access bounds checks and vectorizes it; a loop over a {@code long} index kept a
     * check per access and ran about 10x slower on gradient payloads (PayloadSumBenchmark,
     * docs/bench/endpoint-cost.md). Ranges longer than {@link #BYTES_PER_FOLD} are summed in pieces of that many
     * bytes (a multiple of 4, so every piece starts at an even position), folding between pieces. No slice is taken,
     * so nothing is allocated.
     *
     * @throws IndexOutOfBoundsException if the range is outside the segment
     */
    public static int sum(MemorySegment segment, long offset, long length) {
        if (length < 0 || offset < 0 || offset > segment.byteSize() - length) {
            throw new IndexOutOfBoundsException("checksum range [" + offset + ", +" + length
                    + ") is outside a segment of " + segment.byteSize() + " bytes");
        }
        long wholeWords = length & ~3L;
        long little = 0;
        for (long done = 0; done < wholeWords; done += BYTES_PER_FOLD) {
            long at = offset + done;
            int bytes = (int) Math.min(BYTES_PER_FOLD, wholeWords - done);
            for (int i = 0; i < bytes; i += 4) {
                little += Integer.toUnsignedLong(segment.get(LE_INT, at + i));
            }
            little = fold(little);
        }
        long sum = swapBytes((int) little); // the little-endian word sum in big-endian word order
        long at = offset + wholeWords;
        long rest = length - wholeWords;
        if (rest >= 2) {
            sum += Short.toUnsignedInt(segment.get(XafHeader.BE_SHORT, at));
            at += 2;
            rest -= 2;
        }
        if (rest == 1) {
            sum += Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, at)) << 8;
        }
        return fold(sum);
    }

    /** Folds a non-negative wide sum to 16 bits with end-around carry; 0 stays 0, only all-zero data sums to 0. */
    public static int fold(long sum) {
        long s = sum;
        while ((s >>> 16) != 0) {
            s = (s & 0xFFFF) + (s >>> 16);
        }
        return (int) s;
    }

    /** Ones'-complement sum of two partial sums of ranges that both start at even positions. */
    public static int combine(int sumA, int sumB) {
        return fold((sumA & 0xFFFFL) + (sumB & 0xFFFFL));
    }

    /**
     * Adds the partial sum {@code sumB} of a range that begins {@code offsetOfB} bytes after the start of the data
     * that {@code sumA} began at. An odd offset means B's words straddle the whole's words, so B's sum is
     * byte-swapped first (RFC 1071 section 2(B)).
     */
    public static int combine(int sumA, int sumB, long offsetOfB) {
        int b = (offsetOfB & 1) == 0 ? sumB : swapBytes(sumB);
        return combine(sumA, b);
    }

    /** Adds a 16-bit value (e.g. a pseudo-header word) into a partial sum. */
    public static int add16(int sum, int word) {
        return combine(sum, word & 0xFFFF);
    }

    /** Adds a 32-bit value (as two 16-bit words) into a partial sum. */
    public static int add32(int sum, int value) {
        return fold((sum & 0xFFFFL) + (value >>> 16) + (value & 0xFFFF));
    }

    /**
     * The value to write into a UDP checksum field: the complement of the sum, with a computed 0 sent as 0xFFFF
     * because 0 means "no checksum" in UDP over IPv4 (RFC 768) and is forbidden over IPv6 (RFC 8200).
     */
    public static int finish(int sum) {
        int c = ~fold(sum & 0xFFFFL) & 0xFFFF;
        return c == 0 ? 0xFFFF : c;
    }

    /** The plain complement of the sum: the value to write into an IPv4 header checksum field. */
    public static int complement(int sum) {
        return ~fold(sum & 0xFFFFL) & 0xFFFF;
    }

    /** True when data that includes its own checksum field sums to 0xFFFF (ones'-complement negative zero). */
    public static boolean isValid(int sumIncludingChecksumField) {
        return fold(sumIncludingChecksumField & 0xFFFFL) == 0xFFFF;
    }

    private static int swapBytes(int sum) {
        return ((sum & 0xFF) << 8) | ((sum >>> 8) & 0xFF);
    }
}
