package io.xaforward.collective;

import io.xaforward.common.ConfigWord;

import java.util.Locale;
import java.util.Map;

/**
 * The number format of DiLoCo's outer all-reduce (the pseudo-gradients that cross data centers every H steps):
 * fp32, bf16 (the {@link WireDtype#BF16} wire), or the block-quantized int8 and int4 formats of the quantized
 * all-reduce ({@link WireDtype#INT8}, {@link WireDtype#INT4}: 128 values per block with one float32 scale).
 */
public enum OuterDtype implements ConfigWord {
    FP32,
    BF16,
    INT8,
    INT4;

    /** The default of {@code --outer-dtype}: fp32, the outer step exactly as the paper's fp32 baseline. */
    public static final OuterDtype DEFAULT = FP32;

    /** Reads fp32, bf16, int8 or int4 (float32 and bfloat16 too; {@link ConfigWord#parse}). */
    public static OuterDtype fromName(String name) {
        return ConfigWord.parse(OuterDtype.class, "outer dtype", name,
                Map.of("f32", FP32, "float32", FP32, "bfloat16", BF16));
    }

    @Override
    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The wire format the outer all-reduce runs with. */
    public WireDtype wireDtype() {
        return switch (this) {
            case FP32 -> WireDtype.FP32;
            case BF16 -> WireDtype.BF16;
            case INT8 -> WireDtype.INT8;
            case INT4 -> WireDtype.INT4;
        };
    }

    /** Payload bytes one value costs on the wire: 4, 2, or the quantized value plus its share of the block's scale. */
    public double bytesPerValue() {
        return switch (this) {
            case FP32 -> 4;
            case BF16 -> 2;
            case INT8 -> 1 + 4.0 / WireDtype.INT8.blockFloats();
            case INT4 -> 0.5 + 4.0 / WireDtype.INT4.blockFloats();
        };
    }
}
