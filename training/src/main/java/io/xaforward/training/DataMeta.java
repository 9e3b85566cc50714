package io.xaforward.training;

import io.xaforward.common.Json;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * meta.json of a prepared data directory (next to nanoGPT-format train.bin and val.bin): which tokenizer wrote the
 * ids, the vocabulary they lie in, the token counts and where the text came from.
 *
 * @param tokenizer   {@link Tokenizer#name()} of the tokenizer that wrote the ids
 * @param vocab_size  exclusive bound of the ids
 * @param dtype       always "uint16" (little-endian), nanoGPT's format
 * @param train_tokens tokens in train.bin
 * @param val_tokens  tokens in val.bin
 * @param source      where the text came from (file or corpus name)
 */
@SuppressWarnings("checkstyle:RecordComponentName") // snake_case: these are the JSON keys
public record DataMeta(String tokenizer, int vocab_size, String dtype, long train_tokens, long val_tokens,
                       String source) {

    public static final String FILE_NAME = "meta.json";

    public void write(Path dir) throws IOException {
        Files.writeString(dir.resolve(FILE_NAME), Json.pretty(this));
    }

    /** The meta.json in {@code dir}, or null when there is none. */
    public static DataMeta readIfPresent(Path dir) throws IOException {
        Path file = dir.resolve(FILE_NAME);
        if (!Files.isRegularFile(file)) {
            return null;
        }
        DataMeta meta;
        try {
            meta = Json.parse(Files.readString(file), DataMeta.class);
        } catch (RuntimeException e) {
            throw new IOException(file + " is not valid meta.json: " + e.getMessage(), e);
        }
        if (meta == null || meta.tokenizer() == null || meta.vocab_size() <= 0) {
            throw new IOException(file + " lacks tokenizer or vocab_size");
        }
        return meta;
    }
}
