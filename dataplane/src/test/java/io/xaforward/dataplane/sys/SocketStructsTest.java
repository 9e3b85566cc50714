package io.xaforward.dataplane.sys;

import io.xaforward.dataplane.Sh;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The libc structures the UDP port hands to sendmmsg/recvmmsg, as the flyweights lay them out, against the C
 * headers of this machine: a probe compiled with gcc prints every offset and size the Java side assumes.
 */
class SocketStructsTest {
    private static final Map<String, Long> probe = new HashMap<>();

    @BeforeAll
    static void compileAndRunProbe(@TempDir Path dir) throws IOException {
        String c = """
                #define _GNU_SOURCE
                #include <stdio.h>
                #include <stddef.h>
                #include <sys/socket.h>
                #include <sys/uio.h>
                #include <netinet/in.h>
                #define P(name, value) printf("%s %zu\\n", name, (size_t)(value));
                int main(void) {
                  P("msg_name", offsetof(struct msghdr, msg_name)) P("msg_namelen", offsetof(struct msghdr, msg_namelen))
                  P("msg_iov", offsetof(struct msghdr, msg_iov)) P("msg_iovlen", offsetof(struct msghdr, msg_iovlen))
                  P("msg_control", offsetof(struct msghdr, msg_control))
                  P("msg_controllen", offsetof(struct msghdr, msg_controllen))
                  P("msg_len", offsetof(struct mmsghdr, msg_len)) P("mmsghdr", sizeof(struct mmsghdr))
                  P("iov_base", offsetof(struct iovec, iov_base)) P("iov_len", offsetof(struct iovec, iov_len))
                  P("iovec", sizeof(struct iovec))
                  P("cmsg_len", offsetof(struct cmsghdr, cmsg_len)) P("cmsg_level", offsetof(struct cmsghdr, cmsg_level))
                  P("cmsg_type", offsetof(struct cmsghdr, cmsg_type)) P("cmsg_data", CMSG_LEN(0))
                  P("cmsg_space_int", CMSG_SPACE(sizeof(int)))
                  P("sin_family", offsetof(struct sockaddr_in, sin_family)) P("sin_port", offsetof(struct sockaddr_in, sin_port))
                  P("sin_addr", offsetof(struct sockaddr_in, sin_addr)) P("sockaddr_in", sizeof(struct sockaddr_in))
                  P("sin6_port", offsetof(struct sockaddr_in6, sin6_port)) P("sin6_addr", offsetof(struct sockaddr_in6, sin6_addr))
                  P("sin6_scope_id", offsetof(struct sockaddr_in6, sin6_scope_id)) P("sockaddr_in6", sizeof(struct sockaddr_in6))
                  return 0;
                }
                """;
        Path src = dir.resolve("probe.c");
        Path exe = dir.resolve("probe");
        Files.writeString(src, c);
        Sh.run("gcc", "-Wall", "-Werror", "-o", exe.toString(), src.toString());
        for (String line : Sh.run(exe.toString()).split("\n")) {
            String[] kv = line.trim().split(" ");
            probe.put(kv[0], Long.parseLong(kv[1]));
        }
    }

    private static long c(String key) {
        Long v = probe.get(key);
        assertNotNull(v, "probe did not print " + key);
        return v;
    }

    @Test
    void messageVectorMatchesMmsghdrAndIovec() {
        assertEquals(c("msg_name"), MessageVector.MSG_NAME);
        assertEquals(c("msg_namelen"), MessageVector.MSG_NAMELEN);
        assertEquals(c("msg_iov"), MessageVector.MSG_IOV);
        assertEquals(c("msg_iovlen"), MessageVector.MSG_IOVLEN);
        assertEquals(c("msg_control"), MessageVector.MSG_CONTROL);
        assertEquals(c("msg_controllen"), MessageVector.MSG_CONTROLLEN);
        assertEquals(c("msg_len"), MessageVector.MMSG_LEN);
        assertEquals(c("mmsghdr"), MessageVector.MMSGHDR_SIZE);
        assertEquals(c("iov_base"), MessageVector.IOV_BASE);
        assertEquals(c("iov_len"), MessageVector.IOV_LEN);
        assertEquals(c("iovec"), MessageVector.IOVEC_SIZE);
    }

    @Test
    void udpControlMatchesCmsghdr() {
        assertEquals(c("cmsg_len"), UdpControl.CMSG_LEN);
        assertEquals(c("cmsg_level"), UdpControl.CMSG_LEVEL);
        assertEquals(c("cmsg_type"), UdpControl.CMSG_TYPE);
        assertEquals(c("cmsg_data"), UdpControl.CMSG_DATA);
        assertEquals(c("cmsg_space_int"), UdpControl.SPACE);
    }

    @Test
    void inetSockaddrMatchesSockaddrInAndIn6() {
        assertEquals(c("sin_family"), InetSockaddr.FAMILY);
        assertEquals(c("sin_port"), InetSockaddr.PORT);
        assertEquals(c("sin_addr"), InetSockaddr.IN_ADDR);
        assertEquals(c("sockaddr_in"), InetSockaddr.IN_LENGTH);
        assertEquals(c("sin6_port"), InetSockaddr.PORT);
        assertEquals(c("sin6_addr"), InetSockaddr.IN6_ADDR);
        assertEquals(c("sin6_scope_id"), InetSockaddr.IN6_SCOPE_ID);
        assertEquals(c("sockaddr_in6"), InetSockaddr.IN6_LENGTH);
    }

    @Test
    void sockaddrsRoundTripAndCompareInMappedForm() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(InetSockaddr.SPACE, 8);
            InetSocketAddress v4 = new InetSocketAddress(InetAddress.getByName("10.1.2.3"), 9450);
            assertEquals(InetSockaddr.IN_LENGTH, InetSockaddr.write(out, Syscalls.AF_INET, v4));
            assertEquals(v4, InetSockaddr.read(out));
            assertEquals(9450, InetSockaddr.port(out, 0));
            assertEquals(0, InetSockaddr.mappedHigh(out, 0));
            assertEquals(0xFFFF_0A01_0203L, InetSockaddr.mappedLow(out, 0));
            // the same IPv4 address on an IPv6 socket is written IPv4-mapped and compares equal
            assertEquals(InetSockaddr.IN6_LENGTH, InetSockaddr.write(out, Syscalls.AF_INET6, v4));
            assertEquals(0, InetSockaddr.mappedHigh(out, 0));
            assertEquals(0xFFFF_0A01_0203L, InetSockaddr.mappedLow(out, 0));
            InetSocketAddress v6 = new InetSocketAddress(InetAddress.getByName("fd00::1:2"), 7);
            InetSockaddr.write(out, Syscalls.AF_INET6, v6);
            assertEquals(v6, InetSockaddr.read(out));
            assertEquals(0xFD00_0000_0000_0000L, InetSockaddr.mappedHigh(out, 0));
            assertEquals(0x0000_0000_0001_0002L, InetSockaddr.mappedLow(out, 0));
            assertThrows(IllegalArgumentException.class, () -> InetSockaddr.write(out, Syscalls.AF_INET, v6));
        }
    }

    @Test
    void groSegmentSizeIsReadOnlyFromAUdpGroMessage() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment control = arena.allocate(UdpControl.SPACE, 8);
            UdpControl.prepareSegment(control, 0);
            UdpControl.segmentSize(control, 0, 1448);
            assertEquals(1448, control.get(ValueLayout.JAVA_SHORT, UdpControl.CMSG_DATA));
            assertEquals(0, UdpControl.groSegmentSize(control, 0, UdpControl.SPACE), "a UDP_SEGMENT message is not GRO");
            control.set(ValueLayout.JAVA_INT, UdpControl.CMSG_TYPE, Syscalls.UDP_GRO);
            control.set(ValueLayout.JAVA_INT, UdpControl.CMSG_DATA, 1400);
            assertEquals(1400, UdpControl.groSegmentSize(control, 0, UdpControl.SPACE));
            assertEquals(0, UdpControl.groSegmentSize(control, 0, 0), "no control data was written");
        }
    }
}
