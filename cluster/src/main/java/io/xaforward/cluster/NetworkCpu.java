package io.xaforward.cluster;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.stream.Collectors;

/**
 * Whose CPU time is the emulated network's in a {@linkplain ClusterRun#placed() placed} job, by thread and process
 * id: the fabric's NAPI kernel threads (hosts', switches' and WAN veths), the gateway's (its ports' NAPI threads)
 * and the gateway processes that forward in user space. The launcher writes it into the job's properties so that a
 * worker can read the same counters around the interval it times ({@code /proc} is shared by all network
 * namespaces).
 */
public record NetworkCpu(List<Long> fabricThreads, List<Long> gatewayThreads, List<Long> gatewayProcesses) {
    /** Nothing placed: every figure is 0. */
    public static final NetworkCpu NONE = new NetworkCpu(List.of(), List.of(), List.of());

    public NetworkCpu {
        fabricThreads = List.copyOf(fabricThreads);
        gatewayThreads = List.copyOf(gatewayThreads);
        gatewayProcesses = List.copyOf(gatewayProcesses);
    }

    /** Whether any thread is counted (false when the job is not placed). */
    public boolean placed() {
        return !fabricThreads.isEmpty() || !gatewayThreads.isEmpty();
    }

    /** CPU time the fabric's threads ran so far, in ns (a thread that ended counts 0). */
    public long fabricCpuNs() {
        long ns = 0;
        for (long tid : fabricThreads) ns += schedRunNs(Path.of("/proc", Long.toString(tid), "schedstat"));
        return ns;
    }

    /** CPU time the gateway's data path ran so far (its NAPI threads and every thread of its forwarding processes), in ns. */
    public long gatewayCpuNs() {
        long ns = 0;
        for (long tid : gatewayThreads) ns += schedRunNs(Path.of("/proc", Long.toString(tid), "schedstat"));
        for (long pid : gatewayProcesses) {
            try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "task"))) {
                for (Path t : tasks) ns += schedRunNs(t.resolve("schedstat"));
            } catch (IOException e) {
                // the process has ended: its time is gone with it
            }
        }
        return ns;
    }

    /** Writes the ids to {@code file} (a launcher, once the job is up and placed). */
    public void write(Path file) throws IOException {
        Properties p = new Properties();
        writeTo(p);
        JobProperties.write(p, file, "XAForward: threads and processes counted as the emulated network's CPU");
    }

    /** What {@link #write} wrote; {@link #NONE} when there is no such file (an unplaced job). */
    public static NetworkCpu read(Path file) throws IOException {
        return Files.exists(file) ? readFrom(JobProperties.read(file)) : NONE;
    }

    public void writeTo(Properties p) {
        p.setProperty("networkCpu.fabricThreads", join(fabricThreads));
        p.setProperty("networkCpu.gatewayThreads", join(gatewayThreads));
        p.setProperty("networkCpu.gatewayProcesses", join(gatewayProcesses));
    }

    /** What {@link #writeTo} wrote; {@link #NONE} when the properties have none (an unplaced job). */
    public static NetworkCpu readFrom(Properties p) {
        return new NetworkCpu(split(p.getProperty("networkCpu.fabricThreads")), split(p.getProperty("networkCpu.gatewayThreads")),
                split(p.getProperty("networkCpu.gatewayProcesses")));
    }

    private static String join(List<Long> ids) {
        return ids.stream().map(String::valueOf).collect(Collectors.joining(","));
    }

    private static List<Long> split(String s) {
        if (s == null || s.isBlank()) return List.of();
        return Arrays.stream(s.split(",")).map(String::trim).filter(x -> !x.isEmpty()).map(Long::parseLong).toList();
    }

    /** The first field of /proc/.../schedstat: time spent running on a CPU, in ns; 0 when the thread is gone. */
    static long schedRunNs(Path schedstat) {
        try {
            return Long.parseLong(Files.readString(schedstat).trim().split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }
}
