package io.xaforward.training;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Byte-level tokens of a UTF-8 text file (vocabulary 256): no tokenizer to ship or download, and every file is
 * valid input, which makes it the default corpus for tests and demos.
 */
public final class TextDataset implements TokenDataset {

    /** Vocabulary of a byte-level dataset. */
    public static final int BYTE_VOCAB = 256;

    private final byte[] bytes;

    private TextDataset(byte[] bytes, String origin) {
        if (bytes.length == 0) {
            throw new IllegalArgumentException("empty text dataset: " + origin);
        }
        this.bytes = bytes;
    }

    /** Reads a whole text file. */
    public static TextDataset open(Path file) throws IOException {
        return new TextDataset(Files.readAllBytes(file), file.toString());
    }

    /** Byte tokens of the UTF-8 encoding of {@code text}. */
    public static TextDataset of(String text) {
        return new TextDataset(text.getBytes(StandardCharsets.UTF_8), "<string>");
    }

    @Override
    public long size() {
        return bytes.length;
    }

    @Override
    public int vocabSize() {
        return BYTE_VOCAB;
    }

    @Override
    public int tokenAt(long index) {
        return bytes[Math.toIntExact(index)] & 0xFF;
    }
}
