package io.xaforward.training;

import java.util.List;
import java.util.Locale;

/**
 * Shape of a decoder-only transformer language model. Presets are looked up by name so that every rank of a
 * data-parallel job (and the CLI) builds exactly the same model from one word; large presets exist for their shapes
 * (parameter counts, gradient sizes for traffic planning) and need not be allocated.
 *
 * @param name           preset name (or "custom")
 * @param vocabSize      number of token ids
 * @param contextLength  maximum sequence length (learned position embeddings)
 * @param layers         number of pre-LN transformer blocks
 * @param embeddingSize  channel width d
 * @param heads          attention heads; must divide d
 * @param tiedHead       true when the output head reuses the token embedding matrix (GPT-2 style)
 */
public record ModelConfig(String name, int vocabSize, int contextLength, int layers, int embeddingSize, int heads,
                          boolean tiedHead) {

    /** Names accepted by {@link #preset(String)}. */
    public static final List<String> PRESETS = List.of("tiny", "gpt2-tiny", "wide", "small", "gpt2-124m",
            "pythia-70m");

    public ModelConfig {
        if (vocabSize <= 0 || contextLength <= 0 || layers <= 0 || embeddingSize <= 0 || heads <= 0) {
            throw new IllegalArgumentException("model dimensions must be positive: " + name);
        }
        if (embeddingSize % heads != 0) {
            throw new IllegalArgumentException("embeddingSize " + embeddingSize + " not divisible by heads " + heads);
        }
    }

    /** Looks a preset up by name (case-insensitive); the exception lists the valid names. */
    public static ModelConfig preset(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "tiny" -> new ModelConfig("tiny", 256, 64, 2, 64, 4, true);
            // GPT-2's vocabulary on a narrow model: the tied 50257 x 32 embedding (1.6 M parameters, 6.4 MB of
            // gradient) is almost the whole model, which keeps each all-reduce short enough for a minutes-long demo.
            case "gpt2-tiny" -> new ModelConfig("gpt2-tiny", 50257, 64, 2, 32, 4, true);
            // One wide layer on short contexts: a large gradient (~1.9 M parameters, 7.5 MB) for little compute,
            // the communication-bound configuration of the training benchmark.
            case "wide" -> new ModelConfig("wide", 256, 32, 1, 384, 6, true);
            case "small" -> new ModelConfig("small", 256, 128, 6, 384, 6, true);
            case "gpt2-124m" -> new ModelConfig("gpt2-124m", 50257, 1024, 12, 768, 12, true);
            case "pythia-70m" -> new ModelConfig("pythia-70m", 50304, 2048, 6, 512, 8, false);
            default -> throw new IllegalArgumentException("unknown model preset '" + name + "', expected one of " + PRESETS);
        };
    }

    /** Channels per attention head. */
    public int headSize() {
        return embeddingSize / heads;
    }

    /**
     * Parameter count of the model {@link GptModel} builds, computed from the shapes without allocating anything:
     * embeddings, per block 2 LayerNorms + qkv/proj + 4x MLP with biases (12d^2 + 13d), final LayerNorm, head.
     */
    public long parameterCount() {
        long d = embeddingSize;
        long embeddings = (long) vocabSize * d + (long) contextLength * d;
        long perBlock = 12 * d * d + 13 * d;
        long head = tiedHead ? 0 : (long) vocabSize * d;
        return embeddings + layers * perBlock + 2 * d + head;
    }

    /** Size of one full fp32 gradient in bytes: what one all-reduce moves per step. */
    public long gradientBytes() {
        return parameterCount() * Float.BYTES;
    }
}
