package io.xaforward.bench;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * CPU pinning for the forwarding bench, through sched_setaffinity(2) called via FFM. On a two-CPU machine the live
 * generator (a syscall that runs the XDP program and transmits inside the kernel), the gateway port's threaded-NAPI
 * kthread and the receiver otherwise share whichever CPU the scheduler picks, and a sample then measures who won the
 * CPU rather than the gateway. The bench pins senders and receivers to one CPU and the gateway to the other (the
 * field notes' recipe) and restores every thread's previous mask after the sample.
 */
public final class CpuAffinity {
    private static final long SET_BYTES = 128; // cpu_set_t: 1024 CPUs
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle SET = handle("sched_setaffinity");
    private static final MethodHandle GET = handle("sched_getaffinity");
    private static final int ESRCH = 3;

    private CpuAffinity() {}

    private static MethodHandle handle(String name) {
        return LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow(name),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), Linker.Option.captureCallState("errno"));
    }

    /** CPUs this machine has online (the pinning needs at least two). */
    public static int cpuCount() {
        return Runtime.getRuntime().availableProcessors();
    }

    /** Pins the calling OS thread to {@code cpu}. */
    public static void pinCurrentThread(int cpu) {
        set(0, maskOf(cpu));
    }

    /**
     * Pins every thread in {@code tidsByCpu} (thread id to CPU) and returns the previous masks, to hand to
     * {@link #restore}. Threads that have ended are skipped.
     */
    public static Map<Long, byte[]> pin(Map<Long, Integer> tidsByCpu) {
        Map<Long, byte[]> previous = new LinkedHashMap<>();
        try {
            for (Map.Entry<Long, Integer> e : tidsByCpu.entrySet()) {
                byte[] old = get(e.getKey());
                if (old == null) continue;
                if (set(e.getKey(), maskOf(e.getValue()))) previous.put(e.getKey(), old);
            }
        } catch (RuntimeException ex) {
            restore(previous);
            throw ex;
        }
        return previous;
    }

    /** Puts back the masks {@link #pin} returned; threads that have ended are skipped. */
    public static void restore(Map<Long, byte[]> previous) {
        for (Map.Entry<Long, byte[]> e : previous.entrySet()) set(e.getKey(), e.getValue());
    }

    /** Every thread id of process {@code pid} ({@code /proc/PID/task}); empty if it has ended. */
    public static List<Long> threadsOf(long pid) {
        List<Long> out = new ArrayList<>();
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path t : tasks) out.add(Long.parseLong(t.getFileName().toString()));
        } catch (IOException e) {
            return out;
        }
        return out;
    }

    static byte[] maskOf(int cpu) {
        if (cpu < 0 || cpu >= SET_BYTES * 8) throw new IllegalArgumentException("cpu " + cpu + " out of range");
        byte[] m = new byte[(int) SET_BYTES];
        m[cpu / 8] = (byte) (1 << (cpu % 8));
        return m;
    }

    /** The mask of thread {@code tid} (0 = the caller), or null if it does not exist. */
    static byte[] get(long tid) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment set = arena.allocate(SET_BYTES, 8), cap = arena.allocate(CAPTURE);
            int rc = (int) GET.invokeExact(cap, (int) tid, SET_BYTES, set);
            if (rc < 0) {
                int errno = (int) ERRNO.get(cap, 0L);
                if (errno == ESRCH) return null;
                throw new IllegalStateException("sched_getaffinity(" + tid + ") failed, errno " + errno);
            }
            return set.toArray(JAVA_BYTE);
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Sets the mask of thread {@code tid}; false if the thread no longer exists. */
    static boolean set(long tid, byte[] mask) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment set = arena.allocate(SET_BYTES, 8), cap = arena.allocate(CAPTURE);
            MemorySegment.copy(MemorySegment.ofArray(mask), 0, set, 0, SET_BYTES);
            int rc = (int) SET.invokeExact(cap, (int) tid, SET_BYTES, set);
            if (rc < 0) {
                int errno = (int) ERRNO.get(cap, 0L);
                if (errno == ESRCH) return false;
                throw new IllegalStateException("sched_setaffinity(" + tid + ") failed, errno " + errno);
            }
            return true;
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
