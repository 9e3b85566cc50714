package io.xaforward.training;

import io.xaforward.common.Json;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A checkpoint as a Hugging Face model directory that {@code GPT2LMHeadModel.from_pretrained(DIR)} and
 * {@code GPT2Tokenizer.from_pretrained(DIR)} load: {@code model.safetensors} (GPT2LMHeadModel's state dict),
 * {@code config.json} (the preset's shape), and the tokenizer's {@code vocab.json}, {@code merges.txt},
 * {@code tokenizer_config.json} and {@code special_tokens_map.json}.
 *
 * <p>The model differs from OpenAI's GPT-2 in one function: its MLP uses the exact GELU, x * Phi(x) with the error
 * function, where GPT-2 uses the tanh approximation. Hugging Face names the exact one {@code "gelu"} and GPT-2's
 * {@code "gelu_new"}; config.json says {@code "gelu"}, so the loaded model computes what was trained. Dropout is 0
 * (the trainer uses none); LayerNorm epsilon is DJL's 1e-5, as GPT-2's.
 */
public final class HuggingFaceExport {

    public static final String WEIGHTS = "model.safetensors";
    public static final String CONFIG = "config.json";
    /** Every file {@link #write} creates, for callers that must not overwrite them. */
    public static final List<String> FILES = List.of(WEIGHTS, CONFIG, BpeVocabularyFiles.VOCAB, BpeVocabularyFiles.MERGES,
            "tokenizer_config.json", "special_tokens_map.json");
    /** Hugging Face's name of the exact (erf) GELU that {@link TransformerBlock} uses. */
    public static final String ACTIVATION = "gelu";
    /** LayerNorm epsilon of the model (DJL's default). */
    public static final double LAYER_NORM_EPSILON = 1e-5;

    private HuggingFaceExport() {
    }

    /** Writes the model directory {@code dir} (created when missing; existing files of the same names replaced). */
    public static void write(CheckpointModel model, Tokenizer tokenizer, Path dir) throws IOException {
        Files.createDirectories(dir);
        ModelConfig c = model.config();
        if (tokenizer.vocabSize() > c.vocabSize()) {
            throw new IllegalArgumentException("tokenizer " + tokenizer.name() + " (" + tokenizer.vocabSize()
                    + " ids) does not fit the model's vocabulary of " + c.vocabSize());
        }
        SafetensorsExport.write(model, dir.resolve(WEIGHTS), "transformer.");
        Files.writeString(dir.resolve(CONFIG), Json.pretty(config(c, tokenizer, model.step())));
        BpeVocabularyFiles.write(tokenizer, dir);
        Files.writeString(dir.resolve("tokenizer_config.json"), Json.pretty(tokenizerConfig(c, tokenizer)));
        Files.writeString(dir.resolve("special_tokens_map.json"), Json.pretty(specialTokens(tokenizer)));
    }

    /** GPT2Config's fields for a preset (plus xaf_* fields naming where the weights came from). */
    public static Map<String, Object> config(ModelConfig c, Tokenizer tokenizer, long step) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("architectures", List.of("GPT2LMHeadModel"));
        m.put("model_type", "gpt2");
        m.put("vocab_size", c.vocabSize());
        m.put("n_positions", c.contextLength());
        m.put("n_ctx", c.contextLength());
        m.put("n_embd", c.embeddingSize());
        m.put("n_layer", c.layers());
        m.put("n_head", c.heads());
        m.put("n_inner", 4 * c.embeddingSize());
        m.put("activation_function", ACTIVATION);
        m.put("layer_norm_epsilon", LAYER_NORM_EPSILON);
        m.put("resid_pdrop", 0.0);
        m.put("embd_pdrop", 0.0);
        m.put("attn_pdrop", 0.0);
        m.put("initializer_range", 0.02);
        m.put("scale_attn_weights", true);
        m.put("scale_attn_by_inverse_layer_idx", false);
        m.put("reorder_and_upcast_attn", false);
        m.put("tie_word_embeddings", c.tiedHead());
        if (tokenizer.endOfText() >= 0) {
            m.put("bos_token_id", tokenizer.endOfText());
            m.put("eos_token_id", tokenizer.endOfText());
        }
        m.put("torch_dtype", "float32");
        m.put("xaf_preset", c.name());
        m.put("xaf_step", step);
        m.put("xaf_tokenizer", tokenizer.name());
        return m;
    }

    private static Map<String, Object> tokenizerConfig(ModelConfig c, Tokenizer tokenizer) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("tokenizer_class", "GPT2Tokenizer");
        m.put("model_max_length", c.contextLength());
        m.put("add_prefix_space", false);
        m.putAll(specialTokens(tokenizer));
        return m;
    }

    /** GPT-2's {@code <|endoftext|>} as bos, eos and unk; the byte tokenizer has no special token. */
    private static Map<String, Object> specialTokens(Tokenizer tokenizer) {
        Map<String, Object> m = new LinkedHashMap<>();
        String special = tokenizer.endOfText() >= 0 ? "<|endoftext|>" : null;
        m.put("bos_token", special);
        m.put("eos_token", special);
        m.put("unk_token", special);
        return m;
    }
}
