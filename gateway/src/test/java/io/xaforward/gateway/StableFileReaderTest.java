package io.xaforward.gateway;

import org.junit.jupiter.api.Test;

import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.channels.FileChannel;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.*;

/** A config rewritten in place, in steps, is read only once it is whole. */
class StableFileReaderTest {
    static final String FULL = """
            ports: [{interface: a, form: id}]
            routes:
              - {id: 1, job: 1, token: 1, egress: a, dst-mac: 02:00:00:00:00:01}
            """;
    static final String TWO_ROUTES = FULL + "  - {id: 2, job: 1, token: 1, egress: a, dst-mac: 02:00:00:00:00:02}\n";

    @Test
    void aFileBeingWrittenIsReadWhenItStopsChanging() throws Exception {
        Path file = Files.createTempFile("xaf-gw-torn", ".yaml");
        try {
            // The torn prefix an in-place writer leaves for a moment: ports written, routes not yet.
            String prefix = FULL.substring(0, FULL.indexOf("routes:"));
            Files.writeString(file, prefix);
            AtomicReference<Throwable> writerFailure = new AtomicReference<>();
            Thread writer = Thread.ofPlatform().start(() -> {
                try (OutputStream out = Files.newOutputStream(file, StandardOpenOption.APPEND)) {
                    byte[] rest = FULL.substring(prefix.length()).getBytes(StandardCharsets.UTF_8);
                    for (byte b : rest) {
                        Thread.sleep(5);
                        out.write(b);
                        out.flush();
                    }
                } catch (Exception e) {
                    writerFailure.set(e);
                }
            });
            String read = StableFileReader.read(file, 100);
            writer.join();
            assertNull(writerFailure.get());
            assertEquals(FULL, read);
            assertEquals(1, GatewayConfigParser.parse(read, file.toString()).routes().size());
        } finally {
            Files.deleteIfExists(file);
        }
    }

    @Test
    void theTornPrefixAloneIsRejectedByTheParser() {
        String prefix = FULL.substring(0, FULL.indexOf("routes:"));
        var e = assertThrows(GatewayConfigParser.ConfigException.class, () -> GatewayConfigParser.parse(prefix, "gw.yaml"));
        assertEquals("gw.yaml: top level: 'routes' is required", e.getMessage());
    }

    /**
     * The settle rule for a rewrite in place: a writer that pauses inside {@code routes:} for longer than the rename
     * settle time leaves a valid, shorter config; the in-place settle time waits it out.
     */
    @Test
    void aRewriteInPlaceThatPausesInsideRoutesIsReadWhole() throws Exception {
        Path file = Files.createTempFile("xaf-gw-pause", ".yaml");
        try {
            Files.writeString(file, TWO_ROUTES);
            StableFileReader reader = new StableFileReader(file, 100, 1500, 20_000);
            assertEquals(TWO_ROUTES, reader.read());
            PausingWriter writer = PausingWriter.start(file, 700); // much longer than the 100 ms rename settle time
            Thread.sleep(50);
            String read = reader.read();
            writer.joinOk();
            assertEquals(TWO_ROUTES, read, "the shorter route set written before the pause was taken for the file");
            assertEquals(2, GatewayConfigParser.parse(read, file.toString()).routes().size());
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /**
     * The settle rule's second half: a writer that keeps the file open and pauses inside {@code routes:} for five
     * times the in-place settle time (long enough for any time rule to take the shorter config it wrote so far) is
     * waited for, because it still holds the file open for writing.
     */
    @Test
    void aWriterThatPausesInsideRoutesLongerThanTheSettleTimeIsWaitedFor() throws Exception {
        Path file = Files.createTempFile("xaf-gw-long-pause", ".yaml");
        try {
            Files.writeString(file, TWO_ROUTES);
            StableFileReader reader = new StableFileReader(file, 100, 300, 20_000);
            assertEquals(TWO_ROUTES, reader.read());
            PausingWriter writer = PausingWriter.start(file, 1500);
            Thread.sleep(50);
            String read = reader.read();
            writer.joinOk();
            assertEquals(TWO_ROUTES, read, "the shorter route set written before the pause was taken for the file");
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /** As above with another process as the writer, the way an operator's shell or tool writes: found in /proc. */
    @Test
    void aWriterProcessThatPausesInsideRoutesIsWaitedFor() throws Exception {
        Path file = Files.createTempFile("xaf-gw-shell", ".yaml");
        try {
            Files.writeString(file, TWO_ROUTES);
            StableFileReader reader = new StableFileReader(file, 100, 300, 20_000);
            // exec 3> truncates the same inode (a rewrite in place) and keeps it open across the pause
            Process sh = new ProcessBuilder("sh", "-c", "exec 3>\"$0\"; printf %s \"$1\" >&3; sleep 1.5; printf %s \"$2\" >&3",
                    file.toString(), FULL, TWO_ROUTES.substring(FULL.length())).inheritIO().start();
            long deadline = System.currentTimeMillis() + 5000;
            while (!Files.readString(file).equals(FULL) && System.currentTimeMillis() < deadline) Thread.sleep(10);
            assertEquals(FULL, Files.readString(file), "the writer's first part");
            String read = reader.read();
            assertEquals(0, sh.waitFor());
            assertEquals(TWO_ROUTES, read);
        } finally {
            Files.deleteIfExists(file);
        }
    }

    @Test
    void writersAreTheProcessesThatHoldTheFileOpenForWriting() throws Exception {
        Path file = Files.createTempFile("xaf-gw-writers", ".yaml");
        String me = ProcessHandle.current().pid() + " (";
        try {
            Files.writeString(file, FULL);
            assertEquals(List.of(), StableFileReader.writers(file));
            try (FileChannel r = FileChannel.open(file, StandardOpenOption.READ)) {
                assertEquals(List.of(), StableFileReader.writers(file), "open for reading only");
            }
            try (FileChannel w = FileChannel.open(file, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
                List<String> writers = StableFileReader.writers(file);
                assertEquals(1, writers.size(), writers.toString());
                assertTrue(writers.getFirst().startsWith(me), writers.toString());
                // A reader gives up after its longest wait, naming the writer; the running config stays.
                var e = assertThrows(StableFileReader.StillBeingWritten.class, () -> new StableFileReader(file, 20, 20, 300).read());
                assertTrue(e.getMessage().contains("still open for writing by " + me), e.getMessage());
            }
            assertEquals(List.of(), StableFileReader.writers(file), "closed");
            assertEquals(FULL, new StableFileReader(file, 20, 20, 300).read());
        } finally {
            Files.deleteIfExists(file);
        }
    }

    @Test
    void aFileRenamedOverTheConfigSettlesOnTheShortTime() throws Exception {
        Path dir = Files.createTempDirectory("xaf-gw-rename");
        Path file = dir.resolve("gw.yaml");
        try {
            Files.writeString(file, FULL);
            StableFileReader reader = new StableFileReader(file, 100, 60_000, 20_000);
            Path tmp = dir.resolve("gw.yaml.tmp");
            Files.writeString(tmp, TWO_ROUTES);
            Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            // A new inode: the rename settle time applies (an in-place wait of 60 s would time the test out).
            assertTimeoutPreemptively(java.time.Duration.ofSeconds(20), () -> assertEquals(TWO_ROUTES, reader.read()));
        } finally {
            Files.deleteIfExists(file);
            Files.deleteIfExists(dir);
        }
    }

    /**
     * Rewrites the file in place with {@link #FULL} (the first route, a valid config by itself), keeps it open for
     * {@code pauseMillis}, then appends the second route.
     */
    private record PausingWriter(Thread thread, AtomicReference<Throwable> failure) {
        static PausingWriter start(Path file, long pauseMillis) {
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread thread = Thread.ofPlatform().start(() -> {
                try (OutputStream out = Files.newOutputStream(file, StandardOpenOption.TRUNCATE_EXISTING)) {
                    out.write(FULL.getBytes(StandardCharsets.UTF_8));
                    out.flush();
                    Thread.sleep(pauseMillis);
                    out.write(TWO_ROUTES.substring(FULL.length()).getBytes(StandardCharsets.UTF_8));
                } catch (Exception e) {
                    failure.set(e);
                }
            });
            return new PausingWriter(thread, failure);
        }

        void joinOk() throws InterruptedException {
            thread.join();
            assertNull(failure.get());
        }
    }
}
