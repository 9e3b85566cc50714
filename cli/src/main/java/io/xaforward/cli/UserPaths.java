package io.xaforward.cli;

import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;

/**
 * Paths on the command line are relative to the directory the user ran {@code xaf} from. The launcher script
 * changes into the install directory before starting Java, so it passes the caller's directory on in XAF_CWD; without
 * it (tests, a plain java command) the JVM's working directory is the user's.
 */
final class UserPaths {
    static final String CWD_VARIABLE = "XAF_CWD";

    private UserPaths() {}

    /** The user's working directory. */
    static Path workingDirectory() {
        String cwd = System.getenv(CWD_VARIABLE);
        return Path.of(cwd != null && !cwd.isBlank() ? cwd : System.getProperty("user.dir"));
    }

    /** {@code path} made absolute against the user's working directory. */
    static Path resolve(String path) {
        Path p = Path.of(path);
        return p.isAbsolute() ? p.normalize() : workingDirectory().resolve(p).normalize();
    }

    /** The install directory (XAF_HOME, set by the launcher), else the working directory. */
    static Path installDirectory() {
        String home = System.getenv("XAF_HOME");
        return Path.of(home != null ? home : System.getProperty("user.dir")).toAbsolutePath();
    }

    /** A per-user cache under the install directory (prepared corpora, DJL): .cache/NAME. */
    static Path cache(String name) {
        return installDirectory().resolve(".cache").resolve(name);
    }

    /**
     * What went wrong, for a one-line error: a file system error as "FILE: reason" (its message alone is often just
     * the path), anything else as its message.
     */
    static String describe(Throwable e) {
        if (e instanceof FileSystemException f) {
            String reason = f.getReason() != null ? f.getReason() : switch (f) {
                case NoSuchFileException n -> "no such file or directory";
                case AccessDeniedException a -> "permission denied";
                case FileAlreadyExistsException x -> "already exists";
                case NotDirectoryException d -> "not a directory";
                case DirectoryNotEmptyException d -> "directory not empty";
                default -> f.getClass().getSimpleName();
            };
            return (f.getFile() != null ? f.getFile() : "") + (f.getOtherFile() != null ? " -> " + f.getOtherFile() : "")
                    + ": " + reason;
        }
        return e.getMessage() != null ? e.getMessage() : e.toString();
    }

    static Path requireFile(Path p, String what) {
        if (!Files.exists(p)) throw new IllegalArgumentException(what + " " + p + " not found");
        return p;
    }
}
