package io.xaforward.gateway;

import io.xaforward.dataplane.sys.Syscalls;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;

/**
 * systemd's readiness protocol (sd_notify(3)) without libsystemd: one datagram such as {@code READY=1} sent to the
 * AF_UNIX datagram socket named by {@code $NOTIFY_SOCKET}, which systemd sets for a {@code Type=notify} service. A
 * name starting with '@' is an abstract socket. The JDK has no unix datagram channel, so the socket is made through
 * the FFM API; sending from the service's own process keeps {@code NotifyAccess=main} (the default) satisfied, which a
 * {@code systemd-notify} child process would not.
 */
public final class SdNotify {
    /** sizeof(struct sockaddr_un): sa_family_t sun_family; char sun_path[108]. */
    private static final int SOCKADDR_UN = 110;

    private SdNotify() {}

    /**
     * Sends {@code state} (e.g. "READY=1\nSTATUS=...") to {@code $NOTIFY_SOCKET}; does nothing when the variable is
     * unset (not started by systemd). Returns whether a datagram was sent.
     *
     * @throws IllegalStateException when the socket is named but the datagram cannot be sent
     */
    public static boolean notify(String state) {
        String socket = System.getenv("NOTIFY_SOCKET");
        if (socket == null || socket.isEmpty()) return false;
        send(socket, state);
        return true;
    }

    /** Sends one datagram holding {@code state} to the unix datagram socket {@code socket} (a path, or '@' + abstract name). */
    public static void send(String socket, String state) {
        byte[] name = socket.getBytes(StandardCharsets.UTF_8);
        boolean isAbstract = name[0] == '@';
        if (name.length > 107 || (!isAbstract && name[0] != '/')) {
            throw new IllegalStateException("NOTIFY_SOCKET '" + socket + "' is not an absolute path or an @abstract name of at most 107 bytes");
        }
        int fd = Syscalls.socket(Syscalls.AF_UNIX, Syscalls.SOCK_DGRAM | Syscalls.SOCK_CLOEXEC, 0);
        if (fd < 0) throw new IllegalStateException("socket(AF_UNIX, SOCK_DGRAM): " + Syscalls.strerror(Syscalls.errno()));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment addr = arena.allocate(SOCKADDR_UN);
            addr.set(ValueLayout.JAVA_SHORT, 0, (short) Syscalls.AF_UNIX);
            MemorySegment.copy(name, 0, addr, ValueLayout.JAVA_BYTE, 2, name.length);
            if (isAbstract) addr.set(ValueLayout.JAVA_BYTE, 2, (byte) 0); // abstract: a leading NUL, no terminator
            // A path's length includes its NUL; an abstract name is exactly its bytes.
            int len = 2 + name.length + (isAbstract ? 0 : 1);
            byte[] bytes = state.getBytes(StandardCharsets.UTF_8);
            MemorySegment buf = arena.allocate(Math.max(1, bytes.length));
            MemorySegment.copy(bytes, 0, buf, ValueLayout.JAVA_BYTE, 0, bytes.length);
            long sent = Syscalls.sendto(fd, buf, bytes.length, 0, addr, len);
            if (sent < 0) {
                throw new IllegalStateException("cannot notify systemd at NOTIFY_SOCKET " + socket + ": " + Syscalls.strerror(Syscalls.errno()));
            }
        } finally {
            Syscalls.close(fd);
        }
    }
}
