package io.xaforward.dataplane;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Arrays;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** An AF_PACKET raw socket bound to one interface (test helper): send a whole Ethernet frame, receive one with a timeout. */
final class PacketSocket implements AutoCloseable {
    private static final int AF_PACKET = 17, SOCK_RAW = 3, ETH_P_ALL_BE = 0x0300, SOL_SOCKET = 1, SO_RCVTIMEO = 20;
    private static final Linker L = Linker.nativeLinker();
    private static final Linker.Option ERRNO = Linker.Option.captureCallState("errno");
    private static final MethodHandle SOCKET = h("socket", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle BIND = h("bind", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle SETSOCKOPT = h("setsockopt", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle SEND = h("send", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle RECV = h("recv", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle CLOSE = L.downcallHandle(L.defaultLookup().findOrThrow("close"), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final long ERRNO_OFFSET = Linker.Option.captureStateLayout().byteOffset(MemoryLayout.PathElement.groupElement("errno"));

    private static MethodHandle h(String name, FunctionDescriptor fd) {
        return L.downcallHandle(L.defaultLookup().findOrThrow(name), fd, ERRNO);
    }

    private final Arena arena = Arena.ofConfined();
    private final MemorySegment state = arena.allocate(Linker.Option.captureStateLayout());
    private final MemorySegment buf = arena.allocate(65536);
    private final int fd;

    /** Opens the socket in the calling thread's network namespace, bound to {@code ifindex}, receive timeout 200 ms. */
    PacketSocket(int ifindex) throws Throwable {
        fd = (int) SOCKET.invokeExact(state, AF_PACKET, SOCK_RAW, ETH_P_ALL_BE);
        check(fd, "socket(AF_PACKET)");
        MemorySegment sll = arena.allocate(20, 4); // struct sockaddr_ll
        sll.set(ValueLayout.JAVA_SHORT, 0, (short) AF_PACKET);
        sll.set(ValueLayout.JAVA_SHORT, 2, (short) ETH_P_ALL_BE);
        sll.set(ValueLayout.JAVA_INT, 4, ifindex);
        check((int) BIND.invokeExact(state, fd, sll, 20), "bind(AF_PACKET, ifindex " + ifindex + ")");
        MemorySegment tv = arena.allocate(16, 8);
        tv.set(JAVA_LONG, 0, 0);
        tv.set(JAVA_LONG, 8, 200_000);
        check((int) SETSOCKOPT.invokeExact(state, fd, SOL_SOCKET, SO_RCVTIMEO, tv, 16), "SO_RCVTIMEO");
    }

    private void check(long rc, String what) {
        if (rc < 0) {
            int errno = state.get(JAVA_INT, ERRNO_OFFSET);
            throw new AssertionError(what + " failed: " + LibBpf.strerror(errno) + " (errno " + errno + ")");
        }
    }

    void send(byte[] frame) throws Throwable {
        MemorySegment.copy(MemorySegment.ofArray(frame), 0, buf, 0, frame.length);
        long n = (long) SEND.invokeExact(state, fd, buf, (long) frame.length, 0);
        check(n, "send");
    }

    /** Next frame, or null after the 200 ms receive timeout. */
    byte[] receive() throws Throwable {
        long n = (long) RECV.invokeExact(state, fd, buf, buf.byteSize(), 0);
        if (n < 0) {
            int errno = state.get(JAVA_INT, ERRNO_OFFSET);
            if (errno == 11 /* EAGAIN: timeout */) return null;
            check(n, "recv");
        }
        return Arrays.copyOf(buf.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE), (int) n);
    }

    @Override
    public void close() {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw new AssertionError(t);
        } finally {
            arena.close();
        }
    }
}
