package io.xaforward.testbed;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

/**
 * Runs commands inside network namespaces. Short commands run to completion with a timeout and captured output
 * ({@link #exec}); long-running processes get a ready {@link ProcessBuilder} ({@link #processBuilder}).
 * Failures throw {@link NetnsException} with the full command line and stderr, never a bare exit code.
 */
public final class Netns {
    /** Default limit for one short command. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(20);
    private static final Path NETNS_DIR = Path.of("/run/netns");

    private Netns() {}

    /** Output of a finished command. */
    public record Result(List<String> command, int exitCode, String stdout, String stderr) {
        public boolean ok() {
            return exitCode == 0;
        }
    }

    /** Runs {@code command} in namespace {@code ns} ({@code null} = the current one); throws unless it exits 0. */
    public static Result exec(String ns, String... command) {
        return exec(ns, DEFAULT_TIMEOUT, null, List.of(command));
    }

    /** Runs a command in {@code ns} ({@code null} = current namespace), feeding {@code stdin} if non-null. */
    public static Result exec(String ns, Duration timeout, String stdin, List<String> command) {
        Result r = tryExec(ns, timeout, stdin, command);
        if (!r.ok())
            throw new NetnsException("command failed (exit " + r.exitCode() + "): " + String.join(" ", r.command())
                    + (r.stderr().isBlank() ? "" : "\n" + r.stderr().strip()));
        return r;
    }

    /** Like {@link #exec} but returns a non-zero exit in the result instead of throwing (timeouts still throw). */
    public static Result tryExec(String ns, Duration timeout, String stdin, List<String> command) {
        List<String> full = wrap(ns, command);
        Process p;
        try {
            p = new ProcessBuilder(full).start();
        } catch (IOException e) {
            throw new NetnsException("cannot start: " + String.join(" ", full) + ": " + e.getMessage(), e);
        }
        CompletableFuture<String> out = drain(p.getInputStream());
        CompletableFuture<String> err = drain(p.getErrorStream());
        try (OutputStream in = p.getOutputStream()) {
            if (stdin != null) in.write(stdin.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            // the command may exit without reading stdin; its exit code tells what happened
        }
        try {
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                p.waitFor(5, TimeUnit.SECONDS);
                throw new NetnsException("timed out after " + timeout.toMillis() + " ms: " + String.join(" ", full)
                        + "\n" + err.getNow(""));
            }
            return new Result(full, p.exitValue(), out.get(5, TimeUnit.SECONDS), err.get(5, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new NetnsException("interrupted: " + String.join(" ", full), e);
        } catch (ExecutionException | TimeoutException e) {
            throw new NetnsException("cannot read output of: " + String.join(" ", full), e);
        }
    }

    /**
     * A ProcessBuilder that starts {@code command} inside {@code ns} through {@code ip netns exec} (which also
     * remounts /sys for the namespace). Start it, and stop it yourself.
     */
    public static ProcessBuilder processBuilder(String ns, List<String> command) {
        return new ProcessBuilder(wrap(ns, command));
    }

    /**
     * A ProcessBuilder that enters only the network namespace ({@code nsenter --net}); mounts stay those of the
     * caller, so bpffs pins under /sys/fs/bpf remain visible (unlike {@code ip netns exec}).
     */
    public static ProcessBuilder processBuilderKeepMounts(String ns, List<String> command) {
        List<String> full = new ArrayList<>(List.of("nsenter", "--net=" + NETNS_DIR.resolve(ns)));
        full.addAll(command);
        return new ProcessBuilder(full);
    }

    /**
     * A ProcessBuilder for a Java process in {@code ns}: this JVM's java binary and class path, native access
     * enabled, then {@code jvmArgs}, {@code mainClass} and {@code args}.
     */
    public static ProcessBuilder javaProcessBuilder(String ns, List<String> jvmArgs, String mainClass, List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.addAll(jvmArgs);
        cmd.add(mainClass);
        cmd.addAll(args);
        return processBuilder(ns, cmd);
    }

    /** True if a namespace of that name exists (is registered under /run/netns). */
    public static boolean exists(String ns) {
        return Files.exists(NETNS_DIR.resolve(ns));
    }

    /** Names of all registered namespaces. */
    public static List<String> list() {
        if (!Files.isDirectory(NETNS_DIR)) return List.of();
        try (Stream<Path> s = Files.list(NETNS_DIR)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Creates the namespace unless it exists; brings its loopback up. */
    public static void add(String ns) {
        if (!exists(ns)) {
            Result r = tryExec(null, DEFAULT_TIMEOUT, null, List.of("ip", "netns", "add", ns));
            if (!r.ok() && !exists(ns))
                throw new NetnsException("command failed: ip netns add " + ns + "\n" + r.stderr().strip());
        }
        exec(ns, "ip", "link", "set", "dev", "lo", "up");
    }

    /** Deletes the namespace if it exists; returns whether it did. */
    public static boolean delete(String ns) {
        if (!exists(ns)) return false;
        Result r = tryExec(null, DEFAULT_TIMEOUT, null, List.of("ip", "netns", "delete", ns));
        if (!r.ok() && exists(ns))
            throw new NetnsException("command failed: ip netns delete " + ns + "\n" + r.stderr().strip());
        return true;
    }

    /** True when this process runs as root (uid 0), which namespaces, veths and tc need. */
    public static boolean isRoot() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status")))
                if (line.startsWith("Uid:")) return line.split("\\s+")[1].equals("0");
        } catch (IOException e) {
            return false;
        }
        return false;
    }

    private static List<String> wrap(String ns, List<String> command) {
        if (command.isEmpty()) throw new IllegalArgumentException("empty command");
        if (ns == null) return List.copyOf(command);
        List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", ns));
        full.addAll(command);
        return full;
    }

    private static CompletableFuture<String> drain(InputStream s) {
        return CompletableFuture.supplyAsync(() -> {
            try (s) {
                return new String(s.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "";
            }
        }, Thread::startVirtualThread);
    }
}
