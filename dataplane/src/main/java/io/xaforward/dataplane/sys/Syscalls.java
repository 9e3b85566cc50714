package io.xaforward.dataplane.sys;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.Function;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The few libc calls the data plane needs beyond libbpf (sockets, namespaces), called through the FFM API.
 * Every call captures errno at the call site, because anything the JVM does afterwards may overwrite it.
 * Calls return the raw result; {@link #check} turns a negative one into a {@link SyscallException}.
 */
public final class Syscalls {
    public static final int AF_PACKET = 17;
    public static final int SOCK_RAW = 3;
    public static final int SOCK_NONBLOCK = 0x800;
    public static final int SOCK_CLOEXEC = 0x80000;
    public static final int SOL_SOCKET = 1;
    public static final int SO_RCVBUF = 8;
    public static final int SO_SNDBUF = 7;
    public static final int SO_RCVBUFFORCE = 33;
    public static final int SO_SNDBUFFORCE = 32;
    public static final int MSG_DONTWAIT = 0x40;
    public static final int O_RDONLY = 0;
    public static final int O_CLOEXEC = 0x80000;
    public static final int CLONE_NEWNET = 0x40000000;
    public static final short POLLIN = 0x1;
    public static final short POLLOUT = 0x4;
    public static final int AF_UNIX = 1;
    public static final int AF_INET = 2;
    public static final int AF_INET6 = 10;
    public static final int SOCK_DGRAM = 2;
    public static final int SOL_UDP = 17;
    /** UDP generic segmentation offload: one send carries equal-sized datagrams (cmsg or socket option). */
    public static final int UDP_SEGMENT = 103;
    /** UDP generic receive offload: one receive returns a train of datagrams and their size (cmsg). */
    public static final int UDP_GRO = 104;
    public static final int EAGAIN = 11;
    public static final int EINTR = 4;
    public static final int PROT_READ = 0x1;
    public static final int PROT_WRITE = 0x2;
    public static final int MAP_SHARED = 0x1;
    public static final int MAP_POPULATE = 0x8000;
    /** What mmap(2) returns on failure, as an address. */
    public static final long MAP_FAILED = -1L;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    private static final MethodHandle SOCKET = errnoCall("socket", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle BIND = errnoCall("bind", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle SENDTO = errnoCall("sendto",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle RECV = errnoCall("recv", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle SETSOCKOPT = errnoCall("setsockopt",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle CLOSE = errnoCall("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle EVENTFD = errnoCall("eventfd", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle WRITE = errnoCall("write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle READ = errnoCall("read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle POLL = errnoCall("poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle GETSOCKOPT = errnoCall("getsockopt",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle MMAP = errnoCall("mmap",
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MUNMAP = errnoCall("munmap", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle SENDMMSG = errnoCall("sendmmsg",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
    private static final MethodHandle RECVMMSG = errnoCall("recvmmsg",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle GETSOCKNAME = errnoCall("getsockname",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle SETNS = errnoCall("setns", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle OPEN = LINKER.downcallHandle(LIBC.find("open").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    private static final MethodHandle IOCTL = LINKER.downcallHandle(LIBC.find("ioctl").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    private static final MethodHandle IF_NAMETOINDEX = errnoCall("if_nametoindex", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle IF_NAMEINDEX = errnoCall("if_nameindex", FunctionDescriptor.of(ADDRESS));
    private static final MethodHandle IF_FREENAMEINDEX = LINKER.downcallHandle(LIBC.find("if_freenameindex").orElseThrow(),
            FunctionDescriptor.ofVoid(ADDRESS));
    private static final MethodHandle IF_INDEXTONAME = errnoCall("if_indextoname", FunctionDescriptor.of(ADDRESS, JAVA_INT, ADDRESS));
    private static final MethodHandle STRERROR = LINKER.downcallHandle(LIBC.find("strerror").orElseThrow(),
            FunctionDescriptor.of(ADDRESS, JAVA_INT));

    /** errno of the last call made on this thread through this class. */
    private static final ThreadLocal<MemorySegment> STATE = ThreadLocal.withInitial(() -> Arena.global().allocate(CAPTURE));

    private Syscalls() {}

    private static MethodHandle errnoCall(String name, FunctionDescriptor fd) {
        // captureCallState prepends the capture segment as the first argument of the handle.
        MemorySegment sym = LIBC.find(name).orElseThrow(() -> new UnsatisfiedLinkError("libc has no " + name));
        return LINKER.downcallHandle(sym, fd, CAPTURE_ERRNO);
    }

    /** errno captured by the most recent call on this thread. */
    public static int errno() {
        return (int) ERRNO.get(STATE.get(), 0L);
    }

    public static String strerror(int errno) {
        try {
            MemorySegment s = (MemorySegment) STRERROR.invokeExact(errno);
            return s.reinterpret(256).getString(0);
        } catch (Throwable t) {
            return "errno " + errno;
        }
    }

    /** Returns {@code result} when it is not negative; otherwise throws naming {@code what} and errno. */
    public static long check(long result, String what) {
        if (result < 0) {
            int e = errno();
            throw new SyscallException(what, e);
        }
        return result;
    }

    public static int socket(int domain, int type, int protocol) {
        try {
            return (int) SOCKET.invokeExact(STATE.get(), domain, type, protocol);
        } catch (Throwable t) { throw rethrow(t); }
    }

    public static int bind(int fd, MemorySegment addr, int len) {
        try {
            return (int) BIND.invokeExact(STATE.get(), fd, addr, len);
        } catch (Throwable t) { throw rethrow(t); }
    }

    public static long sendto(int fd, MemorySegment buf, long len, int flags, MemorySegment addr, int addrLen) {
        try {
            return (long) SENDTO.invokeExact(STATE.get(), fd, buf, len, flags, addr, addrLen);
        } catch (Throwable t) { throw rethrow(t); }
    }

    public static long recv(int fd, MemorySegment buf, long len, int flags) {
        try {
            return (long) RECV.invokeExact(STATE.get(), fd, buf, len, flags);
        } catch (Throwable t) { throw rethrow(t); }
    }

    public static int setsockopt(int fd, int level, int name, MemorySegment value, int len) {
        try {
            return (int) SETSOCKOPT.invokeExact(STATE.get(), fd, level, name, value, len);
        } catch (Throwable t) { throw rethrow(t); }
    }

    /** getsockopt(2); {@code len} holds a socklen_t (int) in/out: the buffer size, then the bytes written. */
    public static int getsockopt(int fd, int level, int name, MemorySegment value, MemorySegment len) {
        try {
            return (int) GETSOCKOPT.invokeExact(STATE.get(), fd, level, name, value, len);
        } catch (Throwable t) { throw rethrow(t); }
    }

    /** mmap(2) with no address hint; the result's {@code address()} is {@link #MAP_FAILED} on failure (see errno). */
    public static MemorySegment mmap(long length, int prot, int flags, int fd, long offset) {
        try {
            return (MemorySegment) MMAP.invokeExact(STATE.get(), MemorySegment.NULL, length, prot, flags, fd, offset);
        } catch (Throwable t) { throw rethrow(t); }
    }

    public static int munmap(MemorySegment address, long length) {
        try {
            return (int) MUNMAP.invokeExact(STATE.get(), address, length);
        } catch (Throwable t) { throw rethrow(t); }
    }

    public static int close(int fd) {
        try {
            return (int) CLOSE.invokeExact(STATE.get(), fd);
        } catch (Throwable t) { throw rethrow(t); }
    }

    public static final int EFD_NONBLOCK = 0x800;
    public static final int EFD_CLOEXEC = 0x80000;

    /** eventfd(2): a counter other threads write to wake a poll(2) on it. */
    public static int eventfd(int initialValue, int flags) {
        try {
            return (int) EVENTFD.invokeExact(STATE.get(), initialValue, flags);
        } catch (Throwable t) { throw rethrow(t); }
    }

    public static long write(int fd, MemorySegment buf, long len) {
        try {
            return (long) WRITE.invokeExact(STATE.get(), fd, buf, len);
        } catch (Throwable t) { throw rethrow(t); }
    }

    public static long read(int fd, MemorySegment buf, long len) {
        try {
            return (long) READ.invokeExact(STATE.get(), fd, buf, len);
        } catch (Throwable t) { throw rethrow(t); }
    }

    /** poll(2) on an array of {@code struct pollfd {int fd; short events; short revents;}}. */
    public static int poll(MemorySegment fds, long nfds, int timeoutMs) {
        try {
            return (int) POLL.invokeExact(STATE.get(), fds, nfds, timeoutMs);
        } catch (Throwable t) { throw rethrow(t); }
    }

    /** sendmmsg(2): sends up to {@code vlen} messages of an mmsghdr array; returns how many were sent, or -1. */
    public static int sendmmsg(int fd, MemorySegment msgvec, int vlen, int flags) {
        try {
            return (int) SENDMMSG.invokeExact(STATE.get(), fd, msgvec, vlen, flags);
        } catch (Throwable t) { throw rethrow(t); }
    }

    /** recvmmsg(2) without a timeout: receives up to {@code vlen} messages; returns how many, or -1. */
    public static int recvmmsg(int fd, MemorySegment msgvec, int vlen, int flags) {
        try {
            return (int) RECVMMSG.invokeExact(STATE.get(), fd, msgvec, vlen, flags, MemorySegment.NULL);
        } catch (Throwable t) { throw rethrow(t); }
    }

    /** getsockname(2); {@code len} holds a socklen_t in/out. */
    public static int getsockname(int fd, MemorySegment addr, MemorySegment len) {
        try {
            return (int) GETSOCKNAME.invokeExact(STATE.get(), fd, addr, len);
        } catch (Throwable t) { throw rethrow(t); }
    }

    public static int setns(int fd, int nstype) {
        try {
            return (int) SETNS.invokeExact(STATE.get(), fd, nstype);
        } catch (Throwable t) { throw rethrow(t); }
    }

    public static int open(String path, int flags) {
        try (Arena a = Arena.ofConfined()) {
            return (int) OPEN.invokeExact(STATE.get(), a.allocateFrom(path), flags, 0);
        } catch (Throwable t) { throw rethrow(t); }
    }

    /** The interface's index in the calling thread's network namespace; a clear error when it does not exist. */
    public static int ifNameToIndex(String ifname) {
        int idx;
        try (Arena a = Arena.ofConfined()) {
            idx = (int) IF_NAMETOINDEX.invokeExact(STATE.get(), a.allocateFrom(ifname));
        } catch (Throwable t) { throw rethrow(t); }
        if (idx == 0) {
            throw new SyscallException("interface '" + ifname + "' not found (if_nametoindex)", errno());
        }
        return idx;
    }

    private static final long SIOCGIFHWADDR = 0x8927;
    private static final long SIOCGIFMTU = 0x8921;
    private static final int IFNAMSIZ = 16;

    /** The name of interface {@code ifindex} in the calling thread's network namespace; a clear error when there is none. */
    public static String ifIndexToName(int ifindex) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment name = a.allocate(IFNAMSIZ);
            MemorySegment rc;
            try {
                rc = (MemorySegment) IF_INDEXTONAME.invokeExact(STATE.get(), ifindex, name);
            } catch (Throwable t) { throw rethrow(t); }
            if (rc.address() == 0) throw new SyscallException("no interface with ifindex " + ifindex + " (if_indextoname)", errno());
            return name.getString(0);
        }
    }

    /**
     * Every interface of the calling thread's network namespace, ifindex -> name, in ifindex order (if_nameindex(3):
     * asks the kernel over netlink, so it is right in a thread that entered another namespace, unlike /sys/class/net).
     */
    public static SortedMap<Integer, String> interfaces() {
        MemorySegment list;
        try {
            list = (MemorySegment) IF_NAMEINDEX.invokeExact(STATE.get());
        } catch (Throwable t) { throw rethrow(t); }
        if (list.address() == 0) throw new SyscallException("if_nameindex", errno());
        SortedMap<Integer, String> out = new TreeMap<>();
        try {
            // struct if_nameindex { unsigned int if_index; char *if_name; }: 16 bytes, ended by {0, NULL}
            MemorySegment all = list.reinterpret(Long.MAX_VALUE);
            for (long off = 0; ; off += 16) {
                int index = all.get(JAVA_INT, off);
                MemorySegment name = all.get(ADDRESS, off + 8);
                if (index == 0 && name.address() == 0) break;
                out.put(index, name.reinterpret(IFNAMSIZ).getString(0));
            }
        } finally {
            try {
                IF_FREENAMEINDEX.invokeExact(list);
            } catch (Throwable t) { throw rethrow(t); }
        }
        return out;
    }

    /**
     * The MTU of {@code ifname} in this process's network namespace (ioctl SIOCGIFMTU): the most bytes a frame may
     * carry after its link-layer header. Like {@link #hardwareAddress}, right under nsenter as under ip netns exec.
     */
    public static int mtu(String ifname) {
        // struct ifreq: char ifr_name[16]; int ifr_mtu; ...
        return interfaceRequest(ifname, SIOCGIFMTU, "SIOCGIFMTU", ifr -> ifr.get(JAVA_INT, 16));
    }

    /**
     * The hardware (MAC) address of {@code ifname} in this process's network namespace (ioctl SIOCGIFHWADDR): unlike
     * /sys/class/net, right whichever mounts the process sees (nsenter --net keeps the caller's /sys).
     */
    public static byte[] hardwareAddress(String ifname) {
        // struct ifreq: char ifr_name[16]; struct sockaddr ifr_hwaddr; ...: the MAC is the sockaddr's sa_data
        return interfaceRequest(ifname, SIOCGIFHWADDR, "SIOCGIFHWADDR", ifr -> {
            byte[] mac = new byte[6];
            MemorySegment.copy(ifr, ValueLayout.JAVA_BYTE, 16 + 2, mac, 0, 6);
            return mac;
        });
    }

    /** One ioctl {@code request} about interface {@code ifname} on a struct ifreq; {@code result} reads the answer. */
    private static <T> T interfaceRequest(String ifname, long request, String requestName,
                                          Function<MemorySegment, T> result) {
        if (ifname.length() >= IFNAMSIZ) throw new IllegalArgumentException("interface name '" + ifname + "' is too long");
        int fd = (int) check(socket(2 /* AF_INET */, 2 /* SOCK_DGRAM */ | SOCK_CLOEXEC, 0), "socket(AF_INET)");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ifr = a.allocate(40, 8); // sizeof(struct ifreq)
            ifr.setString(0, ifname);
            int rc;
            try {
                rc = (int) IOCTL.invokeExact(STATE.get(), fd, request, ifr);
            } catch (Throwable t) { throw rethrow(t); }
            check(rc, "ioctl(" + requestName + ", '" + ifname + "')");
            return result.apply(ifr);
        } finally {
            close(fd);
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }

    /** Size of {@code struct pollfd}. */
    public static final long POLLFD_SIZE = 8;
}
