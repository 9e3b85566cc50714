package io.xaforward.dataplane;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The kernel's run-time statistics of a loaded BPF program (run_time_ns and run_cnt of struct bpf_prog_info): the
 * CPU time the program itself took, per run, without the driver and redirect work around it. The kernel only
 * counts while statistics are enabled ({@link #enable()}, or the sysctl kernel.bpf_stats_enabled), and counting
 * costs every program two clock reads per run, so enable it for a whole measurement, for every program alike.
 */
public final class ProgramRunStats {
    private ProgramRunStats() {}

    /** BPF_STATS_RUN_TIME of enum bpf_stats_type. */
    private static final int BPF_STATS_RUN_TIME = 0;
    /** Offsets in struct bpf_prog_info (linux/bpf.h, stable uapi): id at 4, run_time_ns at 192, run_cnt at 200. */
    static final long ID_OFFSET = 4, RUN_TIME_NS_OFFSET = 192, RUN_CNT_OFFSET = 200, INFO_SIZE = 208;

    /** Total run time and number of runs of one program since it was loaded (while statistics were enabled). */
    public record Reading(long runTimeNs, long runs) {
        public Reading minus(Reading earlier) {
            return new Reading(runTimeNs - earlier.runTimeNs, runs - earlier.runs);
        }

        /** Program nanoseconds per run; NaN when it did not run. */
        public double nsPerRun() {
            return runs == 0 ? Double.NaN : (double) runTimeNs / runs;
        }
    }

    /** The sysctl that turns the statistics on for every program, where the BPF_ENABLE_STATS command is refused. */
    static final Path STATS_SYSCTL = Path.of("/proc/sys/kernel/bpf_stats_enabled");

    /**
     * Turns run-time statistics on for every BPF program until the returned handle is closed: through the
     * BPF_ENABLE_STATS command (the kernel turns them off again when its fd closes, even if this process dies), or,
     * where a kernel refuses that command, through the sysctl kernel.bpf_stats_enabled, set back on close.
     *
     * @throws BpfException when the kernel refuses both (needs CAP_SYS_ADMIN), naming both answers
     */
    public static AutoCloseable enable() {
        int fd = LibBpf.enableStats(BPF_STATS_RUN_TIME);
        if (fd >= 0) return () -> LibBpf.closeFd(fd);
        try {
            String before = Files.readString(STATS_SYSCTL).strip();
            Files.writeString(STATS_SYSCTL, "1");
            return () -> Files.writeString(STATS_SYSCTL, before);
        } catch (IOException | SecurityException e) {
            throw new BpfException("bpf_enable_stats(BPF_STATS_RUN_TIME), and the sysctl " + STATS_SYSCTL + " could not be set"
                    + " either (" + e.getMessage() + ")", -fd);
        }
    }

    /**
     * The statistics of the loaded program with id {@code progId}.
     *
     * @throws BpfException when no such program is loaded (ENOENT) or the caller may not see it
     */
    public static Reading read(int progId) {
        int fd = LibBpf.progFdById(progId);
        if (fd < 0) throw new BpfException("bpf_prog_get_fd_by_id(" + progId + ")", -fd);
        try {
            return readFd(fd);
        } finally {
            LibBpf.closeFd(fd);
        }
    }

    /** The statistics of the program behind {@code progFd}. */
    public static Reading readFd(int progFd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = info(arena, progFd);
            return new Reading(info.get(ValueLayout.JAVA_LONG, RUN_TIME_NS_OFFSET), info.get(ValueLayout.JAVA_LONG, RUN_CNT_OFFSET));
        }
    }

    /** The kernel's id of the program behind {@code progFd} (what `bpftool prog show` and `ip link` print). */
    public static int programId(int progFd) {
        try (Arena arena = Arena.ofConfined()) {
            return info(arena, progFd).get(ValueLayout.JAVA_INT, ID_OFFSET);
        }
    }

    private static MemorySegment info(Arena arena, int progFd) {
        MemorySegment info = arena.allocate(INFO_SIZE, 8);
        MemorySegment len = arena.allocateFrom(ValueLayout.JAVA_INT, (int) INFO_SIZE);
        int rc = LibBpf.objGetInfo(progFd, info, len);
        if (rc != 0) throw new BpfException("bpf_obj_get_info_by_fd(program fd " + progFd + ")", rc);
        return info;
    }
}
