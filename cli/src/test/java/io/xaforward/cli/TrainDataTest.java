package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.xaforward.training.BinDataset;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainingData;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the launcher hands the workers for each form of --data: the workers read text as bytes, so everything else
 * must arrive as token files whose meta.json names the tokenizer.
 */
class TrainDataTest {

    private static int[] ids(int n, int bound) {
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) ids[i] = (i * 7919) % bound;
        return ids;
    }

    @Test
    void everyFormReachesTheWorkersWithItsVocabulary(@TempDir Path dir) throws Exception {
        Path work = Files.createDirectories(dir.resolve("work"));
        Tokenizer bytes = Tokenizer.byName("bytes");

        // A nanoGPT directory without meta.json, GPT-2 ids: the workers see 50257 ids, not bytes.
        Path nano = Files.createDirectories(dir.resolve("nano"));
        BinDataset.write(nano.resolve("train.bin"), ids(5000, 50257));
        BinDataset.write(nano.resolve("val.bin"), ids(500, 50257));
        Path forWorkers = TrainData.resolve(nano, "gpt2", "gpt2-tiny", work);
        TrainingData.Opened opened = TrainingData.open(forWorkers, bytes);
        assertEquals(50257, opened.train().vocabSize());
        assertEquals(5000, opened.train().size());
        assertEquals(500, opened.validation().size());

        // A bare .bin file.
        Path bin = TrainData.resolve(nano.resolve("train.bin"), null, "gpt2-tiny", work);
        assertEquals(5000, TrainingData.open(bin, bytes).train().size() + TrainingData.open(bin, bytes).validation().size());

        // Text for GPT-2 is tokenized by the launcher; text for bytes goes as it is.
        Path text = dir.resolve("t.txt");
        Files.writeString(text, "The sitting was closed at 11.30 p.m.\n".repeat(200));
        Path tokenized = TrainData.resolve(text, "gpt2", "gpt2-tiny", work);
        assertTrue(Files.isDirectory(tokenized));
        assertEquals(50257, TrainingData.open(tokenized, bytes).train().vocabSize());
        assertEquals(text, TrainData.resolve(text, null, "tiny", work));

        // Ids beyond the preset's vocabulary and a tokenizer larger than the model fail before any worker starts.
        assertThrows(IllegalArgumentException.class, () -> TrainData.resolve(nano, "gpt2", "tiny", work));
        assertThrows(IllegalArgumentException.class, () -> TrainData.resolve(nano.resolve("train.bin"), "bytes", "tiny", work));
        assertThrows(IllegalArgumentException.class, () -> TrainData.resolve(dir.resolve("missing"), null, "tiny", work));
    }
}
