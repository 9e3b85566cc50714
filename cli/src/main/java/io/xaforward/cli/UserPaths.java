package io.xaforward.cli;

import java.nio.file.Files;
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

    static Path requireFile(Path p, String what) {
        if (!Files.exists(p)) throw new IllegalArgumentException(what + " " + p + " not found");
        return p;
    }
}
