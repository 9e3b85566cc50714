package io.xaforward.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Datasets, sharding and the schedule: no engine needed. */
class DataTest {

    @Test
    void textDatasetIsByteLevel(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("t.txt");
        Files.writeString(file, "aé", StandardCharsets.UTF_8);
        TextDataset text = TextDataset.open(file);
        assertEquals(3, text.size());
        assertEquals(256, text.vocabSize());
        assertEquals('a', text.tokenAt(0));
        assertEquals(0xC3, text.tokenAt(1));
        assertEquals(0xA9, text.tokenAt(2));
    }

    @Test
    void emptyFilesAreRejected(@TempDir Path dir) throws Exception {
        Path empty = Files.createFile(dir.resolve("empty"));
        Exception e = assertThrows(IllegalArgumentException.class, () -> TextDataset.open(empty));
        assertTrue(e.getMessage().contains("empty"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> BinDataset.open(empty, 50257));
        assertTrue(e.getMessage().contains("empty"), e.getMessage());
    }

    @Test
    void binDatasetRoundTripsAndValidates(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("train.bin");
        int[] ids = {0, 1, 255, 256, 50256, 65535};
        BinDataset.write(file, ids);
        assertEquals(12, Files.size(file));
        BinDataset data = BinDataset.open(file, 65536);
        assertEquals(6, data.size());
        for (int i = 0; i < ids.length; i++) {
            assertEquals(ids[i], data.tokenAt(i));
        }
        byte[] raw = Files.readAllBytes(file);
        assertEquals(0x00, raw[6] & 0xFF, "little-endian: low byte of 256 first");
        assertEquals(0x01, raw[7] & 0xFF, "little-endian: high byte of 256 second");

        Exception e = assertThrows(IllegalArgumentException.class, () -> BinDataset.open(file, 50257));
        assertTrue(e.getMessage().contains("wrong dtype"), e.getMessage());
        assertTrue(e.getMessage().contains("65535"), e.getMessage());

        Path odd = dir.resolve("odd.bin");
        Files.write(odd, new byte[] {1, 0, 2});
        e = assertThrows(IllegalArgumentException.class, () -> BinDataset.open(odd, 256));
        assertTrue(e.getMessage().contains("odd byte count 3"), e.getMessage());
    }

    @Test
    void int32FileReadAsUint16IsCaughtByTheVocabCheck(@TempDir Path dir) throws Exception {
        // ids written as little-endian int32 (high halves are zero): with a small vocab the check cannot catch it,
        // but ids above the vocab in either half do get caught.
        Path file = dir.resolve("int32.bin");
        byte[] bytes = new byte[8];
        bytes[0] = (byte) 0x10; bytes[1] = (byte) 0x27; // 10000
        bytes[4] = (byte) 0x20; bytes[5] = (byte) 0x4E; // 20000
        Files.write(file, bytes);
        Exception e = assertThrows(IllegalArgumentException.class, () -> BinDataset.open(file, 256));
        assertTrue(e.getMessage().contains("token id 10000 at position 0"), e.getMessage());
    }

    @Test
    void shortDatasetIsRejected() {
        TextDataset data = TextDataset.of("abcdef");
        Exception e = assertThrows(IllegalArgumentException.class, () -> new BatchSampler(data, 64, 2, 1, 0, 1));
        assertTrue(e.getMessage().contains("shorter than context length 64"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new BatchSampler(data, 4, 8, 1, 0, 1));
        assertTrue(e.getMessage().contains("fewer than the global batch"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new BatchSampler(data, 2, 3, 2, 0, 1));
        assertTrue(e.getMessage().contains("multiple of world size"), e.getMessage());
    }

    @Test
    void ranksTakeDisjointSharesWhoseUnionIsTheGlobalBatch() {
        TokenDataset data = TextDataset.of(SyntheticCorpus.generate(3, 5_000));
        int world = 4;
        int global = 16;
        BatchSampler whole = new BatchSampler(data, 32, global, 1, 0, 99);
        for (long step = 0; step < 20; step++) {
            Set<Long> union = new HashSet<>();
            int total = 0;
            for (int rank = 0; rank < world; rank++) {
                BatchSampler shard = new BatchSampler(data, 32, global, world, rank, 99);
                long[] local = shard.localOffsets(step);
                assertEquals(global / world, local.length);
                total += local.length;
                for (long offset : local) {
                    assertTrue(union.add(offset), "offset " + offset + " sampled by two ranks in step " + step);
                }
            }
            assertEquals(global, total);
            Set<Long> expected = new HashSet<>();
            Arrays.stream(whole.globalOffsets(step)).forEach(expected::add);
            assertEquals(expected, union);
        }
        assertFalse(Arrays.equals(whole.globalOffsets(0), whole.globalOffsets(1)));
        assertFalse(Arrays.equals(whole.globalOffsets(0), new BatchSampler(data, 32, global, 1, 0, 100).globalOffsets(0)));
        assertArrayEquals(whole.globalOffsets(5), new BatchSampler(data, 32, global, 1, 0, 99).globalOffsets(5));
    }

    @Test
    void batchTargetsAreInputsShiftedByOne() {
        TokenDataset data = TextDataset.of(SyntheticCorpus.generate(4, 2_000));
        Batch batch = new BatchSampler(data, 16, 4, 2, 1, 5).batch(3);
        assertEquals(2, batch.batchSize());
        for (int row = 0; row < batch.batchSize(); row++) {
            long offset = batch.offsets()[row];
            for (int j = 0; j < 16; j++) {
                assertEquals(data.tokenAt(offset + j), batch.inputs()[row * 16 + j]);
                assertEquals(data.tokenAt(offset + j + 1), batch.targets()[row * 16 + j]);
            }
        }
    }

    @Test
    void splitIsContiguousAndComplete() {
        TokenDataset data = TextDataset.of("0123456789");
        TokenDataset.Split split = data.split(0.2);
        assertEquals(8, split.train().size());
        assertEquals(2, split.validation().size());
        assertEquals('8', split.validation().tokenAt(0));
        assertThrows(IllegalArgumentException.class, () -> data.split(1.0));
    }

    @Test
    void syntheticCorpusIsDeterministicText() {
        String a = SyntheticCorpus.generate(11, 4_000);
        assertEquals(a, SyntheticCorpus.generate(11, 4_000));
        assertTrue(a.length() >= 4_000);
        assertFalse(a.equals(SyntheticCorpus.generate(12, 4_000)));
        assertTrue(a.chars().allMatch(c -> c < 128), "plain ASCII");
        assertTrue(a.contains(". ") || a.contains("! "));
    }

    @Test
    void scheduleWarmsUpThenDecaysToTheMinimum() {
        LearningRateSchedule s = new LearningRateSchedule(1e-3, 1e-4, 10, 110);
        assertEquals(1e-4, s.at(0), 1e-12);
        assertEquals(1e-3, s.at(9), 1e-12);
        assertEquals(1e-3, s.at(10), 1e-12);
        assertEquals(5.5e-4, s.at(60), 1e-12);
        assertEquals(1e-4, s.at(110), 1e-12);
        assertEquals(1e-4, s.at(1000), 1e-12);
        for (long step = 10; step < 110; step++) {
            assertTrue(s.at(step + 1) <= s.at(step));
        }
    }
}
