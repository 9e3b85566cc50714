package io.xaforward.training;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Opens what {@code --data} names as training and validation tokens:
 * <ul>
 *   <li>a directory prepared by {@link CorpusPreparer} (or nanoGPT): train.bin, val.bin and meta.json;</li>
 *   <li>a {@code .bin} file of uint16 ids: the last 5% is validation; the vocabulary comes from a meta.json beside
 *       it, else from the tokenizer;</li>
 *   <li>any other file: UTF-8 text, tokenized when opened, the last 5% is validation.</li>
 * </ul>
 */
public final class TrainingData {

    /** Validation share of a single file. */
    public static final double VALIDATION_FRACTION = 0.05;

    private TrainingData() {
    }

    /** What was opened: the two splits and the tokenizer their ids belong to. */
    public record Opened(TokenDataset train, TokenDataset validation, Tokenizer tokenizer) {
    }

    /**
     * @param tokenizer used for text files and for .bin files without meta.json; a prepared directory's meta.json
     *                  names its own
     */
    public static Opened open(Path data, Tokenizer tokenizer) throws IOException {
        if (Files.isDirectory(data)) {
            DataMeta meta = DataMeta.readIfPresent(data);
            Path train = data.resolve(CorpusPreparer.TRAIN_FILE);
            Path validation = data.resolve(CorpusPreparer.VALIDATION_FILE);
            if (!Files.isRegularFile(train)) {
                throw new IOException("data directory " + data + " has no " + CorpusPreparer.TRAIN_FILE
                        + " (prepare one with: xaf data prepare)");
            }
            Tokenizer t = meta != null ? Tokenizer.byName(meta.tokenizer()) : tokenizer;
            int vocab = meta != null ? meta.vocab_size() : t.vocabSize();
            TokenDataset trainSet = BinDataset.open(train, vocab);
            if (!Files.isRegularFile(validation)) {
                TokenDataset.Split split = trainSet.split(VALIDATION_FRACTION);
                return new Opened(split.train(), split.validation(), t);
            }
            return new Opened(trainSet, BinDataset.open(validation, vocab), t);
        }
        if (!Files.isRegularFile(data)) {
            throw new IOException("data " + data + " not found");
        }
        if (data.getFileName().toString().endsWith(".bin")) {
            Path dir = data.toAbsolutePath().getParent();
            DataMeta meta = DataMeta.readIfPresent(dir);
            Tokenizer t = meta != null ? Tokenizer.byName(meta.tokenizer()) : tokenizer;
            int vocab = meta != null ? meta.vocab_size() : t.vocabSize();
            TokenDataset.Split split = BinDataset.open(data, vocab).split(VALIDATION_FRACTION);
            return new Opened(split.train(), split.validation(), t);
        }
        TokenDataset all = tokenizer instanceof ByteTokenizer ? TextDataset.open(data)
                : new IdArrayDataset(tokenizer.encode(TextFiles.readUtf8(data)), tokenizer.vocabSize());
        TokenDataset.Split split = all.split(VALIDATION_FRACTION);
        return new Opened(split.train(), split.validation(), tokenizer);
    }
}
