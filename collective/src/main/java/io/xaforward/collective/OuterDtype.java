package io.xaforward.collective;

import io.xaforward.protocol.ConfigWord;

import java.util.Locale;
import java.util.Map;

/**
 * The number format of DiLoCo's outer all-reduce (the pseudo-gradients that cross data centers every H steps):
 * fp32, bf16 (the {@link WireDtype#BF16} wire), or the block-quantized int8 and int4 formats of the quantized
 * all-reduce. Until that all-reduce is in this build, int8 and int4 are refused before a job starts
 * ({@link #unsupportedReason()}).
 */
public enum OuterDtype implements ConfigWord {
    FP32,
    BF16,
    INT8,
    INT4;

    /** The default of {@code --outer-dtype}: fp32 until the quantized outer all-reduce lands. */
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

    /** Why this build cannot put this format on the wire, or null when it can. */
    public String unsupportedReason() {
        return switch (this) {
            case FP32, BF16 -> null;
            case INT8, INT4 -> "--outer-dtype " + configName() + " needs the quantized outer all-reduce, which this"
                    + " build does not have yet: use fp32 or bf16";
        };
    }

    /** The wire format the outer all-reduce runs with (only for supported formats). */
    public WireDtype wireDtype() {
        return switch (this) {
            case FP32 -> WireDtype.FP32;
            case BF16 -> WireDtype.BF16;
            case INT8, INT4 -> throw new IllegalStateException(unsupportedReason());
        };
    }
}
