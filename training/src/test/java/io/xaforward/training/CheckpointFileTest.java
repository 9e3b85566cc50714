package io.xaforward.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The checkpoint container on its own: round trip, and hostile headers behind a valid CRC. */
class CheckpointFileTest {
    private static final long MAGIC = 0x5841464350540001L;

    @Test
    void roundTripLeavesNoTemporaryFile(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("ckpt.bin");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment weights = arena.allocate(12);
            for (int i = 0; i < 3; i++) {
                weights.setAtIndex(ValueLayout.JAVA_FLOAT, i, i + 0.5f);
            }
            CheckpointFile.write(file, new CheckpointFile.Header(MAGIC, "tiny", 7, 42, 3, List.of("w"),
                    new long[] {12}), List.of(List.of(weights)));
            MemorySegment back = arena.allocate(12);
            CheckpointFile.Header header = CheckpointFile.read(file, MAGIC, List.of(List.of(back)), h -> { });
            assertEquals(42, header.step());
            assertEquals(List.of("w"), header.names());
            assertArrayEquals(weights.toArray(ValueLayout.JAVA_FLOAT), back.toArray(ValueLayout.JAVA_FLOAT));
        }
        try (var files = Files.list(dir)) {
            assertEquals(List.of(file), files.toList(), "the temporary file was renamed, not left behind");
        }
    }

    @Test
    void theRunsSettingsTravelInTheHeaderAndOldCheckpointsStillRead(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("ckpt.bin");
        String settings = "{\"command\":\"xaf train\",\"options\":{\"--lr\":\"0.003\",\"--prompt\":\"é ✓\"}}";
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment weights = arena.allocate(12);
            CheckpointFile.write(file, new CheckpointFile.Header(DataParallelTrainer.CHECKPOINT_MAGIC, "tiny", 7, 42, 3,
                    settings, List.of("w"), new long[] {12}), List.of(List.of(weights)));
            assertEquals(settings, CheckpointFile.readHeader(file, DataParallelTrainer.CHECKPOINT_MAGIC).settings());
            assertEquals(settings, DataParallelTrainer.checkpointSettings(file));
            assertEquals(42, CheckpointFile.read(file, DataParallelTrainer.CHECKPOINT_MAGIC, List.of(List.of(arena.allocate(12))), h -> { }).step());
        }
        Path old = dir.resolve("old.bin");
        writeWithValidCrc(old, 1, 0, CheckpointFile.LEGACY_MAGIC);
        CheckpointFile.Header h = CheckpointFile.read(old, DataParallelTrainer.CHECKPOINT_MAGIC, List.of(), x -> { });
        assertEquals("", h.settings());
        assertEquals(List.of("w"), h.names());
    }

    @Test
    void hugeParameterCountWithValidCrcIsAClearError(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("evil.bin");
        writeWithValidCrc(file, Integer.MAX_VALUE - 16, 0);
        IOException e = assertThrows(IOException.class,
                () -> CheckpointFile.read(file, MAGIC, List.of(), h -> { }));
        assertTrue(e.getMessage().contains("declares " + (Integer.MAX_VALUE - 16) + " parameters"), e.getMessage());
    }

    @Test
    void negativeParameterCountIsAClearError(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("evil.bin");
        writeWithValidCrc(file, -1, 0);
        IOException e = assertThrows(IOException.class,
                () -> CheckpointFile.read(file, MAGIC, List.of(), h -> { }));
        assertTrue(e.getMessage().contains("declares -1 parameters"), e.getMessage());
    }

    @Test
    void parameterSizeBeyondTheFileIsAClearError(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("evil.bin");
        writeWithValidCrc(file, 1, Long.MAX_VALUE);
        IOException e = assertThrows(IOException.class,
                () -> CheckpointFile.read(file, MAGIC, List.of(), h -> { }));
        assertTrue(e.getMessage().contains("declares " + Long.MAX_VALUE + " bytes"), e.getMessage());
    }

    /** A header that claims {@code count} parameters but carries one entry, followed by a correct CRC32C. */
    private static void writeWithValidCrc(Path file, int count, long size) throws IOException {
        writeWithValidCrc(file, count, size, MAGIC);
    }

    /** A header by hand; {@code magic} LEGACY_MAGIC writes the layout without settings. */
    private static void writeWithValidCrc(Path file, int count, long size, long magic) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeLong(magic);
        out.writeBoolean(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN);
        out.writeUTF("tiny");
        out.writeLong(1);
        out.writeLong(2);
        out.writeLong(3);
        if (magic != CheckpointFile.LEGACY_MAGIC) out.writeInt(0); // no settings
        out.writeInt(count);
        out.writeUTF("w");
        out.writeLong(size);
        out.flush();
        CRC32C crc = new CRC32C();
        crc.update(bytes.toByteArray());
        out.writeLong(crc.getValue());
        out.flush();
        Files.write(file, bytes.toByteArray());
    }
}
