package io.xaforward.dataplane;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The smallest AF_XDP socket the kernel accepts into an XSKMAP: UMEM registered, fill/completion/RX rings sized,
 * bound in copy mode to one queue. Rings are not mmapped: the test only needs the redirect to find a socket.
 */
final class XskSocket implements AutoCloseable {
    private static final int AF_XDP = 44, SOCK_RAW = 3, SOL_XDP = 283;
    private static final int XDP_RX_RING = 2, XDP_UMEM_REG = 4, XDP_UMEM_FILL_RING = 5, XDP_UMEM_COMPLETION_RING = 6;
    private static final int XDP_COPY = 2;
    private static final Linker L = Linker.nativeLinker();
    private static final Linker.Option ERRNO = Linker.Option.captureCallState("errno");
    private static final MethodHandle SOCKET = L.downcallHandle(L.defaultLookup().findOrThrow("socket"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT), ERRNO);
    private static final MethodHandle SETSOCKOPT = L.downcallHandle(L.defaultLookup().findOrThrow("setsockopt"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), ERRNO);
    private static final MethodHandle BIND = L.downcallHandle(L.defaultLookup().findOrThrow("bind"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), ERRNO);
    private static final MethodHandle CLOSE = L.downcallHandle(L.defaultLookup().findOrThrow("close"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    private final Arena arena = Arena.ofShared();
    final int fd;

    XskSocket(int ifindex, int queue) throws Throwable {
        MemorySegment state = arena.allocate(Linker.Option.captureStateLayout());
        fd = (int) SOCKET.invokeExact(state, AF_XDP, SOCK_RAW, 0);
        check(fd, "socket(AF_XDP)", state);
        try {
            MemorySegment umem = arena.allocate(16 * 2048, 4096);
            MemorySegment reg = arena.allocate(32, 8); // struct xdp_umem_reg
            reg.set(ValueLayout.JAVA_LONG, 0, umem.address());
            reg.set(ValueLayout.JAVA_LONG, 8, umem.byteSize());
            reg.set(ValueLayout.JAVA_INT, 16, 2048);
            check((int) SETSOCKOPT.invokeExact(state, fd, SOL_XDP, XDP_UMEM_REG, reg, 32), "XDP_UMEM_REG", state);
            MemorySegment size = arena.allocateFrom(JAVA_INT, 16);
            check((int) SETSOCKOPT.invokeExact(state, fd, SOL_XDP, XDP_UMEM_FILL_RING, size, 4), "XDP_UMEM_FILL_RING", state);
            check((int) SETSOCKOPT.invokeExact(state, fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, size, 4), "XDP_UMEM_COMPLETION_RING", state);
            check((int) SETSOCKOPT.invokeExact(state, fd, SOL_XDP, XDP_RX_RING, size, 4), "XDP_RX_RING", state);
            MemorySegment sxdp = arena.allocate(16, 4); // struct sockaddr_xdp
            sxdp.set(ValueLayout.JAVA_SHORT, 0, (short) AF_XDP);
            sxdp.set(ValueLayout.JAVA_SHORT, 2, (short) XDP_COPY);
            sxdp.set(ValueLayout.JAVA_INT, 4, ifindex);
            sxdp.set(ValueLayout.JAVA_INT, 8, queue);
            check((int) BIND.invokeExact(state, fd, sxdp, 16), "bind(AF_XDP, ifindex " + ifindex + ", queue " + queue + ")", state);
        } catch (Throwable t) {
            close();
            throw t;
        }
    }

    private static void check(int rc, String what, MemorySegment state) {
        if (rc < 0) {
            int errno = state.get(JAVA_INT, Linker.Option.captureStateLayout().byteOffset(
                    java.lang.foreign.MemoryLayout.PathElement.groupElement("errno")));
            throw new AssertionError(what + " failed: " + LibBpf.strerror(errno) + " (errno " + errno + ")");
        }
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
