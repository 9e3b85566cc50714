package io.xaforward.cluster.agent;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** One training process: Debian's /usr/bin/python3 (where python3-torch is) running a test script for one rank. */
final class PythonRank {
    static final String INTERPRETER = "/usr/bin/python3";

    final int rank;
    final Process process;
    /** What the script printed so far (standard output and error), line by line as it comes. */
    private final StringBuffer printed = new StringBuffer();
    private final CompletableFuture<String> output = new CompletableFuture<>();

    private PythonRank(int rank, Process process) {
        this.rank = rank;
        this.process = process;
        Thread.ofVirtual().start(() -> {
            try (var in = new java.io.BufferedReader(new java.io.InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) printed.append(line).append('\n');
            } catch (IOException e) {
                printed.append("(output unreadable: ").append(e).append(")\n");
            }
            output.complete(printed.toString());
        });
    }

    /** Starts {@code script} (a test resource under agent/) as rank {@code rank} of {@code agents}. */
    static PythonRank start(String script, LoopbackAgents agents, int rank, Path dir) throws IOException {
        return start(script, agents, rank, dir, Map.of());
    }

    /** As {@link #start(String, LoopbackAgents, int, Path)}, with {@code overrides} put into its environment last. */
    static PythonRank start(String script, LoopbackAgents agents, int rank, Path dir, Map<String, String> overrides)
            throws IOException {
        Path file = dir.resolve(script);
        if (!Files.exists(file)) {
            try (InputStream in = PythonRank.class.getResourceAsStream("/agent/" + script)) {
                if (in == null) throw new IllegalStateException("test resource agent/" + script + " is missing");
                Files.copy(in, file);
            }
        }
        ProcessBuilder pb = new ProcessBuilder(INTERPRETER, file.toString()).redirectErrorStream(true);
        Map<String, String> env = pb.environment();
        env.put("PYTHONPATH", packageRoot().toString());
        env.put("XAF_AGENT_SOCKET", agents.sockets.get(rank).toString());
        env.put("RANK", Integer.toString(rank));
        env.put("WORLD_SIZE", Integer.toString(agents.size));
        env.put("LOCAL_RANK", Integer.toString(rank));
        env.put("OMP_NUM_THREADS", "1");
        env.putAll(overrides);
        return new PythonRank(rank, pb.start());
    }

    /** The repository's python/ directory, found upwards from the test's working directory. */
    static Path packageRoot() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("python/xaforward/__init__.py"))) return dir.resolve("python");
        }
        throw new IllegalStateException("python/xaforward not found above " + Path.of("").toAbsolutePath());
    }

    /** Waits for the process to end; its exit status. Kills it (and fails) after {@code seconds}. */
    int await(long seconds) throws InterruptedException {
        if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("rank " + rank + "'s script did not end within " + seconds + " s:\n" + output());
        }
        return process.exitValue();
    }

    String output() {
        try {
            return output.get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            return "(no output: " + e + ")";
        }
    }

    /** Blocks until the script has printed a line containing {@code text} (it must not end first). */
    void awaitLine(String text, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) throw new AssertionError("rank " + rank + "'s script ended early:\n" + output());
            if (partial().contains(text)) return;
            Thread.sleep(50);
        }
        throw new AssertionError("rank " + rank + " did not print '" + text + "' within " + seconds + " s");
    }

    private String partial() {
        return printed.toString();
    }
}
