package io.xaforward.training;

import io.xaforward.common.Json;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A tokenizer's vocabulary in the files Hugging Face's GPT2Tokenizer reads: {@code vocab.json} (token string to id)
 * and {@code merges.txt} (the BPE merges in priority order). GPT-2's files are derived from the r50k_base ranks that
 * jtokkit ships (the same ranks {@link Gpt2Tokenizer} encodes with), so nothing is downloaded: a token's id is its
 * rank, its string is its bytes through GPT-2's byte-to-character table, and the merge that made it is found by
 * running byte-pair encoding on its bytes with the ranks below its own, which stops at exactly two parts. The byte
 * tokenizer's files are the 256 single-byte tokens and no merges.
 */
public final class BpeVocabularyFiles {

    public static final String VOCAB = "vocab.json";
    public static final String MERGES = "merges.txt";
    private static final String R50K_RESOURCE = "/com/knuddels/jtokkit/r50k_base.tiktoken";
    private static final String END_OF_TEXT = "<|endoftext|>";

    /** Token strings by id, and merges as "left right" in priority order. */
    public record Vocabulary(List<String> tokens, List<String> merges) {
    }

    private BpeVocabularyFiles() {
    }

    /** GPT-2's byte-to-character table: printable bytes stand for themselves, the others for 256 + n. */
    static char[] byteToChar() {
        char[] table = new char[256];
        int n = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            table[b] = printable ? (char) b : (char) (256 + n++);
        }
        return table;
    }

    /** The vocabulary of {@code tokenizer} (gpt2 or bytes). */
    public static Vocabulary of(Tokenizer tokenizer) throws IOException {
        return switch (tokenizer.name()) {
            case "gpt2" -> gpt2();
            case "bytes" -> bytes();
            default -> throw new IllegalArgumentException("no vocabulary files for tokenizer " + tokenizer.name());
        };
    }

    /** Writes vocab.json and merges.txt into {@code dir}. */
    public static void write(Tokenizer tokenizer, Path dir) throws IOException {
        Vocabulary files = of(tokenizer);
        Map<String, Integer> vocab = new LinkedHashMap<>();
        for (int id = 0; id < files.tokens().size(); id++) {
            vocab.put(files.tokens().get(id), id);
        }
        Files.writeString(dir.resolve(VOCAB), Json.line(vocab));
        StringBuilder merges = new StringBuilder("#version: 0.2\n");
        for (String m : files.merges()) {
            merges.append(m).append('\n');
        }
        Files.writeString(dir.resolve(MERGES), merges);
    }

    private static Vocabulary bytes() {
        char[] table = byteToChar();
        List<String> tokens = new ArrayList<>(256);
        for (int b = 0; b < 256; b++) {
            tokens.add(String.valueOf(table[b]));
        }
        return new Vocabulary(tokens, List.of());
    }

    private static Vocabulary gpt2() throws IOException {
        // Token bytes are held as ISO-8859-1 strings: one char per byte, usable as map keys.
        List<String> byRank = new ArrayList<>(Gpt2Tokenizer.VOCAB_SIZE);
        Map<String, Integer> ranks = new HashMap<>();
        try (InputStream in = Gpt2Tokenizer.class.getResourceAsStream(R50K_RESOURCE)) {
            if (in == null) {
                throw new IOException("the r50k_base ranks (" + R50K_RESOURCE + ") are not on the class path");
            }
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.US_ASCII));
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                if (line.isBlank()) {
                    continue;
                }
                int space = line.indexOf(' ');
                String token = new String(Base64.getDecoder().decode(line.substring(0, space)), StandardCharsets.ISO_8859_1);
                int rank = Integer.parseInt(line.substring(space + 1).trim());
                if (rank != byRank.size()) {
                    throw new IOException("r50k_base ranks are not contiguous at rank " + rank);
                }
                byRank.add(token);
                ranks.put(token, rank);
            }
        }
        if (byRank.size() != Gpt2Tokenizer.END_OF_TEXT) {
            throw new IOException("r50k_base has " + byRank.size() + " ranks, expected " + Gpt2Tokenizer.END_OF_TEXT);
        }
        char[] table = byteToChar();
        List<String> tokens = new ArrayList<>(Gpt2Tokenizer.VOCAB_SIZE);
        List<String> merges = new ArrayList<>();
        for (int rank = 0; rank < byRank.size(); rank++) {
            String token = byRank.get(rank);
            tokens.add(readable(token, table));
            if (token.length() > 1) {
                List<String> parts = mergeBelow(token, rank, ranks);
                if (parts.size() != 2) {
                    throw new IOException("token " + rank + " is not one merge of two lower-ranked tokens: " + parts);
                }
                merges.add(readable(parts.get(0), table) + " " + readable(parts.get(1), table));
            }
        }
        tokens.add(END_OF_TEXT);
        return new Vocabulary(tokens, merges);
    }

    /** Byte-pair encoding of {@code token} using only merges of rank below {@code limit}. */
    private static List<String> mergeBelow(String token, int limit, Map<String, Integer> ranks) {
        List<String> parts = new ArrayList<>(token.length());
        for (int i = 0; i < token.length(); i++) {
            parts.add(token.substring(i, i + 1));
        }
        while (parts.size() > 1) {
            int best = -1;
            int bestRank = limit;
            for (int i = 0; i + 1 < parts.size(); i++) {
                Integer r = ranks.get(parts.get(i) + parts.get(i + 1));
                if (r != null && r < bestRank) {
                    bestRank = r;
                    best = i;
                }
            }
            if (best < 0) {
                break;
            }
            parts.set(best, parts.get(best) + parts.remove(best + 1));
        }
        return parts;
    }

    private static String readable(String bytes, char[] table) {
        StringBuilder b = new StringBuilder(bytes.length());
        for (int i = 0; i < bytes.length(); i++) {
            b.append(table[bytes.charAt(i)]);
        }
        return b.toString();
    }
}
