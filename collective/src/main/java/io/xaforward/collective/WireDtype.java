package io.xaforward.collective;

import io.xaforward.common.ConfigWord;
import io.xaforward.protocol.ElementType;

import java.util.Locale;
import java.util.Map;

/**
 * The number format of gradients on the wire. Buffers stay float32 on every rank; only the messages change, and
 * values are summed in float32 after receiving (docs/TRANSPORT.md, "Number formats on the wire").
 * <ul>
 *   <li>{@link #FP32}: float32 as it is, 4 bytes per value.</li>
 *   <li>{@link #BF16}: rounded to nearest even bfloat16, 2 bytes per value.</li>
 *   <li>{@link #INT8}, {@link #INT4}: blocks of {@link #blockFloats()} values share one float32 scale (the block's
 *   largest magnitude / 127, resp. / 7); each value is the nearest integer multiple of that scale, about 1.03 resp.
 *   0.53 bytes per value. Meant for the rare, large outer all-reduce of DiLoCo (pseudo-gradients), where 4x or 8x
 *   fewer bytes matter more than the rounding, usually with {@link ErrorFeedback}.</li>
 * </ul>
 */
public enum WireDtype implements ConfigWord {
    FP32(0, 0),
    BF16(0, 0),
    INT8(8, 128),
    INT4(4, 128);

    private final int bits;
    private final int blockFloats;

    WireDtype(int bits, int blockFloats) {
        this.bits = bits;
        this.blockFloats = blockFloats;
    }

    /** Reads {@code fp32}, {@code bf16}, {@code int8} or {@code int4} (f32, float32, bfloat16, i8 and i4 too). */
    public static WireDtype fromName(String name) {
        return ConfigWord.parse(WireDtype.class, "wire dtype", name, Map.of("f32", FP32, "float32", FP32,
                "bfloat16", BF16, "i8", INT8, "i4", INT4));
    }

    /** The word for this format on command lines and in job files: fp32, bf16, int8 or int4. */
    @Override
    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** True for the block-scaled integer formats ({@link #INT8}, {@link #INT4}). */
    public boolean quantized() {
        return bits != 0;
    }

    /** Values sharing one scale in the quantized formats (0 for fp32 and bf16). */
    public int blockFloats() {
        return blockFloats;
    }

    /** Bits per value of the quantized formats (0 for fp32 and bf16). */
    int valueBits() {
        return bits;
    }

    /** Largest integer a quantized value takes; the most negative code (-128, -8) marks a non-finite input. */
    int maxLevel() {
        return bits == 0 ? 0 : (1 << (bits - 1)) - 1;
    }

    /** The header's elem_type for messages in this format. */
    ElementType elementType() {
        return switch (this) {
            case FP32 -> ElementType.F32;
            case BF16 -> ElementType.BF16;
            case INT8 -> ElementType.I8_BLOCKS;
            case INT4 -> ElementType.I4_BLOCKS;
        };
    }
}
