package io.xaforward.cluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * One reading of the CPU time the kernel accounts in {@code /proc/stat}: the machine's line ({@code cpu}) and one
 * line per core ({@code cpuN}), fields user, nice, system, idle, iowait, irq, softirq, steal in ticks of 10 ms
 * (USER_HZ = 100). Read once and asked for several figures, so that they come from the same moment.
 */
public final class ProcStat {
    public static final int USER = 0, NICE = 1, SYSTEM = 2, IDLE = 3, IOWAIT = 4, IRQ = 5, SOFTIRQ = 6, STEAL = 7;
    private static final long NS_PER_TICK = 10_000_000L;
    private static final int[] BUSY = {USER, NICE, SYSTEM, IRQ, SOFTIRQ, STEAL};

    private final List<String> lines;

    private ProcStat(List<String> lines) {
        this.lines = lines;
    }

    /** Reads /proc/stat now; a machine without it reads as all zeros. */
    public static ProcStat read() {
        try {
            return new ProcStat(Files.readAllLines(Path.of("/proc/stat")));
        } catch (IOException e) {
            return new ProcStat(List.of());
        }
    }

    /** Field {@code field} ({@link #SOFTIRQ}, ...) of line {@code name} ("cpu" or "cpu0", ...) in ns; 0 if absent. */
    public long ns(String name, int field) {
        long[] f = fields(name);
        return f == null || field >= f.length ? 0 : f[field] * NS_PER_TICK;
    }

    /** Time line {@code name} spent on anything but idle and I/O wait, in ns; 0 if absent (no such core). */
    public long busyNs(String name) {
        long[] f = fields(name);
        if (f == null) return 0;
        long busy = 0;
        for (int i : BUSY) busy += i < f.length ? f[i] : 0;
        return busy * NS_PER_TICK;
    }

    private long[] fields(String name) {
        String prefix = name + " ";
        for (String line : lines) {
            if (!line.startsWith(prefix)) continue;
            String[] f = line.trim().split("\\s+");
            long[] out = new long[f.length - 1];
            for (int i = 1; i < f.length; i++) out[i - 1] = Long.parseLong(f[i]);
            return out;
        }
        return null;
    }
}
