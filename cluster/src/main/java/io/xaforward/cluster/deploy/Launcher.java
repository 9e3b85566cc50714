package io.xaforward.cluster.deploy;

import io.xaforward.cluster.WorkerLine;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * {@code xaf launch}: starts the local ranks of one host as {@code xaf worker} processes (as torchrun
 * {@code --nproc-per-node} does), passes their output through, and supervises them. When a local rank fails (or is
 * killed), the others are stopped and, while restarts remain, all local ranks start again with {@code --resume}
 * after {@code restartDelay}: by then every surviving rank on other hosts has failed its all-reduce (each waits at
 * most the operation timeout), so the whole job restarts from the newest common checkpoint.
 */
public final class Launcher {
    /** How to start one local rank: its command line, with {@code --resume} added on restarts. */
    public record Spec(List<Integer> ranks, IntFunction<List<String>> command, int maxRestarts, Duration restartDelay) {
        public Spec {
            ranks = List.copyOf(ranks);
            Objects.requireNonNull(command, "command");
            if (ranks.isEmpty()) throw new IllegalArgumentException("no local ranks to launch");
            if (maxRestarts < 0) throw new IllegalArgumentException("--max-restarts must not be negative");
        }
    }

    private record Exit(int rank, int status) {}

    private final Spec spec;
    private final PrintStream out;
    private final List<Process> running = new ArrayList<>();

    public Launcher(Spec spec, PrintStream out) {
        this.spec = spec;
        this.out = out;
    }

    /** Runs until every local rank finished (0) or a failure with no restarts left (1). */
    public int run() throws IOException, InterruptedException {
        Thread hook = new Thread(this::stopAll, "xaf-launch-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            for (int attempt = 0; ; attempt++) {
                Exit failure = runOnce(attempt > 0);
                if (failure == null) return 0;
                if (attempt >= spec.maxRestarts()) {
                    out.println("xaf launch: rank " + failure.rank() + " failed (exit " + failure.status() + "), no restarts left");
                    return 1;
                }
                out.printf("xaf launch: rank %d failed (exit %d); restarting the local ranks from the last checkpoint in %d s (restart %d of %d)%n",
                        failure.rank(), failure.status(), spec.restartDelay().toSeconds(), attempt + 1, spec.maxRestarts());
                out.flush();
                Thread.sleep(spec.restartDelay().toMillis());
            }
        } finally {
            stopAll();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException ignored) {
                // shutting down
            }
        }
    }

    /** One generation of the local ranks; returns the first failure, or null when all finished. */
    private Exit runOnce(boolean resume) throws IOException, InterruptedException {
        BlockingQueue<Exit> exits = new LinkedBlockingQueue<>();
        synchronized (running) {
            running.clear();
            for (int rank : spec.ranks()) {
                List<String> cmd = new ArrayList<>(spec.command().apply(rank));
                if (resume) cmd.add("--resume");
                Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
                running.add(p);
                out.println(WorkerLine.format("launched", "rank", rank, "pid", p.pid(), "resume", resume));
                out.flush();
                Thread.ofPlatform().daemon(true).name("launch-rank-" + rank).start(() -> pump(rank, p, exits));
            }
        }
        for (int done = 0; done < spec.ranks().size(); done++) {
            Exit e = exits.take();
            if (e.status() != 0) {
                stopAll();
                return e;
            }
        }
        return null;
    }

    private void pump(int rank, Process p, BlockingQueue<Exit> exits) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
            for (String line; (line = r.readLine()) != null; ) {
                synchronized (out) {
                    out.println(line);
                    out.flush();
                }
            }
        } catch (IOException ignored) {
            // the process ended
        }
        try {
            exits.add(new Exit(rank, p.waitFor()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void stopAll() {
        synchronized (running) {
            for (Process p : running) p.destroyForcibly();
            for (Process p : running) {
                try {
                    p.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
