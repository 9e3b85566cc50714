package io.xaforward.dataplane.sys;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Lets one thread sleep in poll(2) until a file descriptor is ready, and any other thread end that sleep: an eventfd
 * is polled beside the descriptor and {@link #wakeup()} adds to it (as {@code Selector.wakeup} does for NIO). An event
 * loop that sleeps here instead of spinning leaves its CPU to the work on the same core. Allocation-free after
 * construction; {@link #await} is for one thread, {@link #wakeup()} for any.
 */
public final class FdWaiter implements AutoCloseable {
    /** The 8-byte value 1 that {@link #wakeup()} adds to the eventfd; read-only, shared by all instances. */
    private static final MemorySegment ONE = Arena.global().allocateFrom(ValueLayout.JAVA_LONG, 1L).asReadOnly();

    private final Arena arena = Arena.ofShared();
    private final MemorySegment pollFds;
    private final MemorySegment drained;
    private final int wakeFd;
    private final Object lock = new Object();
    private boolean closed;

    /** Waits on {@code fd}, which the caller keeps owning (closing this waiter does not close it). */
    public FdWaiter(int fd) {
        wakeFd = Syscalls.eventfd(0, Syscalls.EFD_NONBLOCK | Syscalls.EFD_CLOEXEC);
        if (wakeFd < 0) {
            int e = Syscalls.errno();
            arena.close();
            throw new SyscallException("eventfd", e);
        }
        pollFds = arena.allocate(3 * Syscalls.POLLFD_SIZE, 4);
        pollFds.set(ValueLayout.JAVA_INT, 0, fd);
        pollFds.set(ValueLayout.JAVA_INT, Syscalls.POLLFD_SIZE, wakeFd);
        pollFds.set(ValueLayout.JAVA_SHORT, Syscalls.POLLFD_SIZE + 4, Syscalls.POLLIN);
        pollFds.set(ValueLayout.JAVA_SHORT, 2 * Syscalls.POLLFD_SIZE + 4, Syscalls.POLLOUT);
        drained = arena.allocate(ValueLayout.JAVA_LONG);
    }

    /**
     * Sleeps until {@code fd} reports one of {@code events} (POLLIN, POLLOUT), {@link #wakeup()} is called, or
     * {@code timeoutMs} pass; returns the descriptor's revents (0 on timeout, wake-up or EINTR).
     */
    public int await(short events, int timeoutMs) {
        return await(events, timeoutMs, -1);
    }

    /**
     * {@link #await(short, int)}, and also wakes when {@code writableFd} (another descriptor of the caller's, or -1
     * for none) has room to send: a port that sends from several sockets waits for the one its data is queued on.
     */
    public int await(short events, int timeoutMs, int writableFd) {
        pollFds.set(ValueLayout.JAVA_SHORT, 4, events);
        pollFds.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
        pollFds.set(ValueLayout.JAVA_SHORT, Syscalls.POLLFD_SIZE + 6, (short) 0);
        pollFds.set(ValueLayout.JAVA_INT, 2 * Syscalls.POLLFD_SIZE, writableFd);
        pollFds.set(ValueLayout.JAVA_SHORT, 2 * Syscalls.POLLFD_SIZE + 6, (short) 0);
        int r = Syscalls.poll(pollFds, writableFd < 0 ? 2 : 3, timeoutMs);
        if (r < 0) {
            int e = Syscalls.errno();
            if (e == Syscalls.EINTR) return 0;
            throw new SyscallException("poll", e);
        }
        if ((pollFds.get(ValueLayout.JAVA_SHORT, Syscalls.POLLFD_SIZE + 6) & Syscalls.POLLIN) != 0) {
            Syscalls.read(wakeFd, drained, 8); // reset the counter: the wake-up has done its job
        }
        return pollFds.get(ValueLayout.JAVA_SHORT, 6);
    }

    /** Ends an {@link #await} in progress, or makes the next one return at once. Any thread; no-op once closed. */
    public void wakeup() {
        synchronized (lock) {
            if (!closed) Syscalls.write(wakeFd, ONE, 8);
        }
    }

    @Override
    public void close() {
        synchronized (lock) { // no wakeup() may write to the eventfd's number once it is closed and reused
            if (closed) return;
            closed = true;
            Syscalls.close(wakeFd);
        }
        arena.close();
    }
}
