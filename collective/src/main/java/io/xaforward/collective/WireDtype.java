package io.xaforward.collective;

/**
 * The number format of gradients on the wire. Buffers stay float32 on every rank; BF16 halves the bytes each
 * all-reduce message carries, rounding to nearest even before sending and accumulating in float32 after receiving
 * (docs/TRANSPORT.md, "bf16 on the wire").
 */
public enum WireDtype {
    FP32,
    BF16;

    /** Parses {@code fp32} or {@code bf16} (any case; float32, f32 and bfloat16 too). */
    public static WireDtype fromName(String name) {
        return switch (name == null ? "" : name.toLowerCase(java.util.Locale.ROOT)) {
            case "fp32", "f32", "float32" -> FP32;
            case "bf16", "bfloat16" -> BF16;
            default -> throw new IllegalArgumentException("wire dtype must be fp32 or bf16, was '" + name + "'");
        };
    }

    /** The word for this format on command lines and in job files: fp32 or bf16. */
    public String configName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
