package io.xaforward.cluster.python;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.*;

/**
 * python/pyproject.toml: the package installs with Debian's pip from the checkout, offline (no index, no build
 * isolation: the system's setuptools builds it), and the installed copy, not the checkout, is what a script then
 * imports, the torch.distributed backend included. It installs from a copy of python/: pip builds in the source tree
 * (build/ and xaforward.egg-info/, which .gitignore lists), and a test must not write into the checkout.
 */
class PythonPackageTest {
    @TempDir
    Path dir;

    private static String run(List<String> command, Path cwd, Map<String, String> env) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(cwd.toFile()).redirectErrorStream(true);
        pb.environment().remove("PYTHONPATH");
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), String.join(" ", command) + ":\n" + out);
        return out;
    }

    @Test
    void theCheckoutInstallsOfflineAndTheInstalledCopyIsImported() throws Exception {
        Path source = PythonSetup.packageRoot(System.getenv());
        Matcher declared = Pattern.compile("__version__ = \"([^\"]+)\"").matcher(Files.readString(source.resolve("xaforward/__init__.py")));
        assertTrue(declared.find());
        // pip builds in the source tree (build/, xaforward.egg-info/: ignored by git); a copy keeps the checkout as it is.
        Path copy = dir.resolve("python");
        copyTree(source, copy);
        Path target = dir.resolve("site");
        run(List.of(PythonSetup.DEFAULT_INTERPRETER, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                "--target", target.toString(), copy.toString()), dir, Map.of("PIP_NO_INDEX", "1", "PIP_DISABLE_PIP_VERSION_CHECK", "1"));
        String out = run(List.of(PythonSetup.DEFAULT_INTERPRETER, "-c", """
                import xaforward, xaforward.agent, xaforward.torch, xaforward.torch.distributed as d
                import torch.distributed as dist
                print("version", xaforward.__version__)
                print("files", xaforward.__file__, xaforward.torch.__file__, d.__file__)
                print("backend", d.BACKEND, dist.Backend.XAF)
                """), dir, Map.of("PYTHONPATH", target.toString()));
        assertTrue(out.contains("version " + declared.group(1)), out);
        Matcher files = Pattern.compile("files (\\S+) (\\S+) (\\S+)").matcher(out);
        assertTrue(files.find(), out);
        for (int i = 1; i <= 3; i++) assertTrue(Path.of(files.group(i)).startsWith(target), "imported from the installed copy: " + out);
        assertTrue(out.contains("backend xaf XAF"), "importing it registers the backend: " + out);
        assertTrue(Files.isRegularFile(target.resolve("xaforward-" + declared.group(1) + ".dist-info/METADATA")), "pip recorded it");
    }

    /** The package's sources (pyproject.toml, README.md, xaforward/), without build outputs or caches. */
    private static void copyTree(Path from, Path to) throws java.io.IOException {
        try (var paths = Files.walk(from)) {
            for (Path p : paths.toList()) {
                Path rel = from.relativize(p);
                String first = rel.getNameCount() == 0 ? "" : rel.getName(0).toString();
                if (first.equals("build") || first.endsWith(".egg-info") || rel.toString().contains("__pycache__")) continue;
                Path dest = to.resolve(rel.toString());
                if (Files.isDirectory(p)) Files.createDirectories(dest);
                else Files.copy(p, dest);
            }
        }
    }
}
