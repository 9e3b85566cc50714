package io.xaforward.bench.train;

import io.xaforward.cluster.WorkerLine;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** One PyTorch rank script run by a test, over loopback, with its worker lines collected as they come. */
final class TorchRankRun {
    static final String PYTHON = "/usr/bin/python3";

    final Process process;
    WorkerLine start, done;
    final List<WorkerLine> steps = new ArrayList<>();
    private final Thread reader;
    private final StringBuilder text = new StringBuilder();
    private final Path log;

    private TorchRankRun(Process process, Path log) {
        this.process = process;
        this.log = log;
        this.reader = Thread.ofPlatform().start(() -> {
            try (var r = process.inputReader()) {
                for (String line; (line = r.readLine()) != null; ) {
                    text.append(line).append('\n');
                    WorkerLine l = WorkerLine.parse(line);
                    if (l == null) continue;
                    switch (l.kind()) {
                        case "start" -> start = l;
                        case "step" -> steps.add(l);
                        case "done" -> done = l;
                        default -> { }
                    }
                }
            } catch (IOException ignored) {
                // the process ended
            }
        });
    }

    /** Starts rank {@code rank} of {@code world} of {@code script} (store on {@code port}), stderr to a log in {@code dir}. */
    static TorchRankRun start(Path script, List<String> args, int rank, int world, int port, Path dir) throws IOException {
        List<String> command = new ArrayList<>(List.of(PYTHON, "-u", script.toString(), "--rank", Integer.toString(rank),
                "--world", Integer.toString(world), "--ip", "127.0.0.1", "--master", "127.0.0.1", "--port", Integer.toString(port)));
        command.addAll(args);
        Path log = dir.resolve(script.getFileName() + "-rank" + rank + "-of-" + world + "-" + System.nanoTime() + ".log");
        return new TorchRankRun(new ProcessBuilder(command).redirectError(log.toFile()).start(), log);
    }

    /** Waits for the end; the script must have succeeded and reported its start and done lines. */
    TorchRankRun await() throws Exception {
        int code = finish();
        assertEquals(0, code, "the script failed (its log is " + log + "): " + text);
        assertTrue(start != null && done != null, "start and done lines: " + text);
        return this;
    }

    /** Waits for the end and returns the exit status, whatever it is. */
    int finish() throws Exception {
        if (!process.waitFor(5, TimeUnit.MINUTES)) {
            process.destroyForcibly();
            fail("the script did not finish in 5 minutes: " + text);
        }
        reader.join();
        return process.exitValue();
    }

    /** What the script wrote to standard error. */
    String errors() throws IOException {
        return java.nio.file.Files.readString(log);
    }
}
