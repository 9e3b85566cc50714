package io.xaforward.testbed.mode;

import io.xaforward.testbed.Netns;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A gateway running as its own Java process inside the gateway namespace: started, awaited until it prints its
 * ready line, stopped with SIGTERM (then killed). Its output is kept for error messages. A separate process gives
 * the benchmark clean CPU accounting through /proc/PID.
 */
final class GatewayProcess implements AutoCloseable {
    private final Process process;
    private final List<String> output = Collections.synchronizedList(new ArrayList<>());
    /** Counted down at the ready line, or when the output ends first (the process died while starting). */
    private final CountDownLatch ready = new CountDownLatch(1);
    private volatile boolean sawReadyLine;
    private final String what;
    private final Thread reader;
    private boolean stopWithStdin;

    private GatewayProcess(Process process, String readyLine, String what) {
        this.process = process;
        this.what = what;
        this.reader = Thread.ofVirtual().name(what + "-output").start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    output.add(line);
                    if (line.contains(readyLine)) {
                        sawReadyLine = true;
                        ready.countDown();
                    }
                }
            } catch (IOException ignored) {
                // the process ended
            } finally {
                ready.countDown(); // no need to wait out the timeout for a process that has already ended
            }
        });
    }

    /** Starts {@code mainClass} in {@code ns} and waits up to {@code timeout} for a line containing {@code readyLine}. */
    static GatewayProcess start(String ns, String mainClass, List<String> args, String readyLine, Duration timeout) {
        ProcessBuilder pb = Netns.javaProcessBuilder(ns, List.of("-Xmx256m", "-XX:+UseSerialGC"), mainClass, args);
        pb.redirectErrorStream(true);
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start " + mainClass + " in " + ns + ": " + e.getMessage(), e);
        }
        GatewayProcess g = new GatewayProcess(p, readyLine, mainClass.substring(mainClass.lastIndexOf('.') + 1));
        try {
            boolean ok = g.ready.await(timeout.toMillis(), TimeUnit.MILLISECONDS) && g.sawReadyLine;
            if (!ok) p.waitFor(2, TimeUnit.SECONDS); // ended early: let it finish, for its exit status
            boolean alive = p.isAlive();
            if (!ok || !alive) {
                g.close();
                throw new IllegalStateException(mainClass + " in " + ns + (alive ? " did not print '" + readyLine
                        + "' within " + timeout.toSeconds() + " s" : " exited (status " + p.exitValue() + ") before it was ready")
                        + "; output:\n" + String.join("\n", g.output()));
            }
        } catch (InterruptedException e) {
            g.close();
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting " + mainClass, e);
        }
        return g;
    }

    /** Stop by closing the process's standard input (it then exits by itself) before resorting to SIGTERM. */
    GatewayProcess stopWithStdin() {
        stopWithStdin = true;
        return this;
    }

    /**
     * Writes {@code line} to the process's standard input and returns the first line starting with {@code replyPrefix}
     * that it prints afterwards, or null when none comes within {@code timeout} (or the process has ended).
     */
    String request(String line, String replyPrefix, Duration timeout) {
        int seen = output.size();
        try {
            process.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
            process.getOutputStream().flush();
        } catch (IOException e) {
            return null;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            synchronized (output) {
                for (int i = seen; i < output.size(); i++) if (output.get(i).startsWith(replyPrefix)) return output.get(i);
            }
            if (!process.isAlive()) return null;
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }
        return null;
    }

    /** Whether the process is still running. */
    boolean isAlive() {
        return process.isAlive();
    }

    /**
     * The pid of the JVM itself. {@code ip netns exec} execs the command, so the started process is the JVM.
     */
    long pid() {
        return process.pid();
    }

    List<String> output() {
        synchronized (output) {
            return List.copyOf(output);
        }
    }

    @Override
    public void close() {
        if (stopWithStdin && process.isAlive()) {
            try {
                process.getOutputStream().close(); // end of input: the process prints its counters and exits
                process.waitFor(5, TimeUnit.SECONDS);
            } catch (IOException ignored) {
                // fall back to SIGTERM below
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (process.isAlive()) {
            process.destroy(); // SIGTERM: the gateway detaches and prints its counters
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        try {
            reader.join(2000); // the output reader takes the last lines (the counters) before we return
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return what + " pid " + process.pid();
    }
}
