package io.xaforward.training;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;

/**
 * Deterministic English-like text (sentences built from a small grammar and word list) so that tests, demos and
 * benchmarks have a learnable corpus without downloading one. Same seed, same bytes, on every machine.
 */
public final class SyntheticCorpus {

    private static final String[] SUBJECTS = {"the gateway", "a packet", "the old router", "every switch",
        "the network", "a small node", "the careful operator", "one data center", "the receiver", "the sender"};
    private static final String[] VERBS = {"forwards", "drops", "counts", "rewrites", "inspects", "delivers",
        "remembers", "measures", "queues", "returns"};
    private static final String[] OBJECTS = {"the gradient", "a frame", "every header", "the checksum",
        "a quiet signal", "the final result", "many bytes", "the next hop", "a long message", "the index"};
    private static final String[] ENDINGS = {"before dawn", "without delay", "in order", "with great care",
        "across the link", "at line rate", "once again", "for the model"};

    private SyntheticCorpus() {
    }

    /** About {@code approxBytes} of text (whole sentences; at least one). */
    public static String generate(long seed, int approxBytes) {
        SplittableRandom random = new SplittableRandom(seed);
        StringBuilder text = new StringBuilder(approxBytes + 100);
        int sentences = 0;
        while (text.length() < approxBytes || sentences == 0) {
            String subject = SUBJECTS[random.nextInt(SUBJECTS.length)];
            text.append(Character.toUpperCase(subject.charAt(0))).append(subject, 1, subject.length())
                    .append(' ').append(VERBS[random.nextInt(VERBS.length)])
                    .append(' ').append(OBJECTS[random.nextInt(OBJECTS.length)]);
            if (random.nextInt(3) == 0) {
                text.append(' ').append(ENDINGS[random.nextInt(ENDINGS.length)]);
            }
            text.append(random.nextInt(8) == 0 ? "!" : ".");
            text.append(++sentences % 6 == 0 ? "\n" : " ");
        }
        return text.toString();
    }

    /** Writes {@link #generate} as UTF-8 and returns the path. */
    public static Path write(Path file, long seed, int approxBytes) throws IOException {
        Files.writeString(file, generate(seed, approxBytes), StandardCharsets.UTF_8);
        return file;
    }
}
