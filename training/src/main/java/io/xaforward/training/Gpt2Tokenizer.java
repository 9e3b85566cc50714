package io.xaforward.training;

import com.knuddels.jtokkit.Encodings;
import com.knuddels.jtokkit.api.Encoding;
import com.knuddels.jtokkit.api.EncodingType;
import com.knuddels.jtokkit.api.IntArrayList;

/**
 * GPT-2's byte-level BPE (the r50k_base ranks, 50257 ids with {@code <|endoftext|>} = 50256), as OpenAI's tiktoken
 * and Hugging Face's GPT2TokenizerFast produce it. The vocabulary ships inside the jtokkit jar, so nothing is
 * downloaded. Thread-safe.
 */
public final class Gpt2Tokenizer implements Tokenizer {

    /** GPT-2's vocabulary size. */
    public static final int VOCAB_SIZE = 50257;
    /** GPT-2's document separator {@code <|endoftext|>}. */
    public static final int END_OF_TEXT = 50256;

    private static volatile Gpt2Tokenizer instance;

    private final Encoding encoding;

    private Gpt2Tokenizer(Encoding encoding) {
        this.encoding = encoding;
    }

    /** The shared instance (loading the ranks takes a few hundred milliseconds, so it is done once). */
    public static Gpt2Tokenizer get() {
        Gpt2Tokenizer t = instance;
        if (t == null) {
            synchronized (Gpt2Tokenizer.class) {
                t = instance;
                if (t == null) {
                    t = new Gpt2Tokenizer(Encodings.newLazyEncodingRegistry().getEncoding(EncodingType.R50K_BASE));
                    instance = t;
                }
            }
        }
        return t;
    }

    @Override
    public String name() {
        return "gpt2";
    }

    @Override
    public int vocabSize() {
        return VOCAB_SIZE;
    }

    @Override
    public int[] encode(String text) {
        return encoding.encodeOrdinary(text).toArray();
    }

    @Override
    public String decode(int[] ids) {
        IntArrayList list = new IntArrayList(ids.length);
        for (int id : ids) {
            if (id < 0 || id >= VOCAB_SIZE) {
                throw new IllegalArgumentException("token id " + id + " outside GPT-2's vocabulary of " + VOCAB_SIZE);
            }
            list.add(id);
        }
        return encoding.decode(list);
    }

    @Override
    public int endOfText() {
        return END_OF_TEXT;
    }
}
