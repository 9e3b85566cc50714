package io.xaforward.bench;

import io.xaforward.cluster.ProcStat;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Gateway CPU time, in nanoseconds, from the kernel's own accounting: the threaded-NAPI kernel threads of the gateway's
 * ports (where XDP and kernel forwarding run once {@code /sys/class/net/DEV/threaded} is 1), plus every thread of a
 * user-space gateway process ({@code /proc/PID/task/TID/schedstat}), plus, for context, the machine-wide softirq
 * time from {@code /proc/stat} (it also holds sender and receiver work, so it is reported, not attributed).
 */
public final class CpuMeter {
    /** One reading. */
    public record Sample(long gatewayNs, long softirqNs) {
        public Sample minus(Sample o) {
            return new Sample(gatewayNs - o.gatewayNs, softirqNs - o.softirqNs);
        }
    }

    private final List<Path> napiThreads;
    private final List<Long> pids;

    /** Measures the NAPI threads whose name starts with {@code napi/<dev>} for each device, and the processes {@code pids}. */
    public CpuMeter(List<String> devices, List<Long> pids) {
        this.napiThreads = napiThreads(devices);
        this.pids = List.copyOf(pids);
    }

    public int napiThreadCount() {
        return napiThreads.size();
    }

    /** Thread ids of the measured NAPI kthreads and of every thread of the measured processes (for pinning). */
    public List<Long> threadIds() {
        List<Long> out = new ArrayList<>(napiThreadIds(napiThreads));
        for (long pid : pids) out.addAll(CpuAffinity.threadsOf(pid));
        return out;
    }

    static List<Long> napiThreadIds(List<Path> threads) {
        List<Long> out = new ArrayList<>();
        for (Path p : threads) out.add(Long.parseLong(p.getFileName().toString()));
        return out;
    }

    public Sample sample() {
        long gw = 0;
        for (Path p : napiThreads) gw += schedRunNs(p.resolve("schedstat"));
        for (long pid : pids) {
            try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "task"))) {
                for (Path t : tasks) gw += schedRunNs(t.resolve("schedstat"));
            } catch (IOException e) {
                // the process ended: its time is no longer visible
            }
        }
        return new Sample(gw, softirqNs());
    }

    static long schedRunNs(Path schedstat) {
        try {
            String s = Files.readString(schedstat).strip();
            return Long.parseLong(s.substring(0, s.indexOf(' ')));
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    static long softirqNs() {
        return ProcStat.read().ns("cpu", ProcStat.SOFTIRQ);
    }

    static List<Path> napiThreads(List<String> devices) {
        List<Path> out = new ArrayList<>();
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), p -> p.getFileName().toString().chars().allMatch(Character::isDigit))) {
            for (Path p : procs) {
                String comm;
                try {
                    comm = Files.readString(p.resolve("comm")).strip();
                } catch (IOException e) {
                    continue;
                }
                if (!comm.startsWith("napi/")) continue;
                for (String dev : devices) {
                    String want = "napi/" + dev + "-";
                    // comm is cut at 15 characters: compare what is left of it
                    if (want.startsWith(comm) && comm.length() >= Math.min(15, want.length()) || comm.startsWith(want)) out.add(p);
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list /proc", e);
        }
        return out;
    }
}
