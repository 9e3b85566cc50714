package io.xaforward.testbed;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A gateway CPU budget that holds the same way for work in the kernel and in a process: a real-time thread
 * (SCHED_FIFO) pinned to the gateway's CPU takes {@code 1 - share} of every period by spinning, and sleeps for the
 * rest. While it spins, no ordinary thread runs on that CPU: neither the gateway ports' threaded-NAPI kernel threads
 * (where the XDP program runs, the kernel forwards or tunnels, and sockets are fed) nor a gateway process (relay,
 * AF_XDP). So every mode gets {@code share} of the CPU, whatever it does with it.
 *
 * <p>Why not a cgroup CPU quota: on this kernel (6.18, cgroup v1 {@code cpu} controller) a threaded-NAPI kernel
 * thread moved into a group with a 25% (and a 10%) quota kept running at 39% (23%) of the CPU while the group counted
 * almost every period as throttled; a user-space spinner in the same kind of group got exactly its 25%. CFS
 * bandwidth control now throttles a task when it returns to user space, which a kernel thread never does, so a quota
 * limits the relay but not the XDP or kernel gateway (docs/bench/README.md, "A gateway CPU budget").
 *
 * <p>Requirements: root (SCHED_FIFO), the gateway's packet work in threaded NAPI (as the testbed configures every
 * veth; softirq work that runs on interrupt exit is not held back by any thread), and shares of at least 5% (the
 * kernel keeps 5% of every second for ordinary threads anyway: RT throttling, or the fair server).
 */
public final class CpuBudget implements AutoCloseable {
    /** SCHED_FIFO priority of the duty-cycle thread: above every ordinary thread, below the kernel's own RT threads. */
    static final int PRIORITY = 50;
    private static final int SCHED_FIFO = 1;
    private static final long SET_BYTES = 128;
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle SETSCHEDULER = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("sched_setscheduler"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS), Linker.Option.captureCallState("errno"));
    private static final MethodHandle SETAFFINITY = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("sched_setaffinity"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), Linker.Option.captureCallState("errno"));

    private final int cpu;
    private final double share;
    private final long periodNs;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Throwable failure;
    private volatile long periods;
    private volatile long spunNs;
    private final long startNs;

    private CpuBudget(int cpu, double share, long periodNs) {
        this.cpu = cpu;
        this.share = share;
        this.periodNs = periodNs;
        CountDownLatch ready = new CountDownLatch(1);
        this.thread = Thread.ofPlatform().daemon().name("xaf-cpu-budget-" + cpu).unstarted(() -> loop(ready));
        this.startNs = System.nanoTime();
        thread.start();
        try {
            if (!ready.await(10, TimeUnit.SECONDS)) throw new IllegalStateException("the CPU budget thread did not start");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting the CPU budget", e);
        }
        if (failure != null) {
            close();
            throw new IllegalStateException(failure.getMessage(), failure);
        }
    }

    /**
     * Period of the duty cycle that every bench uses: 1 ms. The gateway's pause in each period ({@code 1 - share} of
     * it, 0.9 ms at 10%) must stay shorter than the time its ports' 256-slot veth rings take to fill at the offered
     * rate; with a 10 ms period the 9 ms pauses overflowed them, so the modes that forward from those rings (xdp,
     * kernel, tunnel) lost packets to the budget itself while a process gateway's socket buffers absorbed the pauses
     * (docs/bench/README.md). A real-time thread wakes within microseconds, a small part of a 1 ms period.
     */
    public static final long PERIOD_NS = 1_000_000L;

    /** {@link #start(int, double, long)} with the benches' period, {@link #PERIOD_NS}. */
    public static CpuBudget start(int cpu, double share) {
        return start(cpu, share, PERIOD_NS);
    }

    /**
     * Leaves {@code share} (0.05 to 1) of {@code cpu} to everything else, with the given period (see
     * {@link #PERIOD_NS}). Share 1 starts no thread.
     */
    public static CpuBudget start(int cpu, double share, long periodNs) {
        if (!(share >= 0.05 && share <= 1.0)) {
            throw new IllegalArgumentException(String.format(Locale.ROOT, "gateway CPU budget must be between 5%% and 100%%, was %.1f%%", share * 100));
        }
        if (periodNs < 1_000_000 || periodNs > 1_000_000_000) throw new IllegalArgumentException("budget period must be 1 ms to 1 s");
        if (cpu < 0 || cpu >= Runtime.getRuntime().availableProcessors()) {
            throw new IllegalArgumentException("CPU " + cpu + " does not exist (this machine has " + Runtime.getRuntime().availableProcessors() + ")");
        }
        return new CpuBudget(cpu, share, periodNs);
    }

    /** Parses "25%", "25" or "0.25" into a share; "100%" means no budget. */
    public static double parseShare(String text) {
        String t = text.trim();
        try {
            double v;
            if (t.endsWith("%")) v = Double.parseDouble(t.substring(0, t.length() - 1).trim()) / 100;
            else {
                v = Double.parseDouble(t);
                if (v > 1) v /= 100;
            }
            if (!(v >= 0.05 && v <= 1)) throw new IllegalArgumentException("gateway CPU budget '" + text + "' must be between 5% and 100%");
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("gateway CPU budget '" + text + "' is not a percentage like 25%");
        }
    }

    public double share() {
        return share;
    }

    public int cpu() {
        return cpu;
    }

    /** Share of the elapsed time the duty-cycle thread left to others so far (for reports). */
    public double leftSoFar() {
        long elapsed = System.nanoTime() - startNs;
        return elapsed <= 0 ? share : 1 - (double) spunNs / elapsed;
    }

    public long periods() {
        return periods;
    }

    private void loop(CountDownLatch ready) {
        try {
            if (share < 1.0) {
                setAffinity(cpu);
                setFifo(PRIORITY);
            }
        } catch (Throwable t) {
            failure = t;
            ready.countDown();
            return;
        }
        ready.countDown();
        if (share >= 1.0) return;
        long spin = Math.round(periodNs * (1 - share));
        long next = System.nanoTime();
        long spun = 0;
        while (running) {
            long spinEnd = next + spin;
            long now = System.nanoTime();
            long from = now;
            while (now < spinEnd) now = System.nanoTime();
            spun += Math.max(0, now - from);
            spunNs = spun;
            next += periodNs;
            periods++;
            long sleep = next - System.nanoTime();
            if (sleep > 0) LockSupport.parkNanos(sleep);
            else next = System.nanoTime(); // fell behind (descheduled): start a fresh period
        }
    }

    private static void setAffinity(int cpu) throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment set = arena.allocate(SET_BYTES, 8), cap = arena.allocate(CAPTURE);
            set.set(ValueLayout.JAVA_BYTE, cpu / 8, (byte) (1 << (cpu % 8)));
            int rc = (int) SETAFFINITY.invokeExact(cap, 0, SET_BYTES, set);
            if (rc < 0) throw new IllegalStateException("sched_setaffinity to CPU " + cpu + " failed, errno " + (int) ERRNO.get(cap, 0L));
        }
    }

    private static void setFifo(int priority) throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment param = arena.allocate(JAVA_INT), cap = arena.allocate(CAPTURE);
            param.set(JAVA_INT, 0, priority);
            int rc = (int) SETSCHEDULER.invokeExact(cap, 0, SCHED_FIFO, param);
            if (rc < 0) {
                int errno = (int) ERRNO.get(cap, 0L);
                throw new IllegalStateException("a gateway CPU budget needs a real-time thread (SCHED_FIFO): sched_setscheduler failed, errno "
                        + errno + (errno == 1 ? " (not permitted: run as root)" : ""));
            }
        }
    }

    @Override
    public void close() {
        running = false;
        LockSupport.unpark(thread);
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%.0f%% of CPU %d (a SCHED_FIFO thread takes the other %.0f%% of every %.0f ms)",
                share * 100, cpu, (1 - share) * 100, periodNs / 1e6);
    }
}
