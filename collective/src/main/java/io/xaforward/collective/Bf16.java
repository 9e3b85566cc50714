package io.xaforward.collective;

import io.xaforward.protocol.ElementType;
import io.xaforward.transport.ChunkSink;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import static io.xaforward.collective.Wire.F32;

/**
 * bfloat16 conversion for gradients on the wire: the upper 16 bits of a float32 (same exponent range, 8 significant
 * bits), rounded to nearest, ties to even. NaN stays NaN (quiet, sign kept), infinities and signed zeros are kept,
 * finite values beyond the largest bf16 round to infinity as IEEE rounding requires, and float32 subnormals round
 * to the nearest bf16 subnormal or zero. Values are little-endian on the wire like float32 gradients.
 */
public final class Bf16 {
    /** Element type code of bf16 payloads in the XAF header. */
    static final int ELEMENT_TYPE = ElementType.BF16.code();
    static final ValueLayout.OfShort B16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private Bf16() {
    }

    /** Rounds a float32 to the nearest bf16 (ties to even); returns the 16 bits. */
    public static short fromFloat(float value) {
        int bits = Float.floatToRawIntBits(value);
        if ((bits & 0x7fff_ffff) > 0x7f80_0000) {
            return (short) ((bits >>> 16) | 0x0040); // NaN: keep sign and top payload bits, force quiet
        }
        int tieToEven = 0x7fff + ((bits >>> 16) & 1);
        return (short) ((bits + tieToEven) >>> 16);
    }

    /** The float32 value of a bf16 (exact). */
    public static float toFloat(short bf16) {
        return Float.intBitsToFloat((bf16 & 0xffff) << 16);
    }

    /** {@code value} rounded to the nearest bf16-representable float32. */
    public static float round(float value) {
        return toFloat(fromFloat(value));
    }

    /** Encodes {@code floats} float32 values of {@code src} into bf16 in {@code dst} (2 bytes each). */
    public static void encode(MemorySegment src, MemorySegment dst, long floats) {
        for (long i = 0; i < floats; i++) {
            dst.set(B16, i * 2, fromFloat(src.get(F32, i * 4)));
        }
    }

    /** Rounds every float32 of {@code floats} in place to its nearest bf16 value. */
    public static void roundInPlace(MemorySegment floats) {
        for (long offset = 0; offset < floats.byteSize(); offset += 4) {
            floats.set(F32, offset, round(floats.get(F32, offset)));
        }
    }

    /**
     * A sink for bf16 messages whose elements are added in float32 into {@code target} ({@code target[i] +=
     * chunk[i]}), straight from the receive buffer. Pass a bf16-sized segment as the expect's destination; only
     * {@code target} is written.
     */
    static ChunkSink sumInto(MemorySegment target) {
        return (dest, destOffset, payload, payloadOffset, length) -> {
            checkWhole(destOffset, length);
            long base = destOffset * 2;
            for (int i = 0; i < length; i += 2) {
                long at = base + (long) i * 2;
                target.set(F32, at, target.get(F32, at) + toFloat(payload.get(B16, payloadOffset + i)));
            }
        };
    }

    /**
     * A sink for bf16 messages whose elements are stored as exact float32 values into {@code target}. Pass a
     * bf16-sized segment as the expect's destination; only {@code target} is written.
     */
    static ChunkSink decodeInto(MemorySegment target) {
        return (dest, destOffset, payload, payloadOffset, length) -> {
            checkWhole(destOffset, length);
            long base = destOffset * 2;
            for (int i = 0; i < length; i += 2) {
                target.set(F32, base + (long) i * 2, toFloat(payload.get(B16, payloadOffset + i)));
            }
        };
    }

    private static void checkWhole(long destOffset, int length) {
        if ((length & 1) != 0 || (destOffset & 1) != 0) {
            throw new IllegalArgumentException("bf16 chunk at offset " + destOffset + " with " + length
                    + " bytes is not a whole number of elements");
        }
    }
}
