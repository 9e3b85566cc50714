package io.xaforward.collective;

import io.xaforward.transport.ChunkSink;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static io.xaforward.collective.Wire.F32;

/**
 * The block-scaled integer formats on the wire ({@link WireDtype#INT8}, {@link WireDtype#INT4}) for one chunk size.
 *
 * <p>Values: a block of {@link WireDtype#blockFloats()} consecutive floats shares the scale {@code s = absmax / L}
 * (L = 127 or 7; absmax over the block's finite values; s nudged up by ulps until {@code absmax <= L * s} exactly, so
 * no value needs clamping, except within an ulp of Float.MAX_VALUE where {@code L * s} must stay finite). Each value
 * is sent as {@code q = rint(x / s)} in [-L, L] and decodes to the float32 product {@code q * s}. Hence
 * {@code |x - decoded| <= s / 2} plus the product's rounding, {@code <= s * (1/2 + 2^-17)} in all. An all-zero block
 * has scale 0 and decodes to zeros. A non-finite value (NaN, +-inf) is sent as the otherwise unused code -L-1 and
 * decodes to NaN; the scale comes from the block's finite values, so the other values of the block are unaffected and
 * the all-reduce result is NaN exactly where some rank's input was not finite.
 *
 * <p>Chunks: the transport cuts a message into chunks of {@code chunkBytes} (all but the last exactly that long) and
 * hands each chunk to a sink on its own, in any order, so every chunk must decode without its neighbours. Chunk j of
 * a message of n values carries values {@code [j*E, min(n, (j+1)*E))}, E = {@link #chunkFloats()}, laid out as the
 * float32 scales of every block those values touch (a block that a chunk boundary cuts has its scale in both
 * chunks), then the values (int8: one byte each; int4: two per byte, the even value in the low nibble), then zero
 * padding up to {@code chunkBytes} on all chunks but the last. E is the largest even count for which the worst case
 * fits, so about 1.03 bytes per value for int8 and 0.53 for int4 at 1400-byte chunks (docs/PROTOCOL.md §3).
 * Messages start on a block boundary (the all-reduce aligns its parts to blocks), so block k of a message is block
 * k of the grid every rank uses.
 */
final class BlockQuantizer {
    private static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;

    private final WireDtype dtype;
    private final int block;
    private final boolean four;
    private final int maxLevel;
    private final int chunkBytes;
    private final int chunkFloats;

    BlockQuantizer(WireDtype dtype, int chunkBytes) {
        if (!dtype.quantized()) {
            throw new IllegalArgumentException(dtype.configName() + " is not a block-quantized format");
        }
        this.dtype = dtype;
        this.block = dtype.blockFloats();
        this.four = dtype.valueBits() == 4;
        this.maxLevel = dtype.maxLevel();
        this.chunkBytes = chunkBytes;
        int e = 0;
        for (int candidate = 2; worstChunkBytes(candidate) <= chunkBytes; candidate += 2) {
            e = candidate;
        }
        if (e == 0) {
            throw new IllegalArgumentException(chunkBytes + "-byte chunks cannot hold a scale and two "
                    + dtype.configName() + " values");
        }
        this.chunkFloats = e;
    }

    WireDtype dtype() {
        return dtype;
    }

    /** Values per full chunk (E). */
    int chunkFloats() {
        return chunkFloats;
    }

    /** Bytes of a message carrying {@code n} values. */
    long wireBytes(long n) {
        if (n == 0) {
            return 0;
        }
        long chunks = (n + chunkFloats - 1) / chunkFloats;
        long lastFrom = (chunks - 1) * chunkFloats;
        return (chunks - 1) * chunkBytes + exactChunkBytes((int) lastFrom, (int) n);
    }

    private int worstChunkBytes(int values) {
        int worstBlocks = (values + block - 2) / block + 1; // blocks a run of values can touch at any offset
        return worstBlocks * Float.BYTES + valueBytes(values);
    }

    private int exactChunkBytes(int lo, int hi) {
        return ((hi - 1) / block - lo / block + 1) * Float.BYTES + valueBytes(hi - lo);
    }

    private int valueBytes(int values) {
        return four ? (values + 1) / 2 : values;
    }

    // ------------------------------------------------------------------ the number format (static per dtype)

    /** The scale of {@code length} floats of {@code src} starting at float {@code first}. */
    static float scale(MemorySegment src, long first, int length, int maxLevel) {
        float absmax = 0;
        for (long at = first * Float.BYTES, end = (first + length) * Float.BYTES; at < end; at += Float.BYTES) {
            float v = Math.abs(src.get(F32, at));
            if (v > absmax && v <= Float.MAX_VALUE) { // NaN and infinity are sent as the marker code
                absmax = v;
            }
        }
        if (absmax == 0) {
            return 0;
        }
        float s = Math.max(absmax / maxLevel, Float.MIN_VALUE);
        while ((double) s * maxLevel < absmax) { // rounded down: the largest value would need level L + 1
            s = Math.nextUp(s);
        }
        if ((double) s * maxLevel > Float.MAX_VALUE) {
            // Near Float.MAX_VALUE, L * s itself must stay finite: one ulp down, and the largest value, a hair above
            // L * s, still rounds to level L (quantize clamps), off by far less than half a scale.
            s = Math.nextDown(s);
        }
        return s;
    }

    /**
     * What {@link #quantize} multiplies by: 1 / s in double (exact enough that x · (1/s) and x / s round to the same
     * level but at exact ties, where either level is half a scale off), 0 for an all-zero block. A multiplication
     * instead of a division per value makes encoding several times faster.
     */
    static double inverse(float s) {
        return s == 0 ? 0 : 1.0 / s;
    }

    /** The level of {@code x} under the scale whose {@link #inverse} is given: in [-L, L], or -L-1 if not finite. */
    static int quantize(float x, double inverse, int maxLevel) {
        if (!Float.isFinite(x)) {
            return -maxLevel - 1;
        }
        double v = x * inverse;
        v = v > maxLevel ? maxLevel : (v < -maxLevel ? -maxLevel : v);
        // Round to nearest, ties to even, as Math.rint, but with two additions: adding 1.5 * 2^52 leaves no fraction
        // bits, so the sum is rounded to an integer by the addition itself (|v| <= 127 is far below 2^51).
        return (int) ((v + ROUNDING) - ROUNDING);
    }

    private static final double ROUNDING = 0x1.8p52;

    /** The float32 value of level {@code q} under scale {@code s} (NaN for the non-finite marker). */
    static float decode(int q, float s, int maxLevel) {
        return q < -maxLevel ? Float.NaN : q * s;
    }

    /**
     * Replaces each of the {@code n} floats of {@code floats} by its decoded wire value, block by block from float 0:
     * bitwise what a receiver of {@link #encode} decodes, without the message.
     */
    static void roundInPlace(MemorySegment floats, int n, WireDtype dtype) {
        int b = dtype.blockFloats();
        int level = dtype.maxLevel();
        for (int lo = 0; lo < n; lo += b) {
            int len = Math.min(b, n - lo);
            float s = scale(floats, lo, len, level);
            double inverse = inverse(s);
            for (long at = (long) lo * Float.BYTES, end = at + (long) len * Float.BYTES; at < end; at += Float.BYTES) {
                floats.set(F32, at, decode(quantize(floats.get(F32, at), inverse, level), s, level));
            }
        }
    }

    // ------------------------------------------------------------------ messages

    /** Encodes the {@code n} floats of {@code src} into the {@link #wireBytes}{@code (n)} bytes of {@code dst}. */
    void encode(MemorySegment src, int n, MemorySegment dst) {
        for (int j = 0, lo = 0; lo < n; j++, lo += chunkFloats) {
            int hi = Math.min(n, lo + chunkFloats);
            long base = (long) j * chunkBytes;
            int firstBlock = lo / block;
            int lastBlock = (hi - 1) / block;
            long values = base + (long) (lastBlock - firstBlock + 1) * Float.BYTES;
            for (int k = firstBlock; k <= lastBlock; k++) {
                int blockLo = k * block;
                int blockHi = Math.min(n, blockLo + block);
                float s = scale(src, blockLo, blockHi - blockLo, maxLevel); // the whole block, in both chunks alike
                dst.set(F32, base + (long) (k - firstBlock) * Float.BYTES, s);
                double inverse = inverse(s);
                int from = Math.max(lo, blockLo);
                int to = Math.min(hi, blockHi);
                if (four) {
                    encodeInt4(src, from, to, dst, values + ((from - lo) >> 1), inverse);
                } else {
                    encodeInt8(src, from, to, dst, values + (from - lo), inverse);
                }
            }
            long end = values + valueBytes(hi - lo);
            if (hi < n) {
                dst.asSlice(end, base + chunkBytes - end).fill((byte) 0);
            }
        }
    }

    // One loop per format, so the hot loop has no format test; int4 packs a byte (two values) at a time.
    private static void encodeInt8(MemorySegment src, int from, int to, MemorySegment dst, long at, double inverse) {
        for (int i = from; i < to; i++, at++) {
            dst.set(I8, at, (byte) quantize(src.get(F32, (long) i * Float.BYTES), inverse, 127));
        }
    }

    /** {@code from} is even within its chunk (chunks and blocks start on even values), so bytes are never shared. */
    private static void encodeInt4(MemorySegment src, int from, int to, MemorySegment dst, long at, double inverse) {
        int i = from;
        for (; i + 1 < to; i += 2, at++) {
            int low = quantize(src.get(F32, (long) i * Float.BYTES), inverse, 7);
            int high = quantize(src.get(F32, (long) (i + 1) * Float.BYTES), inverse, 7);
            dst.set(I8, at, (byte) ((low & 0xf) | (high & 0xf) << 4));
        }
        if (i < to) { // the message's last value: the high nibble stays 0
            dst.set(I8, at, (byte) (quantize(src.get(F32, (long) i * Float.BYTES), inverse, 7) & 0xf));
        }
    }

    /**
     * Decodes one chunk of a message of {@code n} values into {@code target} (its float i is the message's value i),
     * adding ({@code sum}) or storing.
     */
    void decodeChunk(long chunkOffset, MemorySegment payload, long payloadOffset, int length, MemorySegment target,
                     int n, boolean sum) {
        if (n == 0 && chunkOffset == 0 && length == 0) {
            return; // an empty part (fewer blocks than ranks) travels as one empty chunk
        }
        long j = chunkOffset / chunkBytes;
        long lo = j * chunkFloats;
        if (chunkOffset % chunkBytes != 0 || lo >= n) {
            throw new IllegalArgumentException(dtype.configName() + " chunk at offset " + chunkOffset
                    + " is outside a message of " + n + " values in " + chunkBytes + "-byte chunks");
        }
        int from = (int) lo;
        int hi = (int) Math.min(n, lo + chunkFloats);
        int expected = hi < n ? chunkBytes : exactChunkBytes(from, hi);
        if (length != expected) {
            throw new IllegalArgumentException(dtype.configName() + " chunk at offset " + chunkOffset + " has "
                    + length + " bytes, expected " + expected + ": do all ranks use the same chunk size?");
        }
        int firstBlock = from / block;
        int lastBlock = (hi - 1) / block;
        long values = payloadOffset + (long) (lastBlock - firstBlock + 1) * Float.BYTES;
        for (int k = firstBlock; k <= lastBlock; k++) {
            float s = payload.get(F32, payloadOffset + (long) (k - firstBlock) * Float.BYTES);
            int i = Math.max(from, k * block);
            int to = Math.min(hi, k * block + block);
            if (four) {
                decodeInt4(payload, values, i - from, to - from, s, target, i, sum);
            } else {
                decodeInt8(payload, values + (i - from), to - i, s, target, i, sum);
            }
        }
    }

    // One loop per format and operation, so the hot loop has no format test and the sum test is hoisted.
    private static void decodeInt8(MemorySegment payload, long at, int count, float s, MemorySegment target,
                                   int first, boolean sum) {
        long t = (long) first * Float.BYTES;
        if (sum) {
            for (int w = 0; w < count; w++, t += Float.BYTES) {
                int q = payload.get(I8, at + w);
                target.set(F32, t, target.get(F32, t) + (q == -128 ? Float.NaN : q * s));
            }
        } else {
            for (int w = 0; w < count; w++, t += Float.BYTES) {
                int q = payload.get(I8, at + w);
                target.set(F32, t, q == -128 ? Float.NaN : q * s);
            }
        }
    }

    private static void decodeInt4(MemorySegment payload, long values, int w, int end, float s, MemorySegment target,
                                   int first, boolean sum) {
        long t = (long) first * Float.BYTES;
        if ((w & 1) != 0) { // not at a block start: blocks and chunks start on even values, so this never runs today
            decodeInt4Value(payload, values, w++, s, target, t, sum);
            t += Float.BYTES;
        }
        for (; w + 1 < end; w += 2, t += 2 * Float.BYTES) { // a byte at a time: the low nibble, then the high one
            int packed = payload.get(I8, values + (w >> 1));
            int low = packed << 28 >> 28;
            int high = packed << 24 >> 28;
            float a = low == -8 ? Float.NaN : low * s;
            float b = high == -8 ? Float.NaN : high * s;
            if (sum) {
                a += target.get(F32, t);
                b += target.get(F32, t + Float.BYTES);
            }
            target.set(F32, t, a);
            target.set(F32, t + Float.BYTES, b);
        }
        if (w < end) {
            decodeInt4Value(payload, values, w, s, target, t, sum);
        }
    }

    private static void decodeInt4Value(MemorySegment payload, long values, int w, float s, MemorySegment target,
                                        long t, boolean sum) {
        int packed = payload.get(I8, values + (w >> 1));
        int q = ((w & 1) == 0 ? packed << 28 : packed << 24) >> 28;
        float v = q == -8 ? Float.NaN : q * s;
        target.set(F32, t, sum ? target.get(F32, t) + v : v);
    }

    /** Decodes a whole message ({@link #encode}'s output) into {@code target}. */
    void decode(MemorySegment message, int n, MemorySegment target) {
        for (long offset = 0; offset < message.byteSize(); offset += chunkBytes) {
            int length = (int) Math.min(chunkBytes, message.byteSize() - offset);
            decodeChunk(offset, message, offset, length, target, n, false);
        }
    }

    /**
     * A sink adding each received chunk of an {@code n}-value message into {@code target} in float32, straight from
     * the receive buffer. The expect's destination ({@link #wireBytes} long) is not written.
     */
    ChunkSink sumInto(MemorySegment target, int n) {
        return (dest, destOffset, payload, payloadOffset, length) ->
                decodeChunk(destOffset, payload, payloadOffset, length, target, n, true);
    }

    /**
     * A sink storing the decoded values of each chunk into {@code target}; with {@code keepBytes} it also copies the
     * chunk into the expect's destination, so the message can be passed on unchanged.
     */
    ChunkSink decodeInto(MemorySegment target, int n, boolean keepBytes) {
        return (dest, destOffset, payload, payloadOffset, length) -> {
            decodeChunk(destOffset, payload, payloadOffset, length, target, n, false);
            if (keepBytes) {
                MemorySegment.copy(payload, payloadOffset, dest, destOffset, length);
            }
        };
    }
}
