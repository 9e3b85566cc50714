package io.xaforward.cli;

import io.xaforward.dataplane.sys.Syscalls;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/** A unix datagram socket bound at a path, listening as systemd's notify socket does. */
final class NotifySocket implements AutoCloseable {
    private final int fd;
    private final Arena arena = Arena.ofShared();

    NotifySocket(Path path) {
        fd = Syscalls.socket(Syscalls.AF_UNIX, Syscalls.SOCK_DGRAM | Syscalls.SOCK_CLOEXEC, 0);
        if (fd < 0) throw new IllegalStateException("socket: " + Syscalls.strerror(Syscalls.errno()));
        byte[] b = path.toString().getBytes(StandardCharsets.UTF_8);
        MemorySegment addr = arena.allocate(110);
        addr.set(ValueLayout.JAVA_SHORT, 0, (short) Syscalls.AF_UNIX);
        MemorySegment.copy(b, 0, addr, ValueLayout.JAVA_BYTE, 2, b.length);
        if (Syscalls.bind(fd, addr, 2 + b.length + 1) != 0) throw new IllegalStateException("bind " + path + ": " + Syscalls.strerror(Syscalls.errno()));
    }

    /** The next queued datagram, or null. */
    synchronized String poll() {
        MemorySegment buf = arena.allocate(4096);
        long n = Syscalls.recv(fd, buf, 4096, Syscalls.MSG_DONTWAIT);
        return n < 0 ? null : new String(buf.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        Syscalls.close(fd);
        arena.close();
    }
}
