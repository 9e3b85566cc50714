package io.xaforward.cluster.python;

import java.io.File;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a user's PyTorch script is started with: the interpreter and the environment through which
 * {@code xaforward.torch} finds its rank and its agent (docs/PYTORCH.md, "Launch").
 *
 * <p>The interpreter is Debian's {@code /usr/bin/python3} (where python3-torch installs torch) unless
 * {@code XAF_PYTHON} names another: the {@code python3} first on a user's PATH is often a different interpreter
 * without torch. The package {@code xaforward} is the repository's {@code python/} directory, found from
 * {@code XAF_HOME} (set by {@code ./xaf}) or, without it, from where this class was loaded (the build's jars and
 * classes lie inside the repository).
 */
public final class PythonSetup {
    /** The interpreter used unless {@code XAF_PYTHON} overrides it. */
    public static final String DEFAULT_INTERPRETER = "/usr/bin/python3";

    private PythonSetup() {}

    public static String interpreter(Map<String, String> environment) {
        String chosen = environment.get("XAF_PYTHON");
        return chosen == null || chosen.isBlank() ? DEFAULT_INTERPRETER : chosen;
    }

    /** The directory holding the {@code xaforward} package; one clear error when it cannot be found. */
    public static Path packageRoot(Map<String, String> environment) {
        String home = environment.get("XAF_HOME");
        if (home != null && !home.isBlank()) {
            Path p = Path.of(home, "python");
            if (isPackageRoot(p)) return p.toAbsolutePath().normalize();
        }
        try {
            Path from = Path.of(PythonSetup.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            for (Path dir = from.toAbsolutePath(); dir != null; dir = dir.getParent()) {
                if (isPackageRoot(dir.resolve("python"))) return dir.resolve("python").normalize();
            }
        } catch (URISyntaxException | RuntimeException ignored) {
            // no code source to start from: the error below says what to set
        }
        throw new IllegalStateException("the Python package xaforward (python/xaforward in the XAForward directory) was not"
                + " found: set XAF_HOME to the XAForward directory");
    }

    private static boolean isPackageRoot(Path dir) {
        return Files.isRegularFile(dir.resolve("xaforward").resolve("__init__.py"));
    }

    /**
     * The environment of rank {@code rank}'s script: the variables torchrun sets (RANK, WORLD_SIZE, LOCAL_RANK,
     * LOCAL_WORLD_SIZE), the agent's socket, the package on PYTHONPATH (before any the user set) and unbuffered
     * output, so that its lines reach the launcher as they are printed.
     */
    public static Map<String, String> scriptEnvironment(Map<String, String> inherited, int rank, int world, int localRank,
                                                        int localWorld, Path socket) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("RANK", Integer.toString(rank));
        env.put("WORLD_SIZE", Integer.toString(world));
        env.put("LOCAL_RANK", Integer.toString(localRank));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(localWorld));
        env.put("XAF_AGENT_SOCKET", socket.toAbsolutePath().toString());
        String path = packageRoot(inherited).toString();
        String before = inherited.get("PYTHONPATH");
        env.put("PYTHONPATH", before == null || before.isBlank() ? path : path + File.pathSeparator + before);
        env.put("PYTHONUNBUFFERED", "1");
        return env;
    }
}
