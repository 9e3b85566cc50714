package io.xaforward.transport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Set;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The per-job key that authenticates (and optionally encrypts) every datagram of a job. The launcher generates one
 * per run with {@link #generate()} and writes it to a file only its user can read ({@link #writeTo}); every worker
 * reads it with {@link #readFrom}. The file holds the key as hexadecimal text, 64 digits (32 bytes).
 */
public final class JobSecret {
    public static final int LENGTH = 32;

    private final byte[] key;

    private JobSecret(byte[] key) {
        if (key.length < LENGTH) {
            throw new IllegalArgumentException("a job secret needs at least " + LENGTH + " bytes, got " + key.length);
        }
        this.key = key.clone();
    }

    /** A fresh random secret from the system's strong random source. */
    public static JobSecret generate() {
        byte[] key = new byte[LENGTH];
        new SecureRandom().nextBytes(key);
        return new JobSecret(key);
    }

    /** For tests and tools that derive a key themselves. */
    public static JobSecret of(byte[] key) {
        return new JobSecret(key);
    }

    /**
     * Reads a secret file written by {@link #writeTo}; the error names the file and what is wrong with it. As ssh does
     * with private keys, a file that group or others may read or write, a file owned by another user (root's are
     * accepted), and a symbolic link are refused: a key others can read is no longer a secret, and a link can be
     * pointed elsewhere. The file is opened without following links, so it cannot be swapped for one after the check.
     */
    public static JobSecret readFrom(Path file) throws IOException {
        if (Files.isSymbolicLink(file)) throw symlink(file);
        String text;
        try (var channel = Files.newByteChannel(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            checkPrivate(file);
            text = new String(java.nio.channels.Channels.newInputStream(channel).readNBytes(4096), StandardCharsets.US_ASCII).strip();
        } catch (FileSystemException e) {
            if (Files.isSymbolicLink(file)) throw symlink(file);
            throw e;
        }
        byte[] key;
        try {
            key = HexFormat.of().parseHex(text);
        } catch (IllegalArgumentException e) {
            throw new IOException("job secret file " + file + " does not hold hexadecimal digits", e);
        }
        if (key.length < LENGTH) {
            throw new IOException("job secret file " + file + " holds " + key.length + " bytes, at least "
                    + LENGTH + " are needed");
        }
        return new JobSecret(key);
    }

    private static void checkPrivate(Path file) throws IOException {
        PosixFileAttributes a;
        try {
            a = Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (UnsupportedOperationException e) {
            return; // no POSIX permissions on this file system: nothing to check
        }
        if (a.isSymbolicLink()) throw symlink(file);
        if (!a.isRegularFile()) throw new IOException("job secret file " + file + " is not a regular file");
        Set<PosixFilePermission> open = EnumSet.copyOf(a.permissions());
        open.retainAll(EnumSet.of(PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE,
                PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE));
        if (!open.isEmpty()) {
            throw new IOException("job secret file " + file + " is accessible by group or others (permissions "
                    + PosixFilePermissions.toString(a.permissions()) + "); it must be private to its owner: chmod 600 " + file);
        }
        String owner = a.owner().getName(), me = System.getProperty("user.name");
        if (!owner.equals(me) && !owner.equals("root")) {
            throw new IOException("job secret file " + file + " is owned by " + owner + ", not by " + me + " (or root)");
        }
    }

    private static IOException symlink(Path file) {
        return new IOException("job secret file " + file + " is a symbolic link; give the file itself, private to its owner (chmod 600)");
    }

    /** Writes the secret as hexadecimal text to a new file readable by its owner only (mode 600). */
    public void writeTo(Path file) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.deleteIfExists(file);
        try {
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException e) {
            Files.createFile(file);
        }
        Files.writeString(file, HexFormat.of().formatHex(key) + "\n", StandardCharsets.US_ASCII,
                StandardOpenOption.TRUNCATE_EXISTING);
    }

    /** A copy of the key bytes. */
    byte[] bytes() {
        return key.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof JobSecret other && Arrays.equals(key, other.key);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(key);
    }

    /** Never prints the key. */
    @Override
    public String toString() {
        return "JobSecret[" + key.length + " bytes]";
    }
}
