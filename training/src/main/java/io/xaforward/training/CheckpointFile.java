package io.xaforward.training;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;
import java.util.zip.CheckedInputStream;
import java.util.zip.CheckedOutputStream;

/**
 * Checkpoint container: a header (magic, preset, seed, step, optimizer update count, the run's settings as JSON,
 * parameter names and sizes),
 * then the raw bytes of each memory segment in order, then a CRC32C of everything before it. The CRC is checked in
 * a first pass before anything is copied into live memory, so a torn or corrupted file leaves the trainer untouched.
 *
 * <p>Writes are crash-safe: the data goes to a temporary file that is fsynced before it is renamed over the old
 * checkpoint, and the directory is fsynced after the rename, so a power loss leaves either the old or the new file.
 * Every count read back is bounded by the file's size before anything is allocated for it.
 */
final class CheckpointFile {

    private static final int CHUNK = 1 << 20;
    /** Smallest on-disk size of one parameter entry: an empty modified-UTF-8 name (2 bytes) and its size (8). */
    private static final int MIN_ENTRY_BYTES = Short.BYTES + Long.BYTES;

    private CheckpointFile() {
    }

    /** The trainer's checkpoints before they carried the run's settings ("XAFCKPT1"): still read, without settings. */
    static final long LEGACY_MAGIC = 0x5841_4643_4B50_5431L;
    /** Most bytes of settings a header may hold. */
    static final int MAX_SETTINGS_BYTES = 1 << 20;

    /** {@code settings}: the run's settings (JSON text, every option of the command that trained), "" when unknown. */
    record Header(long magic, String preset, long seed, long step, long optimizerUpdates, String settings,
                  List<String> names, long[] sizes) {
        Header(long magic, String preset, long seed, long step, long optimizerUpdates, List<String> names, long[] sizes) {
            this(magic, preset, seed, step, optimizerUpdates, "", names, sizes);
        }
    }

    /** Checks a header read from disk before any payload is copied. */
    interface Validator {
        void check(Header header) throws IOException;
    }

    static void write(Path file, Header header, List<List<MemorySegment>> sections) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        Files.createDirectories(parent);
        Path tmp = Files.createTempFile(parent, file.getFileName().toString(), ".tmp");
        try {
            CRC32C crc = new CRC32C();
            try (BufferedOutputStream raw = new BufferedOutputStream(Files.newOutputStream(tmp), CHUNK)) {
                DataOutputStream out = new DataOutputStream(new CheckedOutputStream(raw, crc));
                out.writeLong(header.magic());
                out.writeBoolean(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN);
                out.writeUTF(header.preset());
                out.writeLong(header.seed());
                out.writeLong(header.step());
                out.writeLong(header.optimizerUpdates());
                byte[] settings = header.settings().getBytes(StandardCharsets.UTF_8);
                if (settings.length > MAX_SETTINGS_BYTES) throw new IOException("checkpoint settings of " + settings.length + " bytes: too long");
                out.writeInt(settings.length);
                out.write(settings);
                out.writeInt(header.names().size());
                for (int i = 0; i < header.names().size(); i++) {
                    out.writeUTF(header.names().get(i));
                    out.writeLong(header.sizes()[i]);
                }
                byte[] chunk = new byte[CHUNK];
                for (List<MemorySegment> section : sections) {
                    for (MemorySegment segment : section) {
                        for (long pos = 0; pos < segment.byteSize(); pos += CHUNK) {
                            int n = (int) Math.min(CHUNK, segment.byteSize() - pos);
                            MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, pos, chunk, 0, n);
                            out.write(chunk, 0, n);
                        }
                    }
                }
                out.flush();
                // The trailer goes to the raw stream so that it does not cover itself.
                new DataOutputStream(raw).writeLong(crc.getValue());
            }
            fsync(tmp, StandardOpenOption.WRITE);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            fsync(parent, StandardOpenOption.READ); // makes the rename itself durable
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private static void fsync(Path path, StandardOpenOption mode) throws IOException {
        try (FileChannel channel = FileChannel.open(path, mode)) {
            channel.force(true);
        }
    }

    /** The header alone (no CRC check: for choosing the model shape before {@link #read}). */
    static Header readHeader(Path file, long expectedMagic) throws IOException {
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file), 1 << 16))) {
            return readHeader(in, file, expectedMagic);
        } catch (EOFException e) {
            throw new IOException("checkpoint " + file + " is truncated", e);
        }
    }

    private static Header readHeader(DataInputStream in, Path file, long expectedMagic) throws IOException {
        long magic = in.readLong();
        boolean legacy = magic == LEGACY_MAGIC && expectedMagic != LEGACY_MAGIC;
        if (magic != expectedMagic && !legacy) {
            throw new IOException(file + " is not a checkpoint of this format");
        }
        boolean littleEndian = in.readBoolean();
        if (littleEndian != (ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN)) {
            throw new IOException("checkpoint " + file + " was written on a machine of another byte order");
        }
        String preset = in.readUTF();
        long seed = in.readLong();
        long step = in.readLong();
        long updates = in.readLong();
        long payload = Files.size(file) - Long.BYTES;
        String settings = "";
        long settingsBytes = 0;
        if (!legacy) {
            int n = in.readInt();
            if (n < 0 || n > MAX_SETTINGS_BYTES || n > payload) {
                throw new IOException("checkpoint " + file + " declares " + n + " bytes of settings");
            }
            settings = new String(in.readNBytes(n), StandardCharsets.UTF_8);
            settingsBytes = Integer.BYTES + n;
        }
        int count = in.readInt();
        // The header so far took 8 + 1 + (2 + preset) + 3 * 8 (+ settings) + 4 bytes; each entry needs at least 10 more.
        long headerSoFar = 8 + 1 + 2 + modifiedUtf8Length(preset) + 3L * Long.BYTES + settingsBytes + Integer.BYTES;
        long maxEntries = Math.max(0, (payload - headerSoFar) / MIN_ENTRY_BYTES);
        if (count < 0 || count > maxEntries) {
            throw new IOException("checkpoint " + file + " declares " + count + " parameters, but its "
                    + Files.size(file) + " bytes can hold at most " + maxEntries);
        }
        List<String> names = new ArrayList<>(count);
        long[] sizes = new long[count];
        for (int i = 0; i < count; i++) {
            names.add(in.readUTF());
            sizes[i] = in.readLong();
            if (sizes[i] < 0 || sizes[i] > payload) {
                throw new IOException("checkpoint " + file + " declares " + sizes[i] + " bytes for parameter "
                        + names.get(i) + ", more than the file's " + Files.size(file) + " bytes");
            }
        }
        return new Header(magic, preset, seed, step, updates, settings, List.copyOf(names), sizes);
    }

    static Header read(Path file, long expectedMagic, List<List<MemorySegment>> sections, Validator validator)
            throws IOException {
        long payload = Files.size(file) - Long.BYTES;
        if (payload <= 0) {
            throw new IOException("checkpoint " + file + " is truncated");
        }
        CRC32C crc = new CRC32C();
        try (InputStream in = new CheckedInputStream(new BufferedInputStream(Files.newInputStream(file), CHUNK), crc)) {
            byte[] chunk = new byte[CHUNK];
            long left = payload;
            while (left > 0) {
                int n = in.read(chunk, 0, (int) Math.min(CHUNK, left));
                if (n < 0) {
                    throw new EOFException("checkpoint " + file + " is truncated");
                }
                left -= n;
            }
            long computed = crc.getValue();
            long stored = new DataInputStream(in).readLong();
            if (stored != computed) {
                throw new IOException("checkpoint " + file + " is corrupted (CRC32C mismatch)");
            }
        }
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file), CHUNK))) {
            Header header = readHeader(in, file, expectedMagic);
            validator.check(header);
            byte[] chunk = new byte[CHUNK];
            for (List<MemorySegment> section : sections) {
                for (MemorySegment segment : section) {
                    for (long pos = 0; pos < segment.byteSize(); pos += CHUNK) {
                        int n = (int) Math.min(CHUNK, segment.byteSize() - pos);
                        in.readFully(chunk, 0, n);
                        MemorySegment.copy(chunk, 0, segment, ValueLayout.JAVA_BYTE, pos, n);
                    }
                }
            }
            return header;
        }
    }

    private static long modifiedUtf8Length(String s) {
        long n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            n += c >= 1 && c <= 0x7F ? 1 : c <= 0x7FF ? 2 : 3;
        }
        return n;
    }
}
