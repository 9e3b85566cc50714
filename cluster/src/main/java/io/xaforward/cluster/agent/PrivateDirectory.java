package io.xaforward.cluster.agent;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.EnumSet;
import java.util.Set;

/**
 * Where an agent's Unix socket lives: a directory that only this user can enter (mode 0700, owned by this process's
 * user). Inside it no other user can bind a socket in our place, replace ours, or connect to it, whatever the umask
 * was when the socket was bound. A fresh one is made under {@code $XDG_RUNTIME_DIR} when that is set (the session's
 * private runtime directory), else under the temporary directory with an unpredictable name.
 */
public final class PrivateDirectory {
    private static final Set<PosixFilePermission> OWNER_ONLY = EnumSet.of(PosixFilePermission.OWNER_READ,
            PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);

    private PrivateDirectory() {}

    /** Creates a fresh private directory whose name starts with {@code prefix}. */
    public static Path create(String prefix) throws IOException {
        Path dir = Files.createTempDirectory(base(), prefix, PosixFilePermissions.asFileAttribute(OWNER_ONLY));
        Files.setPosixFilePermissions(dir, OWNER_ONLY); // the umask may have taken more than group and others
        requirePrivate(dir, "the directory just created");
        return dir;
    }

    /** $XDG_RUNTIME_DIR when it is set and private itself (a shared one would let others swap our directory out). */
    static Path base() throws IOException {
        String runtime = System.getenv("XDG_RUNTIME_DIR");
        if (runtime != null && !runtime.isBlank()) {
            Path dir = Path.of(runtime);
            if (Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS) && problem(dir) == null) return dir;
        }
        return Path.of(System.getProperty("java.io.tmpdir"));
    }

    /**
     * Fails unless {@code dir} is a directory (not a link to one) owned by this process's user that group and others
     * cannot enter, read or write. {@code what} names it in the error.
     */
    public static void requirePrivate(Path dir, String what) throws IOException {
        String problem = problem(dir);
        if (problem != null) {
            throw new IllegalArgumentException(what + " " + dir + " " + problem + ": an agent's socket must lie in a"
                    + " directory only its user can enter (mode 0700); give a path in such a directory, or none"
                    + " (the agent then makes one)");
        }
    }

    /** Why {@code dir} is not private, or null when it is. */
    private static String problem(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) return "does not exist";
        PosixFileAttributes a = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (a.isSymbolicLink()) return "is a symbolic link";
        if (!a.isDirectory()) return "is not a directory";
        if (!a.owner().equals(currentUser())) {
            return "belongs to " + a.owner().getName() + ", not to " + currentUser().getName();
        }
        Set<PosixFilePermission> others = EnumSet.copyOf(a.permissions());
        others.removeAll(OWNER_ONLY);
        if (!others.isEmpty()) return "has mode " + PosixFilePermissions.toString(a.permissions()) + ", not rwx------";
        return null;
    }

    /** The owner of {@code path} (not following links). */
    static UserPrincipal owner(Path path) throws IOException {
        return Files.getOwner(path, LinkOption.NOFOLLOW_LINKS);
    }

    /** This process's user, as the file system names owners (comparable with {@link #owner} and peer credentials). */
    public static UserPrincipal currentUser() throws IOException {
        return CurrentUser.PRINCIPAL;
    }

    private static final class CurrentUser {
        static final UserPrincipal PRINCIPAL;

        static {
            // /proc/self belongs to the process's effective user; no name lookup (which may fail without NSS) needed
            try {
                PRINCIPAL = Files.getOwner(Path.of("/proc/self"));
            } catch (IOException e) {
                throw new ExceptionInInitializerError(e);
            }
        }
    }

    /** Removes {@code dir} if it is empty; what is left in it (a log) stays, and so does the directory then. */
    public static void removeIfEmpty(Path dir) {
        try {
            Files.deleteIfExists(dir);
        } catch (IOException notEmptyOrGone) {
            // kept for whatever is still in it
        }
    }
}
