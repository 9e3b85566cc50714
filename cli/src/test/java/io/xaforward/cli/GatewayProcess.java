package io.xaforward.cli;

import io.xaforward.gateway.GatewayMain;
import io.xaforward.testbed.Netns;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** `xaf gateway --config FILE` started as its own process inside a namespace, with its output collected. */
final class GatewayProcess implements AutoCloseable {
    final Process process;
    private final List<String> lines = new ArrayList<>();
    private boolean ready;
    private final Thread reader;

    private GatewayProcess(Process p) {
        this.process = p;
        this.reader = Thread.ofPlatform().daemon(true).name("gateway-output").start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
                for (String line; (line = r.readLine()) != null; ) {
                    synchronized (this) {
                        lines.add(line);
                        if (line.equals(GatewayMain.READY)) ready = true;
                        notifyAll();
                    }
                }
            } catch (IOException ignored) {
                // process ended
            }
        });
    }

    /** Starts the gateway; {@code ns} null runs it in the current namespace. */
    static GatewayProcess start(String ns, Path config, List<String> jvmArgs) throws IOException {
        return start(ns, config, jvmArgs, List.of());
    }

    /** As {@link #start(String, Path, List)}, with {@code wrapper} (e.g. setpriv ...) run inside the namespace first. */
    static GatewayProcess start(String ns, Path config, List<String> jvmArgs, List<String> wrapper) throws IOException {
        return start(ns, config, jvmArgs, wrapper, List.of());
    }

    /** As above, with more {@code xaf gateway} options (e.g. --registry URL). */
    static GatewayProcess start(String ns, Path config, List<String> jvmArgs, List<String> wrapper, List<String> options) throws IOException {
        return start(ns, config, jvmArgs, wrapper, options, java.util.Map.of());
    }

    /** As above, with environment variables added (e.g. NOTIFY_SOCKET, as systemd sets it). */
    static GatewayProcess start(String ns, Path config, List<String> jvmArgs, List<String> wrapper, List<String> options,
                                java.util.Map<String, String> env) throws IOException {
        List<String> args = new ArrayList<>(List.of("gateway", "--config", config.toString()));
        args.addAll(options);
        ProcessBuilder pb = Netns.javaProcessBuilder(ns, jvmArgs, Main.class.getName(), args);
        // SIGHUP back to its default: a test run started under nohup would otherwise hand the gateway an ignored
        // SIGHUP, which the JVM keeps ignored (the gateway warns), and the reload-on-SIGHUP test would wait in vain.
        List<String> withDefaultHup = new ArrayList<>(List.of("env", "--default-signal=HUP"));
        withDefaultHup.addAll(pb.command());
        pb.command(withDefaultHup);
        if (!wrapper.isEmpty()) {
            List<String> cmd = new java.util.ArrayList<>(pb.command());
            int java = cmd.indexOf(cmd.stream().filter(c -> c.endsWith("/bin/java")).findFirst().orElseThrow());
            cmd.addAll(java, wrapper);
            pb.command(cmd);
        }
        pb.environment().putAll(env);
        pb.redirectErrorStream(true);
        return new GatewayProcess(pb.start());
    }

    /**
     * As {@link #start(String, Path, List, List, List)} but entering only the network namespace (nsenter --net), so
     * the host's /sys/fs/bpf stays visible: how a pinned gateway runs.
     */
    static GatewayProcess startKeepingMounts(String ns, Path config, List<String> options) throws IOException {
        List<String> args = new ArrayList<>(List.of("gateway", "--config", config.toString()));
        args.addAll(options);
        List<String> java = Netns.javaProcessBuilder(null, List.of(), Main.class.getName(), args).command();
        ProcessBuilder pb = Netns.processBuilderKeepMounts(ns, java);
        pb.redirectErrorStream(true);
        return new GatewayProcess(pb.start());
    }

    /**
     * As {@link #startKeepingMounts(String, Path, List)}, with {@code wrapper} (e.g. setpriv ...) run inside the
     * namespace before java: a pinned gateway with fewer privileges.
     */
    static GatewayProcess startKeepingMounts(String ns, Path config, List<String> wrapper, List<String> options) throws IOException {
        List<String> args = new ArrayList<>(List.of("gateway", "--config", config.toString()));
        args.addAll(options);
        List<String> command = new ArrayList<>(wrapper);
        command.addAll(Netns.javaProcessBuilder(null, List.of(), Main.class.getName(), args).command());
        ProcessBuilder pb = Netns.processBuilderKeepMounts(ns, command);
        pb.redirectErrorStream(true);
        return new GatewayProcess(pb.start());
    }

    /** Waits for the ready line; fails with the gateway's output if it exits or times out first. */
    synchronized void awaitReady(long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!ready && process.isAlive() && System.currentTimeMillis() < deadline) wait(200);
        if (!ready) throw new AssertionError("gateway not ready: " + output());
    }

    synchronized boolean sawLine(String fragment) {
        return lines.stream().anyMatch(l -> l.contains(fragment));
    }

    synchronized String output() {
        return String.join("\n", lines);
    }

    /** Waits for the process to exit by itself; returns the exit status. */
    int awaitExit(long timeoutMs) throws InterruptedException {
        if (!process.waitFor(timeoutMs, TimeUnit.MILLISECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("gateway did not exit: " + output());
        }
        reader.join(5000); // the output ends at EOF, after the last line the process printed
        return process.exitValue();
    }

    /**
     * Makes the gateway JVM print a thread dump into its output (SIGQUIT: the JVM prints one and goes on) and waits
     * up to 5 s for its end, so that a failure message shows where the gateway's threads were.
     */
    void printThreadDump() throws InterruptedException, IOException {
        int before;
        synchronized (this) {
            before = lines.size();
        }
        signal("QUIT");
        long deadline = System.currentTimeMillis() + 5000;
        synchronized (this) {
            while (lines.subList(before, lines.size()).stream().noneMatch(l -> l.startsWith("JNI global refs"))
                    && System.currentTimeMillis() < deadline) {
                wait(100);
            }
        }
    }

    /** Sends a signal (HUP, KILL, ...) to the gateway process. */
    void signal(String name) throws InterruptedException, IOException {
        new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start().waitFor();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** SIGTERM, then wait. (Process.destroy would also close our end of its output, losing its last lines.) */
    int stop() throws InterruptedException, IOException {
        new ProcessBuilder("kill", "-TERM", Long.toString(process.pid())).inheritIO().start().waitFor();
        return awaitExit(15_000);
    }

    @Override
    public void close() {
        if (process.isAlive()) process.destroyForcibly();
    }
}
