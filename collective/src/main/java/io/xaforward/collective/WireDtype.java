package io.xaforward.collective;

import io.xaforward.protocol.ConfigWord;

import java.util.Locale;
import java.util.Map;

/**
 * The number format of gradients on the wire. Buffers stay float32 on every rank; BF16 halves the bytes each
 * all-reduce message carries, rounding to nearest even before sending and accumulating in float32 after receiving
 * (docs/TRANSPORT.md, "bf16 on the wire").
 */
public enum WireDtype implements ConfigWord {
    FP32,
    BF16;

    /** Reads {@code fp32} or {@code bf16} (float32, f32 and bfloat16 too; {@link ConfigWord#parse}). */
    public static WireDtype fromName(String name) {
        return ConfigWord.parse(WireDtype.class, "wire dtype", name, Map.of("f32", FP32, "float32", FP32, "bfloat16", BF16));
    }

    /** The word for this format on command lines and in job files: fp32 or bf16. */
    @Override
    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
