package io.xaforward.protocol;

import java.io.IOException;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Set;

/**
 * Reads files that hold secrets (the job secret, an etcd password or TLS key) the way ssh reads private keys: a file
 * that group or others may read or write, one owned by another user (root's are accepted), and a symbolic link are
 * refused with an error that says how to fix it. A key others can read is no longer a secret, and a link can be
 * pointed elsewhere; the file is opened without following links, so it cannot be swapped for one after the check.
 */
public final class PrivateFiles {
    private static final int MAX_BYTES = 1 << 20;
    private static final Set<PosixFilePermission> GROUP_OR_OTHERS = EnumSet.of(
            PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE,
            PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);

    private PrivateFiles() {}

    /** The text of {@code file} (at most 1 MiB), checked as above; {@code what} names it in errors ("job secret file"). */
    public static String read(Path file, String what) throws IOException {
        if (Files.isSymbolicLink(file)) throw symlink(file, what);
        try (var channel = Files.newByteChannel(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            check(file, what);
            return new String(Channels.newInputStream(channel).readNBytes(MAX_BYTES), StandardCharsets.UTF_8);
        } catch (java.nio.file.NoSuchFileException e) {
            throw new IOException(what + " " + file + " not found");
        } catch (java.nio.file.FileSystemException e) {
            if (Files.isSymbolicLink(file)) throw symlink(file, what);
            throw e;
        }
    }

    private static void check(Path file, String what) throws IOException {
        PosixFileAttributes a;
        try {
            a = Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (UnsupportedOperationException e) {
            return; // no POSIX permissions on this file system: nothing to check
        }
        if (a.isSymbolicLink()) throw symlink(file, what);
        if (!a.isRegularFile()) throw new IOException(what + " " + file + " is not a regular file");
        Set<PosixFilePermission> open = EnumSet.copyOf(a.permissions());
        open.retainAll(GROUP_OR_OTHERS);
        if (!open.isEmpty()) {
            throw new IOException(what + " " + file + " is accessible by group or others (permissions "
                    + PosixFilePermissions.toString(a.permissions()) + "); it must be private to its owner: chmod 600 " + file);
        }
        String owner = a.owner().getName(), me = System.getProperty("user.name");
        if (!owner.equals(me) && !owner.equals("root")) {
            throw new IOException(what + " " + file + " is owned by " + owner + ", not by " + me + " (or root)");
        }
    }

    private static IOException symlink(Path file, String what) {
        return new IOException(what + " " + file + " is a symbolic link; give the file itself, private to its owner (chmod 600)");
    }
}
