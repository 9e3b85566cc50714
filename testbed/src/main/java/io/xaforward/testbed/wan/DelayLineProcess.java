package io.xaforward.testbed.wan;

import io.xaforward.testbed.Netns;
import io.xaforward.testbed.WanLink;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Starts, finds and stops the delay line of a WAN namespace. The process outlives the {@code topo up} that started
 * it (its own session, output to a log file beside the state file), so it is found again by its command line: the
 * main class and {@code --namespace NS}. {@code topo up} keeps a running one whose arguments are the wanted ones and
 * replaces any other; {@code topo down} stops it before the namespace goes.
 */
public final class DelayLineProcess {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
    private static final long MIN_RING_BYTES = 8L << 20;
    private static final long MAX_RING_BYTES = 256L << 20;

    private DelayLineProcess() {}

    /** The log (its output) of the delay line in {@code ns}. */
    public static Path logFile(Path stateDir, String ns) {
        return stateDir.resolve(ns + ".delay.log");
    }

    /** The counters file ({@code name value} lines, rewritten every second) of the delay line in {@code ns}. */
    public static Path countersFile(Path stateDir, String ns) {
        return stateDir.resolve(ns + ".delay.counters");
    }

    /**
     * Bytes held per direction: four times what the WAN's rate sends in one delay (plus jitter), between 8 and 256 MiB.
     * Arrivals faster than that for a whole delay are counted as {@code ring_full} drops; HTB's queue would have
     * dropped most of them anyway.
     */
    static long ringBytes(WanLink link) {
        double seconds = (link.impairment().delayNanos() + link.impairment().jitterNanos()) / 1e9;
        long bytes = (long) (4 * link.bitsPerSecond() / 8.0 * seconds);
        return Math.max(MIN_RING_BYTES, Math.min(MAX_RING_BYTES, bytes));
    }

    /** The delay line's arguments for this WAN (without the JVM's). */
    static List<String> arguments(String ns, String gatewayPort, String dcPort, WanLink link, Path stateDir) {
        List<String> a = new ArrayList<>(List.of("--namespace", ns, "--gateway-port", gatewayPort, "--dc-port", dcPort,
                "--mtu", Integer.toString(link.mtu()), "--ring-bytes", Long.toString(ringBytes(link)),
                "--counters", countersFile(stateDir, ns).toString()));
        a.addAll(link.impairment().delayLineArguments());
        return a;
    }

    /**
     * Makes sure the delay line of {@code ns} runs with the arguments {@code link} asks for: keeps one that does,
     * replaces one that does not. Returns its pid.
     */
    public static long ensure(String ns, String gatewayPort, String dcPort, WanLink link, Path stateDir) {
        List<String> args = arguments(ns, gatewayPort, dcPort, link, stateDir);
        for (ProcessHandle p : find(ns)) {
            List<String> running = commandLine(p);
            int at = running.indexOf(DelayLineMain.class.getName());
            if (at >= 0 && running.subList(at + 1, running.size()).equals(args)) return p.pid();
            stop(p);
        }
        return start(ns, args, stateDir);
    }

    private static long start(String ns, List<String> args, Path stateDir) {
        Path log = logFile(stateDir, ns);
        try {
            Files.createDirectories(stateDir);
            Files.deleteIfExists(log);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare " + log, e);
        }
        ProcessBuilder pb = Netns.javaProcessBuilder(ns, List.of("-Xmx64m", "-XX:+UseSerialGC"), DelayLineMain.class.getName(), args);
        // Its own session: a Ctrl-C meant for the `topo up` that started it does not reach it. setsid execs in place
        // (the child is no group leader), so the pid stays the JVM's.
        List<String> command = new ArrayList<>(pb.command());
        command.addFirst("setsid");
        pb.command(command);
        pb.redirectErrorStream(true);
        pb.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        Process process;
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the delay line in " + ns, e);
        }
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            String out = readLog(log);
            for (String line : out.split("\n"))
                if (line.startsWith(DelayLineMain.READY + " pid=")) return Long.parseLong(line.substring(line.indexOf('=') + 1).trim());
            if (!process.isAlive())
                throw new IllegalStateException("the delay line in " + ns + " exited (status " + process.exitValue()
                        + ") before it was ready; output:\n" + out);
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while starting the delay line in " + ns, e);
            }
        }
        process.destroyForcibly();
        throw new IllegalStateException("the delay line in " + ns + " did not print '" + DelayLineMain.READY + "' within "
                + START_TIMEOUT.toSeconds() + " s; output:\n" + readLog(log));
    }

    /** The pid of the delay line running for {@code ns}, if any. */
    public static OptionalLong pid(String ns) {
        List<ProcessHandle> found = find(ns);
        return found.isEmpty() ? OptionalLong.empty() : OptionalLong.of(found.getFirst().pid());
    }

    /** Stops every delay line of {@code ns} (SIGTERM, then SIGKILL after 10 s); none running is fine. */
    public static void stop(String ns) {
        for (ProcessHandle p : find(ns)) stop(p);
    }

    private static void stop(ProcessHandle p) {
        p.destroy();
        try {
            p.onExit().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            p.destroyForcibly();
        }
    }

    /** Removes the log and counters files of the delay line of {@code ns} (none is fine). */
    public static void removeFiles(Path stateDir, String ns) {
        try {
            Files.deleteIfExists(logFile(stateDir, ns));
            Files.deleteIfExists(countersFile(stateDir, ns));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove the delay line's files of " + ns + " from " + stateDir, e);
        }
    }

    /** The last counters the delay line of {@code ns} wrote; empty when it never ran. */
    public static Map<String, Long> counters(Path stateDir, String ns) {
        Map<String, Long> m = new LinkedHashMap<>();
        Path f = countersFile(stateDir, ns);
        if (!Files.exists(f)) return m;
        try {
            for (String line : Files.readAllLines(f)) {
                String[] kv = line.trim().split(" ");
                if (kv.length == 2) m.put(kv[0], Long.parseLong(kv[1]));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + f, e);
        }
        return m;
    }

    /** Running delay lines (root's processes) whose command line names {@code ns}. */
    static List<ProcessHandle> find(String ns) {
        try (Stream<ProcessHandle> all = ProcessHandle.allProcesses()) {
            // Only root's: another user's process that merely copies the command line is not ours to stop.
            return all.filter(p -> p.info().user().orElse("").equals("root")).filter(p -> {
                List<String> cmd = commandLine(p);
                int at = cmd.indexOf(DelayLineMain.class.getName());
                int nsAt = cmd.indexOf("--namespace");
                return at >= 0 && nsAt > at && nsAt + 1 < cmd.size() && cmd.get(nsAt + 1).equals(ns);
            }).toList();
        }
    }

    /** A process's arguments from /proc (ProcessHandle.info() truncates nothing but may hide them). */
    private static List<String> commandLine(ProcessHandle p) {
        try {
            byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(p.pid()), "cmdline"));
            if (raw.length == 0) return List.of();
            return List.of(new String(raw, 0, raw[raw.length - 1] == 0 ? raw.length - 1 : raw.length, StandardCharsets.UTF_8).split("\0", -1));
        } catch (IOException | RuntimeException e) {
            return List.of(); // gone meanwhile, or not readable
        }
    }

    private static String readLog(Path log) {
        try {
            return Files.exists(log) ? Files.readString(log) : "";
        } catch (IOException e) {
            return "";
        }
    }
}
