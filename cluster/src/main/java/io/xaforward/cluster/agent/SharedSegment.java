package io.xaforward.cluster.agent;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The tensor memory an agent shares with its training process: a file (under /dev/shm, so in memory) created with
 * mode 0600, mapped here and by the training process ({@code torch.from_file(path, shared=True)}), removed at
 * {@link #close}. The training process writes gradients into it and reads results back; nothing is copied through
 * the socket.
 */
public final class SharedSegment implements AutoCloseable {
    private final Path file;
    private final Arena arena;
    private final MemorySegment memory;

    private SharedSegment(Path file, Arena arena, MemorySegment memory) {
        this.file = file;
        this.arena = arena;
        this.memory = memory;
    }

    /** The default place: /dev/shm when the host has it (memory, not disk), else the temporary directory. */
    public static Path defaultPath(int job, int rank) {
        Path dir = Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm") : Path.of(System.getProperty("java.io.tmpdir"));
        return dir.resolve("xaf-agent-job" + job + "-rank" + rank + "-" + ProcessHandle.current().pid());
    }

    /** Creates {@code file} (it must not exist: another agent's segment is never reused) of {@code bytes} bytes. */
    public static SharedSegment create(Path file, long bytes) throws IOException {
        if (bytes < Float.BYTES || bytes % Float.BYTES != 0) {
            throw new IllegalArgumentException("--shm-bytes must be a positive multiple of 4, was " + bytes);
        }
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Arena arena = Arena.ofShared();
        try {
            try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
                f.setLength(bytes); // sparse: memory is taken only where tensors are written
            }
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                return new SharedSegment(file, arena, channel.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena));
            }
        } catch (IOException | RuntimeException e) {
            arena.close();
            Files.deleteIfExists(file);
            throw e;
        }
    }

    public Path file() { return file; }
    public MemorySegment memory() { return memory; }
    public long bytes() { return memory.byteSize(); }

    /** Unmaps and removes the file (the training process's own mapping stays valid until it unmaps). */
    @Override
    public void close() {
        try {
            arena.close();
        } finally {
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                System.err.println("xaf agent: could not remove " + file + ": " + e.getMessage());
            }
        }
    }
}
