package io.xaforward.cluster.deploy;

import io.xaforward.training.CorpusPreparer;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainingData;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code xaf worker --data} takes what {@code xaf train --data} takes: prepared directories, .bin files and text. */
class ClusterWorkerDataTest {
    static final String TEXT = "Mr President, the Commission has answered the question of the honourable member. ".repeat(200);

    @Test
    void textIsReadWithTheGivenTokenizer(@TempDir Path dir) throws Exception {
        Path text = Files.writeString(dir.resolve("corpus.txt"), TEXT);
        TrainingData.Opened bytes = ClusterWorker.openData(text, Tokenizer.byName("bytes"), "tiny");
        assertEquals("bytes", bytes.tokenizer().name());
        assertEquals(TEXT.length(), bytes.train().size() + bytes.validation().size(), "one id per byte");
        TrainingData.Opened gpt2 = ClusterWorker.openData(text, Tokenizer.byName("gpt2"), "gpt2-tiny");
        assertEquals("gpt2", gpt2.tokenizer().name());
        assertTrue(gpt2.train().size() + gpt2.validation().size() < TEXT.length() / 2, "BPE ids, several bytes each");
    }

    @Test
    void preparedDirectoryAndItsBinFileNameTheirOwnTokenizer(@TempDir Path dir) throws Exception {
        Path text = Files.writeString(dir.resolve("corpus.txt"), TEXT);
        Path prepared = dir.resolve("prepared");
        CorpusPreparer.prepareFile(text, Tokenizer.byName("gpt2"), prepared, 0.1);
        // The --tokenizer given is for text; meta.json beside the token files wins.
        TrainingData.Opened fromDir = ClusterWorker.openData(prepared, Tokenizer.byName("bytes"), "gpt2-tiny");
        assertEquals("gpt2", fromDir.tokenizer().name());
        assertTrue(fromDir.validation().size() > 0, "val.bin is the validation split");
        TrainingData.Opened fromBin = ClusterWorker.openData(prepared.resolve(CorpusPreparer.TRAIN_FILE),
                Tokenizer.byName("bytes"), "gpt2-tiny");
        assertEquals("gpt2", fromBin.tokenizer().name());
        assertEquals(fromDir.train().size(), fromBin.train().size() + fromBin.validation().size());
    }

    @Test
    void idsBeyondThePresetsVocabularyAndMissingDataAreClearErrors(@TempDir Path dir) throws Exception {
        Path text = Files.writeString(dir.resolve("corpus.txt"), TEXT);
        Path prepared = dir.resolve("prepared");
        CorpusPreparer.prepareFile(text, Tokenizer.byName("gpt2"), prepared, 0.1);
        IllegalArgumentException tooMany = assertThrows(IllegalArgumentException.class,
                () -> ClusterWorker.openData(prepared, Tokenizer.byName("bytes"), "tiny"));
        assertTrue(tooMany.getMessage().contains("more than preset tiny's vocabulary of 256"), tooMany.getMessage());
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                () -> ClusterWorker.openData(dir.resolve("nothing.txt"), Tokenizer.byName("bytes"), "tiny"));
        assertTrue(missing.getMessage().contains("nothing.txt not found"), missing.getMessage());
    }
}
