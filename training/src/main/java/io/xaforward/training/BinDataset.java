package io.xaforward.training;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * nanoGPT-style token file: a flat array of uint16 little-endian ids (what its prepare.py writes with
 * np.uint16.tofile). Memory-mapped, so a multi-GB corpus costs no heap; every id is checked against the vocabulary
 * on open, because a file written with another dtype (uint32, int64) reads as plausible-looking garbage otherwise.
 */
public final class BinDataset implements TokenDataset {

    private static final ValueLayout.OfShort U16_LE =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final MemorySegment tokens;
    private final int vocabSize;

    private BinDataset(MemorySegment tokens, int vocabSize) {
        this.tokens = tokens;
        this.vocabSize = vocabSize;
    }

    /**
     * Maps and validates a .bin file.
     *
     * @throws IllegalArgumentException for an empty file, an odd byte count, or an id >= vocabSize
     */
    public static BinDataset open(Path file, int vocabSize) throws IOException {
        if (vocabSize <= 0 || vocabSize > 65536) {
            throw new IllegalArgumentException("uint16 .bin needs 0 < vocabSize <= 65536, got " + vocabSize);
        }
        long bytes = Files.size(file);
        if (bytes == 0) {
            throw new IllegalArgumentException("empty token file: " + file);
        }
        if (bytes % 2 != 0) {
            throw new IllegalArgumentException("truncated token file " + file + ": odd byte count " + bytes
                    + " (expected uint16 little-endian tokens)");
        }
        MemorySegment mapped;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            mapped = channel.map(FileChannel.MapMode.READ_ONLY, 0, bytes, Arena.ofAuto());
        }
        long count = bytes / 2;
        for (long i = 0; i < count; i++) {
            int id = Short.toUnsignedInt(mapped.getAtIndex(U16_LE, i));
            if (id >= vocabSize) {
                throw new IllegalArgumentException("token id " + id + " at position " + i + " of " + file
                        + " is >= vocab size " + vocabSize + " (wrong dtype? expected uint16 little-endian)");
            }
        }
        return new BinDataset(mapped, vocabSize);
    }

    /** Writes ids as uint16 little-endian (the inverse of {@link #open}); for tools and tests. */
    public static void write(Path file, int[] ids) throws IOException {
        byte[] out = new byte[ids.length * 2];
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0 || ids[i] > 0xFFFF) {
                throw new IllegalArgumentException("token id " + ids[i] + " does not fit uint16");
            }
            out[2 * i] = (byte) ids[i];
            out[2 * i + 1] = (byte) (ids[i] >>> 8);
        }
        Files.write(file, out);
    }

    @Override
    public long size() {
        return tokens.byteSize() / 2;
    }

    @Override
    public int vocabSize() {
        return vocabSize;
    }

    @Override
    public int tokenAt(long index) {
        return Short.toUnsignedInt(tokens.getAtIndex(U16_LE, index));
    }
}
