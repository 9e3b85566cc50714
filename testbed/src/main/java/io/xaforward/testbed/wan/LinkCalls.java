package io.xaforward.testbed.wan;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The few libc calls of the delay line's hot path, with buffers passed as raw addresses ({@code long}) so that a
 * frame's place in the ring needs no {@link MemorySegment} slice per call: the loop allocates nothing per frame. On
 * x86-64 (the only platform the testbed runs on) a pointer and a {@code long} travel in the same register. Not
 * thread-safe: errno is captured into one segment, read right after the call by the one thread that owns this.
 */
final class LinkCalls {
    static final int SOL_PACKET = 263;
    static final int PACKET_STATISTICS = 6;
    static final int PACKET_IGNORE_OUTGOING = 23;
    static final int MSG_DONTWAIT = 0x40;
    static final int MSG_TRUNC = 0x20;
    static final int EAGAIN = 11, EINTR = 4, ENOBUFS = 105;
    static final int PR_SET_TIMERSLACK = 29;
    static final int SO_TIMESTAMPNS = 35, SCM_TIMESTAMPNS = 35;
    static final int CLOCK_REALTIME = 0;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    private static final MethodHandle RECV = call("recv", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
    private static final MethodHandle SENDTO = call("sendto",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle RECVMSG = call("recvmsg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle CLOCK_GETTIME = call("clock_gettime", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle PPOLL = call("ppoll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS));
    private static final MethodHandle PRCTL = LINKER.downcallHandle(LIBC.find("prctl").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG), CAPTURE_ERRNO, Linker.Option.firstVariadicArg(1));

    private final MemorySegment state = Arena.global().allocate(CAPTURE);

    private static MethodHandle call(String name, FunctionDescriptor fd) {
        return LINKER.downcallHandle(LIBC.find(name).orElseThrow(() -> new UnsatisfiedLinkError("libc has no " + name)), fd, CAPTURE_ERRNO);
    }

    /** errno of the last call made through this instance. */
    int errno() {
        return (int) ERRNO.get(state, 0L);
    }

    long recv(int fd, long address, long length, int flags) {
        try {
            return (long) RECV.invokeExact(state, fd, address, length, flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    long sendto(int fd, long address, long length, int flags, MemorySegment to, int toLength) {
        try {
            return (long) SENDTO.invokeExact(state, fd, address, length, flags, to, toLength);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** recvmsg(2) into a prepared {@code struct msghdr}. */
    long recvmsg(int fd, MemorySegment message, int flags) {
        try {
            return (long) RECVMSG.invokeExact(state, fd, message, flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** clock_gettime(2) into a {@code struct timespec}. */
    int clockGettime(int clock, MemorySegment timespec) {
        try {
            return (int) CLOCK_GETTIME.invokeExact(state, clock, timespec);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** ppoll(2) with a {@code struct timespec} timeout (nanosecond resolution, unlike poll's milliseconds). */
    int ppoll(MemorySegment fds, long count, MemorySegment timespec) {
        try {
            return (int) PPOLL.invokeExact(state, fds, count, timespec, MemorySegment.NULL);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** prctl(2) with one argument. */
    int prctl(int option, long argument) {
        try {
            return (int) PRCTL.invokeExact(state, option, argument);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }
}
