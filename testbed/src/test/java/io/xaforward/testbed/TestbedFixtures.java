package io.xaforward.testbed;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Shared helpers of the root tests: unique prefixes, a private state directory, leftover checks. */
final class TestbedFixtures {
    private TestbedFixtures() {}

    /** "t" + 5 random hex digits: unique per run, never clashes with the example topologies' prefixes. */
    static String uniquePrefix() {
        assertTrue(Netns.isRoot(), "these tests build network namespaces and must run as root");
        return "t" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()).substring(0, 5);
    }

    static Path tempStateDir() {
        try {
            return Files.createTempDirectory("xaf-testbed-state");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void deleteTree(Path dir) {
        if (dir == null || !Files.exists(dir)) return;
        try (var files = Files.walk(dir)) {
            for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<String> namespacesWithPrefix(String prefix) {
        return Netns.list().stream().filter(n -> n.startsWith(prefix + "-")).toList();
    }

    static String run(String ns, String... cmd) {
        return Netns.exec(ns, cmd).stdout();
    }
}
