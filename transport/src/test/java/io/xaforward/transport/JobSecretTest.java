package io.xaforward.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.junit.jupiter.api.Assertions.*;

class JobSecretTest {
    @TempDir
    Path dir;

    @Test
    void aWrittenSecretReadsBackAndOnlyItsOwnerCanReadIt() throws IOException {
        JobSecret secret = JobSecret.generate();
        Path file = dir.resolve("sub").resolve("job.secret");
        secret.writeTo(file);
        assertEquals(secret, JobSecret.readFrom(file));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        assertEquals(2 * JobSecret.LENGTH + 1, Files.size(file), "64 hex digits and a newline");
        assertNotEquals(secret, JobSecret.generate(), "every job draws its own secret");
        assertFalse(secret.toString().contains(Files.readString(file).strip().substring(0, 8)), "toString hides the key");
    }

    @Test
    void rewritingAnOpenedUpFileMakesItPrivateAgain() throws IOException {
        Path file = dir.resolve("job.secret");
        Files.writeString(file, "old");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        JobSecret.generate().writeTo(file);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
    }

    @Test
    void aShortOrGarbledFileIsAnErrorNamingTheFile() throws IOException {
        Path shortFile = dir.resolve("short.secret");
        Files.writeString(shortFile, "00112233445566778899aabbccddeeff\n"); // 16 bytes
        Files.setPosixFilePermissions(shortFile, PosixFilePermissions.fromString("rw-------"));
        IOException tooShort = assertThrows(IOException.class, () -> JobSecret.readFrom(shortFile));
        assertTrue(tooShort.getMessage().contains(shortFile.toString()), tooShort.getMessage());
        assertTrue(tooShort.getMessage().contains("16 bytes"), tooShort.getMessage());

        Path garbled = dir.resolve("garbled.secret");
        Files.writeString(garbled, "this is not a key at all, just words in a file....................\n");
        Files.setPosixFilePermissions(garbled, PosixFilePermissions.fromString("rw-------"));
        IOException notHex = assertThrows(IOException.class, () -> JobSecret.readFrom(garbled));
        assertTrue(notHex.getMessage().contains(garbled.toString()) && notHex.getMessage().contains("hexadecimal"),
                notHex.getMessage());

        Path empty = dir.resolve("empty.secret");
        Files.writeString(empty, "");
        Files.setPosixFilePermissions(empty, PosixFilePermissions.fromString("rw-------"));
        assertThrows(IOException.class, () -> JobSecret.readFrom(empty));
    }

    @Test
    void aSecretFileOthersCanReadOrALinkIsRefusedAsSshRefusesSuchKeys() throws IOException {
        JobSecret secret = JobSecret.generate();
        Path file = dir.resolve("job.secret");
        secret.writeTo(file);
        for (String mode : new String[]{"rw-r-----", "rw----r--", "rw-------"}) {
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString(mode));
            if (mode.equals("rw-------")) {
                assertEquals(secret, JobSecret.readFrom(file));
                continue;
            }
            IOException e = assertThrows(IOException.class, () -> JobSecret.readFrom(file), mode);
            assertEquals("job secret file " + file + " is accessible by group or others (permissions " + mode
                    + "); it must be private to its owner: chmod 600 " + file, e.getMessage());
        }
        Path link = dir.resolve("link.secret");
        Files.createSymbolicLink(link, file);
        IOException e = assertThrows(IOException.class, () -> JobSecret.readFrom(link));
        assertEquals("job secret file " + link + " is a symbolic link; give the file itself, private to its owner (chmod 600)",
                e.getMessage());
    }

    @Test
    void writingThroughASymbolicLinkIsRefusedAndTheTargetKeepsItsText() throws IOException {
        Path target = dir.resolve("elsewhere.txt");
        Files.writeString(target, "not a key");
        Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rw-r--r--"));
        Path link = Files.createSymbolicLink(dir.resolve("job.secret"), target);
        IOException e = assertThrows(IOException.class, () -> JobSecret.generate().writeTo(link));
        assertTrue(e.getMessage().contains("job secret file " + link + " is a symbolic link"), e.getMessage());
        assertTrue(Files.isSymbolicLink(link), "the link is left alone");
        assertEquals("not a key", Files.readString(target), "nothing was written through the link");

        Path dangling = Files.createSymbolicLink(dir.resolve("dangling.secret"), dir.resolve("would-be-created"));
        assertThrows(IOException.class, () -> JobSecret.generate().writeTo(dangling));
        assertFalse(Files.exists(dir.resolve("would-be-created")), "a dangling link does not create its target");
    }
}
