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
                process.getOutputStream().close(); // end of input: the process stops by itself
                process.waitFor(5, TimeUnit.SECONDS);
            } catch (IOException ignored) {
                // fall back to SIGTERM below
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (process.isAlive()) {
            process.destroy(); // SIGTERM: the gateway detaches
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
            reader.join(2000); // the output reader takes the last lines before we return
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return what + " pid " + process.pid();
    }
}
