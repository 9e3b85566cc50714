package io.xaforward.gateway;

import io.xaforward.dataplane.sys.Syscalls;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

/** sd_notify's datagram reaches a unix datagram socket that listens as systemd's does (a path, or an abstract name). */
class SdNotifyTest {
    /** A bound AF_UNIX datagram socket, as systemd's notify socket. */
    static final class Listener implements AutoCloseable {
        final int fd;
        final Arena arena = Arena.ofConfined();

        Listener(String name) {
            fd = Syscalls.socket(Syscalls.AF_UNIX, Syscalls.SOCK_DGRAM | Syscalls.SOCK_CLOEXEC, 0);
            assertTrue(fd >= 0, "socket");
            byte[] b = name.getBytes(StandardCharsets.UTF_8);
            MemorySegment addr = arena.allocate(110);
            addr.set(ValueLayout.JAVA_SHORT, 0, (short) Syscalls.AF_UNIX);
            MemorySegment.copy(b, 0, addr, ValueLayout.JAVA_BYTE, 2, b.length);
            boolean abs = b[0] == '@';
            if (abs) addr.set(ValueLayout.JAVA_BYTE, 2, (byte) 0);
            assertEquals(0, Syscalls.bind(fd, addr, 2 + b.length + (abs ? 0 : 1)), "bind " + name + ": " + Syscalls.strerror(Syscalls.errno()));
        }

        /** The next datagram, or null when none is queued. */
        String poll() {
            MemorySegment buf = arena.allocate(4096);
            long n = Syscalls.recv(fd, buf, 4096, Syscalls.MSG_DONTWAIT);
            if (n < 0) return null;
            return new String(buf.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        }

        @Override
        public void close() {
            Syscalls.close(fd);
            arena.close();
        }
    }

    @Test
    void readyReachesAPathSocket() throws Exception {
        Path dir = Files.createTempDirectory("xaf-notify");
        Path sock = dir.resolve("notify");
        try (Listener l = new Listener(sock.toString())) {
            assertNull(l.poll(), "nothing before the notification");
            SdNotify.send(sock.toString(), "READY=1\nSTATUS=forwarding");
            assertEquals("READY=1\nSTATUS=forwarding", l.poll());
        } finally {
            Files.deleteIfExists(sock);
            Files.delete(dir);
        }
    }

    @Test
    void readyReachesAnAbstractSocket() {
        String name = "@xaf-notify-test-" + ProcessHandle.current().pid();
        try (Listener l = new Listener(name)) {
            SdNotify.send(name, "READY=1");
            assertEquals("READY=1", l.poll());
        }
    }

    @Test
    void aSocketNobodyListensOnIsAClearError() throws Exception {
        Path dir = Files.createTempDirectory("xaf-notify");
        try {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> SdNotify.send(dir.resolve("none").toString(), "READY=1"));
            assertTrue(e.getMessage().contains("cannot notify systemd at NOTIFY_SOCKET " + dir.resolve("none")), e.getMessage());
            assertThrows(IllegalStateException.class, () -> SdNotify.send("relative/notify", "READY=1"));
        } finally {
            Files.delete(dir);
        }
    }
}
