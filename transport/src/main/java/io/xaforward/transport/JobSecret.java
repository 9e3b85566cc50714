package io.xaforward.transport;

import io.xaforward.common.PrivateFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Set;

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
     * Reads a secret file written by {@link #writeTo}; the error names the file and what is wrong with it. The file
     * must be private to its owner and not a symbolic link, as ssh wants of private keys ({@link PrivateFiles}).
     */
    public static JobSecret readFrom(Path file) throws IOException {
        String text = PrivateFiles.read(file, "job secret file").strip();
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

    /**
     * Writes the secret as hexadecimal text to a new file readable by its owner only (mode 600). A regular file
     * already there is replaced; a symbolic link (or anything but a regular file) is refused and left alone, since
     * writing through it would put the key wherever the link points. The file is created with {@code CREATE_NEW}
     * ({@code O_CREAT|O_EXCL}, which never follows a link, not even a dangling one) and written through that one
     * descriptor, so a link swapped in after the check makes the creation fail instead of redirecting the key.
     */
    public void writeTo(Path file) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        if (Files.isSymbolicLink(file)) {
            throw new IOException("job secret file " + file + " is a symbolic link; refusing to write the key through it"
                    + " (remove the link or give another path)");
        }
        if (Files.exists(file, LinkOption.NOFOLLOW_LINKS) && !Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException("job secret file " + file + " exists and is not a regular file");
        }
        Files.deleteIfExists(file);
        Set<OpenOption> options = Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
        ByteBuffer text = ByteBuffer.wrap((HexFormat.of().formatHex(key) + "\n").getBytes(StandardCharsets.US_ASCII));
        try (SeekableByteChannel channel = createPrivate(file, options)) {
            while (text.hasRemaining()) channel.write(text);
        } catch (FileAlreadyExistsException e) {
            throw new IOException("job secret file " + file + " was created by someone else while it was being written"
                    + " (a file or link appeared after the old one was removed); refusing to write the key", e);
        }
    }

    private static SeekableByteChannel createPrivate(Path file, Set<OpenOption> options) throws IOException {
        try {
            return Files.newByteChannel(file, options,
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException e) {
            return Files.newByteChannel(file, options); // no POSIX permissions on this file system
        }
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
