package io.xaforward.training;

import io.xaforward.common.Json;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Text to nanoGPT .bin and back; every form --data accepts; the shipped Europarl corpus. */
class DataPrepareTest {

    private static final String TEXT = "Resumption of the session.\n\nI declare resumed the session of the European "
            + "Parliament adjourned on Friday 17 December 1999, and I would like once again to wish you a happy new "
            + "year in the hope that you enjoyed a pleasant festive period.\n";

    /** uint16 little-endian ids read with plain NIO, independently of BinDataset. */
    private static int[] readUint16(Path file) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        int[] ids = new int[b.remaining() / 2];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = Short.toUnsignedInt(b.getShort());
        }
        return ids;
    }

    @Test
    void textRoundTripsThroughBinFiles(@TempDir Path dir) throws IOException {
        Path text = dir.resolve("in.txt");
        Files.writeString(text, TEXT.repeat(20));
        Tokenizer gpt2 = Tokenizer.byName("gpt2");
        DataMeta meta = CorpusPreparer.prepareFile(text, gpt2, dir.resolve("out"), 0.1);

        int[] train = readUint16(dir.resolve("out/train.bin"));
        int[] val = readUint16(dir.resolve("out/val.bin"));
        int[] all = new int[train.length + val.length];
        System.arraycopy(train, 0, all, 0, train.length);
        System.arraycopy(val, 0, all, train.length, val.length);
        int[] expected = gpt2.encode(TEXT.repeat(20));
        assertArrayEquals(expected, java.util.Arrays.copyOf(all, expected.length));
        assertEquals(expected.length + 1, all.length, "one end-of-text after the document");
        assertEquals(Gpt2Tokenizer.END_OF_TEXT, all[all.length - 1]);
        assertEquals(TEXT.repeat(20), gpt2.decode(java.util.Arrays.copyOf(all, expected.length)));
        assertEquals(Math.round(all.length * 0.1), val.length);

        JsonObject json = Json.parse(Files.readString(dir.resolve("out/meta.json"))).getAsJsonObject();
        assertEquals("gpt2", json.get("tokenizer").getAsString());
        assertEquals(50257, json.get("vocab_size").getAsInt());
        assertEquals(train.length, json.get("train_tokens").getAsLong());
        assertEquals(meta, DataMeta.readIfPresent(dir.resolve("out")));
    }

    @Test
    void dataOpensFromDirectoryBinFileAndTextFile(@TempDir Path dir) throws IOException {
        Path text = dir.resolve("in.txt");
        Files.writeString(text, TEXT.repeat(10));
        Tokenizer gpt2 = Tokenizer.byName("gpt2");
        CorpusPreparer.prepareFile(text, gpt2, dir.resolve("prepared"), 0.1);

        // A prepared directory names its own tokenizer, whatever the caller passes.
        TrainingData.Opened fromDir = TrainingData.open(dir.resolve("prepared"), Tokenizer.byName("bytes"));
        assertEquals("gpt2", fromDir.tokenizer().name());
        assertEquals(readUint16(dir.resolve("prepared/train.bin")).length, fromDir.train().size());
        assertEquals(readUint16(dir.resolve("prepared/val.bin")).length, fromDir.validation().size());

        // A lone .bin: meta.json beside it gives the vocabulary; 5% becomes validation.
        TrainingData.Opened fromBin = TrainingData.open(dir.resolve("prepared/train.bin"), Tokenizer.byName("bytes"));
        assertEquals(50257, fromBin.train().vocabSize());
        assertEquals(fromDir.train().size(), fromBin.train().size() + fromBin.validation().size());

        TrainingData.Opened fromText = TrainingData.open(text, gpt2);
        int[] ids = gpt2.encode(TEXT.repeat(10));
        assertEquals(ids.length, fromText.train().size() + fromText.validation().size());
        assertEquals(ids[3], fromText.train().tokenAt(3));

        TrainingData.Opened bytes = TrainingData.open(text, Tokenizer.byName("bytes"));
        assertEquals(256, bytes.train().vocabSize());

        assertThrows(IOException.class, () -> TrainingData.open(dir.resolve("missing.bin"), gpt2));
        Files.createDirectories(dir.resolve("empty"));
        IOException e = assertThrows(IOException.class, () -> TrainingData.open(dir.resolve("empty"), gpt2));
        assertTrue(e.getMessage().contains("train.bin"), e.getMessage());
    }

    @Test
    void binWithoutMetaTakesTheTokenizersVocabularyAndRejectsLargerIds(@TempDir Path dir) throws IOException {
        BinDataset.write(dir.resolve("ids.bin"), new int[] {1, 2, 300, 4});
        assertEquals(50257, TrainingData.open(dir.resolve("ids.bin"), Tokenizer.byName("gpt2")).train().vocabSize());
        assertThrows(IllegalArgumentException.class,
                () -> TrainingData.open(dir.resolve("ids.bin"), Tokenizer.byName("bytes")));
    }

    @Test
    void europarlShipsOnTheClassPath() throws IOException {
        assertTrue(EuroparlCorpus.available());
        List<String> english = EuroparlCorpus.documents(true);
        assertTrue(english.size() > 1000, "English documents: " + english.size());
        assertTrue(english.stream().allMatch(EuroparlCorpus::isEnglish));
        assertTrue(english.stream().noneMatch(d -> d.contains("\t")));
        assertTrue(!EuroparlCorpus.isEnglish("Invitiamo dunque la Commissione a sottoporre nuove proposte"));
    }
}
