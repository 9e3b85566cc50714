package io.xaforward.dataplane.sys;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A raw AF_PACKET socket bound to one interface and one EtherType: sends and receives whole Ethernet frames.
 * This is how endpoints and the user-space relay reach a network that has no IP (the identifier-native form).
 * Buffers are the caller's; nothing is allocated per frame.
 */
public final class PacketSocket implements AutoCloseable {
    /** Every protocol: for sockets that must see all frames on the interface. */
    public static final int ETH_P_ALL = 0x0003;

    private static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final int SOCKADDR_LL_SIZE = 20;

    private final Arena arena = Arena.ofShared();
    private final int fd;
    private final int ifindex;
    private final String ifname;
    private final MemorySegment address;
    private final MemorySegment pollFd;

    /**
     * Opens a socket on {@code ifname} (in the calling thread's network namespace) for frames of {@code etherType}.
     */
    public PacketSocket(String ifname, int etherType) {
        this.ifname = ifname;
        this.ifindex = Syscalls.ifNameToIndex(ifname);
        int s = Syscalls.socket(Syscalls.AF_PACKET, Syscalls.SOCK_RAW | Syscalls.SOCK_CLOEXEC, Short.toUnsignedInt(htons(etherType)));
        if (s < 0) {
            int e = Syscalls.errno();
            arena.close();
            throw new SyscallException("socket(AF_PACKET) for '" + ifname + "'" + (e == 1 ? " needs root (CAP_NET_RAW)" : ""), e);
        }
        this.fd = s;
        // struct sockaddr_ll { u16 family; be16 protocol; s32 ifindex; u16 hatype; u8 pkttype; u8 halen; u8 addr[8]; }
        address = arena.allocate(SOCKADDR_LL_SIZE, 4);
        address.set(ValueLayout.JAVA_SHORT, 0, (short) Syscalls.AF_PACKET);
        address.set(BE_SHORT, 2, (short) etherType);
        address.set(ValueLayout.JAVA_INT, 4, ifindex);
        address.set(ValueLayout.JAVA_BYTE, 11, (byte) 6);
        if (Syscalls.bind(fd, address, SOCKADDR_LL_SIZE) < 0) {
            int e = Syscalls.errno();
            Syscalls.close(fd);
            arena.close();
            throw new SyscallException("bind(AF_PACKET, '" + ifname + "')", e);
        }
        MemorySegment size = arena.allocate(ValueLayout.JAVA_INT);
        size.set(ValueLayout.JAVA_INT, 0, 8 << 20);
        // Larger kernel buffers absorb bursts while a receiver thread waits for a CPU; best effort.
        Syscalls.setsockopt(fd, Syscalls.SOL_SOCKET, Syscalls.SO_RCVBUFFORCE, size, 4);
        Syscalls.setsockopt(fd, Syscalls.SOL_SOCKET, Syscalls.SO_SNDBUFFORCE, size, 4);
        pollFd = arena.allocate(Syscalls.POLLFD_SIZE, 4);
        pollFd.set(ValueLayout.JAVA_INT, 0, fd);
        pollFd.set(ValueLayout.JAVA_SHORT, 4, Syscalls.POLLIN);
    }

    private static short htons(int v) {
        return Short.reverseBytes((short) v);
    }

    public int ifindex() { return ifindex; }
    public String ifname() { return ifname; }

    /** Sends {@code length} bytes of {@code frame} (a complete Ethernet frame) out of the interface. */
    public void send(MemorySegment frame, int length) {
        while (true) {
            long n = Syscalls.sendto(fd, frame, length, 0, address, SOCKADDR_LL_SIZE);
            if (n >= 0) return;
            int e = Syscalls.errno();
            if (e == Syscalls.EINTR) continue;
            if (e == 105 /* ENOBUFS: the device queue is full; wait and retry */) {
                Thread.onSpinWait();
                continue;
            }
            throw new SyscallException("sendto(AF_PACKET, '" + ifname + "', " + length + " bytes)", e);
        }
    }

    /**
     * Receives one frame into {@code buffer}. Returns its length, or -1 when nothing arrived within
     * {@code timeoutMs} (0 = do not wait).
     */
    public int receive(MemorySegment buffer, int timeoutMs) {
        while (true) {
            long n = Syscalls.recv(fd, buffer, buffer.byteSize(), Syscalls.MSG_DONTWAIT);
            if (n >= 0) return (int) n;
            int e = Syscalls.errno();
            if (e == Syscalls.EINTR) continue;
            if (e != Syscalls.EAGAIN) throw new SyscallException("recv(AF_PACKET, '" + ifname + "')", e);
            if (timeoutMs <= 0) return -1;
            int ready = Syscalls.poll(pollFd, 1, timeoutMs);
            if (ready == 0) return -1;
            if (ready < 0 && Syscalls.errno() != Syscalls.EINTR) {
                throw new SyscallException("poll(AF_PACKET, '" + ifname + "')", Syscalls.errno());
            }
            timeoutMs = 0;
        }
    }

    @Override
    public void close() {
        Syscalls.close(fd);
        arena.close();
    }
}
