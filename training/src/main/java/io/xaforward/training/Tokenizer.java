package io.xaforward.training;

import java.util.List;
import java.util.Locale;

/**
 * Text to token ids and back. Every rank of a job and every tool that reads its data or checkpoints must use the
 * same tokenizer; {@link #byName} makes that a single word in a command line or a metadata file.
 */
public interface Tokenizer {

    /** Names accepted by {@link #byName}. */
    List<String> NAMES = List.of("gpt2", "bytes");

    /** The name {@link #byName} accepts for this tokenizer. */
    String name();

    /** Exclusive upper bound of the ids {@link #encode} returns. */
    int vocabSize();

    /** Token ids of {@code text}; special-token spellings in the text are encoded as ordinary text. */
    int[] encode(String text);

    /** Text of {@code ids}; ids that end inside a multi-byte character decode to U+FFFD. */
    String decode(int[] ids);

    /** The id that separates documents, or -1 when the tokenizer has none. */
    int endOfText();

    /** Looks a tokenizer up by name (case-insensitive): {@code gpt2} (BPE, 50257 ids) or {@code bytes} (256 ids). */
    static Tokenizer byName(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "gpt2" -> Gpt2Tokenizer.get();
            case "bytes" -> ByteTokenizer.INSTANCE;
            default -> throw new IllegalArgumentException("unknown tokenizer '" + name + "', expected one of " + NAMES);
        };
    }
}
