package io.xaforward.common;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.*;

class PrivateFilesTest {
    @TempDir
    Path dir;

    private Path file(String name, String text, String mode) throws IOException {
        Path f = dir.resolve(name);
        Files.writeString(f, text);
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString(mode));
        return f;
    }

    @Test
    void aPrivateFileReadsAndATrustedFileMayBeReadableByOthers() throws IOException {
        assertEquals("secret", PrivateFiles.read(file("a", "secret", "rw-------"), "test secret"));
        assertEquals("config", PrivateFiles.readTrusted(file("b", "config", "rw-r--r--"), "test config"));
    }

    @Test
    void aLongFileIsReadWholeOrRefusedNeverCut() throws IOException {
        String big = "routes:\n" + "  - {id: 1, job: 1, token: 1, egress: a, dst-mac: 02:00:00:00:00:01}\n".repeat(40_000);
        assertTrue(big.length() > 2 << 20, "larger than a secret may be");
        assertEquals(big, PrivateFiles.readTrusted(file("big", big, "rw-r--r--"), "test config"));
        IOException e = assertThrows(IOException.class, () -> PrivateFiles.read(file("bigsecret", big, "rw-------"), "test secret"));
        assertTrue(e.getMessage().endsWith(" is larger than 1048576 bytes"), e.getMessage());
    }

    @Test
    void aGroupWritableFileIsRefusedAsSecretAndAsTrustedFile() throws IOException {
        Path f = file("gw", "x", "rw-rw----");
        IOException secret = assertThrows(IOException.class, () -> PrivateFiles.read(f, "test secret"));
        assertEquals("test secret " + f + " is accessible by group or others (permissions rw-rw----); it must be"
                + " private to its owner: chmod 600 " + f, secret.getMessage());
        IOException trusted = assertThrows(IOException.class, () -> PrivateFiles.readTrusted(f, "test config"));
        assertEquals("test config " + f + " is writable by group or others (permissions rw-rw----); only its owner"
                + " may change it: chmod go-w " + f, trusted.getMessage());
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-r---w-"));
        assertThrows(IOException.class, () -> PrivateFiles.readTrusted(f, "test config"), "other-writable");
    }

    @Test
    void aSymbolicLinkIsRefusedEvenToAGoodFile() throws IOException {
        Path target = file("target", "x", "rw-------");
        Path link = Files.createSymbolicLink(dir.resolve("link"), target);
        IOException e = assertThrows(IOException.class, () -> PrivateFiles.read(link, "test secret"));
        assertEquals("test secret " + link + " is a symbolic link; give the file itself, private to its owner (chmod 600)",
                e.getMessage());
        IOException t = assertThrows(IOException.class, () -> PrivateFiles.readTrusted(link, "test config"));
        assertTrue(t.getMessage().contains("is a symbolic link"), t.getMessage());
    }

    @Test
    void aFifoOrDirectoryIsRefusedWithoutBlocking() throws Exception {
        Path fifo = dir.resolve("fifo");
        Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
        assertEquals(0, mkfifo.waitFor());
        Files.setPosixFilePermissions(fifo, PosixFilePermissions.fromString("rw-------"));
        IOException e = assertThrows(IOException.class, () -> PrivateFiles.read(fifo, "test secret"));
        assertEquals("test secret " + fifo + " is not a regular file", e.getMessage());
        Path sub = Files.createDirectory(dir.resolve("sub"));
        assertThrows(IOException.class, () -> PrivateFiles.readTrusted(sub, "test config"));
        IOException missing = assertThrows(IOException.class, () -> PrivateFiles.read(dir.resolve("none"), "test secret"));
        assertEquals("test secret " + dir.resolve("none") + " not found", missing.getMessage());
    }

    @Test
    void aFileOwnedByAnotherUserIsRefused() throws Exception {
        assertEquals("root", System.getProperty("user.name"), "the tests run as root here; chown needs it");
        Path f = file("theirs", "x", "rw-------");
        Process chown = new ProcessBuilder("chown", "65534", f.toString()).inheritIO().start();
        assertEquals(0, chown.waitFor());
        IOException e = assertThrows(IOException.class, () -> PrivateFiles.readTrusted(f, "test config"));
        assertTrue(e.getMessage().contains("is owned by uid 65534, not by this process's user (uid 0"), e.getMessage());
    }

    private Path directory(Path d, String mode) throws IOException {
        Files.createDirectories(d);
        Files.setPosixFilePermissions(d, PosixFilePermissions.fromString(mode));
        return d;
    }

    private static Path write(Path f, String text, String mode) throws IOException {
        Files.writeString(f, text);
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString(mode));
        return f;
    }

    @Test
    void aDirectoryAboveTheFileWritableByGroupOrOthersIsRefusedUpToTheRoot() throws IOException {
        Path parent = directory(dir.resolve("team"), "rwxrwx---");
        Path f = write(parent.resolve("key"), "k", "rw-------");
        IOException e = assertThrows(IOException.class, () -> PrivateFiles.read(f, "test secret"));
        assertEquals("test secret " + f + " lies in directory " + parent + ", which is writable by group or others"
                + " (permissions rwxrwx---): they could replace the file; chmod go-w " + parent
                + " (or move the file to a directory only its owner may change)", e.getMessage());
        assertThrows(IOException.class, () -> PrivateFiles.readTrusted(f, "test config"), "a trusted file too");

        // Further up: a private directory inside one that others may write is no better.
        Path outer = directory(dir.resolve("open"), "rwxrwxrwx");
        Path inner = directory(outer.resolve("mine"), "rwx------");
        Path g = write(inner.resolve("key"), "k", "rw-------");
        IOException up = assertThrows(IOException.class, () -> PrivateFiles.read(g, "test secret"));
        assertTrue(up.getMessage().contains("lies in directory " + outer + ", which is writable by group or others"
                + " (permissions rwxrwxrwx)"), up.getMessage());

        Files.setPosixFilePermissions(outer, PosixFilePermissions.fromString("rwxr-xr-x"));
        assertEquals("k", PrivateFiles.read(g, "test secret"), "fixed as the message says");
    }

    @Test
    void aStickyDirectoryLikeTmpIsAccepted() throws Exception {
        Path sticky = Files.createDirectory(dir.resolve("shared"));
        Process chmod = new ProcessBuilder("chmod", "1777", sticky.toString()).inheritIO().start(); // Java sets no sticky bit
        assertEquals(0, chmod.waitFor());
        assertEquals("k", PrivateFiles.read(write(sticky.resolve("key"), "k", "rw-------"), "test secret"));
        assertEquals(01777, (Integer) Files.getAttribute(Path.of("/tmp"), "unix:mode") & 07777, "/tmp as usual");
        Path inTmp = Files.createTempFile("xaf-private-files-", ".key");
        try {
            assertEquals("k", PrivateFiles.read(write(inTmp, "k", "rw-------"), "test secret"), "a secret right in /tmp");
        } finally {
            Files.delete(inTmp);
        }
    }

    @Test
    void aDirectoryOwnedByAnotherUserIsRefused() throws Exception {
        assertEquals("root", System.getProperty("user.name"), "the tests run as root here; chown needs it");
        Path theirs = directory(dir.resolve("theirs"), "rwxr-xr-x");
        Path f = write(theirs.resolve("key"), "k", "rw-------");
        Process chown = new ProcessBuilder("chown", "65534", theirs.toString()).inheritIO().start();
        assertEquals(0, chown.waitFor());
        IOException e = assertThrows(IOException.class, () -> PrivateFiles.read(f, "test secret"));
        assertEquals("test secret " + f + " lies in directory " + theirs + ", which is owned by uid 65534, not by this"
                + " process's user (uid 0) or root: its owner could replace the file; keep it in a directory owned by you"
                + " or root", e.getMessage());
    }

    @Test
    void aLinkedDirectoryIsJudgedByWhereItLeads() throws IOException {
        Path open = directory(dir.resolve("open"), "rwxrwxrwx");
        write(open.resolve("key"), "k", "rw-------");
        Path link = Files.createSymbolicLink(dir.resolve("looks-private"), open);
        IOException e = assertThrows(IOException.class, () -> PrivateFiles.read(link.resolve("key"), "test secret"));
        assertTrue(e.getMessage().contains("lies in directory " + open.toRealPath() + ", which is writable by group or others"),
                e.getMessage());
        Path safe = directory(dir.resolve("safe"), "rwx------");
        write(safe.resolve("key"), "s", "rw-------");
        Path safeLink = Files.createSymbolicLink(dir.resolve("to-safe"), safe);
        assertEquals("s", PrivateFiles.read(safeLink.resolve("key"), "test secret"), "a link to a safe directory is fine");
    }

    /**
     * The attack a check of the path (rather than the descriptor) lets through: the name is swapped between a
     * group-writable file and a good one while the reader opens and checks it. The reader must never return the
     * text of the group-writable file, whichever file its check happened to see.
     */
    @Test
    void aFileSwappedUnderTheNameIsCheckedAsTheOneThatWasOpened() throws Exception {
        Path good = file("good", "good", "rw-------");
        Path bad = file("bad", "bad", "rw-rw-rw-");
        Path name = dir.resolve("secret");
        Files.copy(good, name);
        Files.setPosixFilePermissions(name, PosixFilePermissions.fromString("rw-------"));
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong swaps = new AtomicLong();
        Thread swapper = Thread.ofPlatform().start(() -> {
            try {
                Path staging = dir.resolve("staging");
                while (!stop.get()) {
                    for (Path next : new Path[]{bad, good}) {
                        Files.deleteIfExists(staging);
                        Files.createLink(staging, next); // same inode, same mode, same text
                        Files.move(staging, name, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                        swaps.incrementAndGet();
                    }
                }
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        int refused = 0;
        try {
            for (int i = 0; i < 5000; i++) {
                try {
                    assertEquals("good", PrivateFiles.read(name, "test secret"), "read " + i);
                } catch (IOException e) {
                    assertTrue(e.getMessage().contains("accessible by group or others")
                            || e.getMessage().contains("not found"), e.getMessage());
                    refused++;
                }
            }
        } finally {
            stop.set(true);
            swapper.join();
        }
        assertTrue(swaps.get() > 0, "the name was swapped while the reader read it");
        System.out.println("swap race: " + swaps.get() + " swaps, " + refused + " of 5000 reads refused");
    }
}
