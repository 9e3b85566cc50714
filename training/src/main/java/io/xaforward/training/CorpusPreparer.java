package io.xaforward.training;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * Tokenizes text into a nanoGPT-format data directory: train.bin and val.bin (uint16 little-endian ids, what
 * nanoGPT's prepare.py writes with np.uint16.tofile) and a {@link DataMeta} meta.json. Documents are separated by the
 * tokenizer's end-of-text id where it has one (as GPT-2's training data was); the last {@code validationFraction} of
 * the token stream becomes val.bin, so validation text is never trained on.
 */
public final class CorpusPreparer {

    /** Names of the files a prepared directory holds. */
    public static final String TRAIN_FILE = "train.bin";
    public static final String VALIDATION_FILE = "val.bin";

    // Text is encoded in slices of about this many characters, cut where BPE cannot merge across the cut.
    private static final int SLICE_CHARS = 1 << 20;

    private CorpusPreparer() {
    }

    /** Prepares a UTF-8 text file as one document. */
    public static DataMeta prepareFile(Path text, Tokenizer tokenizer, Path outDir, double validationFraction)
            throws IOException {
        return prepare(List.of(TextFiles.readUtf8(text)), text.toAbsolutePath().toString(), tokenizer, outDir,
                validationFraction);
    }

    /** Prepares documents; {@code source} goes into meta.json. */
    public static DataMeta prepare(List<String> documents, String source, Tokenizer tokenizer, Path outDir,
                                   double validationFraction) throws IOException {
        if (!(validationFraction > 0 && validationFraction < 1)) {
            throw new IllegalArgumentException("validation fraction must be in (0, 1): " + validationFraction);
        }
        if (tokenizer.vocabSize() > 65536) {
            throw new IllegalArgumentException("tokenizer " + tokenizer.name() + " does not fit uint16");
        }
        IntBuffer ids = new IntBuffer();
        for (String document : documents) {
            encodeInSlices(document, tokenizer, ids);
            if (tokenizer.endOfText() >= 0) {
                ids.add(tokenizer.endOfText());
            }
        }
        if (ids.size < 2) {
            throw new IllegalArgumentException("no text to prepare from " + source);
        }
        long validation = Math.max(1, Math.round(ids.size * validationFraction));
        int train = Math.toIntExact(ids.size - validation);
        Files.createDirectories(outDir);
        writeUint16(outDir.resolve(TRAIN_FILE), ids.values, 0, train);
        writeUint16(outDir.resolve(VALIDATION_FILE), ids.values, train, ids.size);
        DataMeta meta = new DataMeta(tokenizer.name(), tokenizer.vocabSize(), "uint16", train, ids.size - train, source);
        meta.write(outDir);
        return meta;
    }

    /**
     * Encodes long text in slices cut after a lone newline (one that follows a non-space) and before a letter or
     * digit: the GPT-2 pre-tokenizer makes that newline a piece of its own, so the ids equal those of encoding the
     * whole text at once.
     */
    static void encodeInSlices(String text, Tokenizer tokenizer, IntBuffer out) {
        encodeInSlices(text, tokenizer, out, SLICE_CHARS);
    }

    static void encodeInSlices(String text, Tokenizer tokenizer, IntBuffer out, int sliceChars) {
        int from = 0;
        while (from < text.length()) {
            int to = Math.min(text.length(), from + sliceChars);
            if (to < text.length()) {
                int cut = safeCut(text, to);
                to = cut > from ? cut : text.length();
            }
            for (int id : tokenizer.encode(text.substring(from, to))) {
                out.add(id);
            }
            from = to;
        }
    }

    /** The first safe cut at or after {@code from} (see {@link #encodeInSlices}), or -1. */
    private static int safeCut(String text, int from) {
        for (int i = Math.max(2, from); i < text.length(); i++) {
            if (text.charAt(i - 1) == '\n' && !Character.isWhitespace(text.charAt(i - 2))
                    && Character.isLetterOrDigit(text.charAt(i))) {
                return i;
            }
        }
        return -1;
    }

    private static void writeUint16(Path file, int[] ids, int from, int to) throws IOException {
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 16)) {
            for (int i = from; i < to; i++) {
                out.write(ids[i]);
                out.write(ids[i] >>> 8);
            }
        }
    }

    /** A growable int array (the corpus has millions of ids; boxing them would cost ten times the memory). */
    static final class IntBuffer {
        int[] values = new int[1 << 16];
        int size;

        void add(int v) {
            if (size == values.length) {
                values = Arrays.copyOf(values, values.length * 2);
            }
            values[size++] = v;
        }
    }
}
