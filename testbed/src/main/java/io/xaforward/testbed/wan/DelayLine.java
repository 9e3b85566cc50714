package io.xaforward.testbed.wan;

import io.xaforward.dataplane.sys.SyscallException;
import io.xaforward.dataplane.sys.Syscalls;
import io.xaforward.testbed.WanImpairment;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The WAN's delay line: takes every frame that arrives at one of two ports (raw AF_PACKET sockets, all protocols),
 * holds it for the WAN's one-way delay, applies loss and reordering, and sends it out of the other port. The sends
 * pass the port's qdisc (the WAN's HTB and pfifo), so rate and queue stay the kernel's.
 *
 * <p>Each direction keeps its frames in a byte ring, in arrival order, each with the time it is due: the delay is
 * the same for every frame apart from jitter, and a frame is never due before the one received before it, so the
 * ring is also sorted by due time and the next frame to send is always at its head. Frames are received straight
 * into the ring and sent straight from it; nothing is allocated per frame. One thread serves both directions and
 * sleeps in ppoll(2) until a frame arrives or shortly before the next one is due (timer slack set to 1 µs; it learns
 * how late its wake-ups come and wakes that much earlier, then loops until the due time).
 *
 * <p>Frames longer than {@code mtu + 18} (a VLAN-tagged full frame) cannot be sent back out by a packet socket: they
 * are counted as oversize and dropped. The testbed keeps GRO off on the WAN ports and segmentation offloads off on
 * the devices that feed them, so frames arrive MTU-sized.
 */
public final class DelayLine implements AutoCloseable {
    /** Per entry: due time (8 bytes), frame length (4), padding (4), then the frame; entries are 16-byte aligned. */
    private static final int ENTRY_HEADER = 16;
    private static final int RECEIVE_BATCH = 64;
    private static final long IDLE_WAIT_NANOS = 100_000_000L;
    /** How long to wait before retrying when the socket's send buffer is full (frames stay queued meanwhile). */
    private static final long SEND_RETRY_NANOS = 50_000L;
    private static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final int SOCKADDR_LL_SIZE = 20;
    private static final int ETH_P_ALL = 0x0003;

    private final Arena arena = Arena.ofShared();
    private final LinkCalls calls = new LinkCalls();
    private final WanImpairment impairment;
    private final SplittableRandom random;
    private final int maxFrame;
    private final Direction towardsDc;
    private final Direction towardsGateway;
    private final MemorySegment pollFds;
    private final MemorySegment timeout;
    private final MemorySegment statistics;
    /** recvmsg's {@code struct msghdr} (one iovec, a control buffer for the timestamp), reused for every frame. */
    private final MemorySegment message, iovec, control, clock;
    private static final int MSGHDR_SIZE = 56, MSG_IOV = 16, MSG_IOVLEN = 24, MSG_CONTROL = 32, MSG_CONTROLLEN = 40;
    private static final int CONTROL_SIZE = 64;
    /** CLOCK_REALTIME minus System.nanoTime(), refreshed every {@value #CLOCK_REFRESH_NANOS} ns. */
    private long realtimeOffset;
    private long offsetTakenAt = Long.MIN_VALUE / 2;
    private static final long CLOCK_REFRESH_NANOS = 100_000_000L;
    private final MemorySegment statisticsLength;
    private volatile boolean running = true;

    /**
     * Opens the two ports (in the calling thread's network namespace) with a ring of {@code ringBytes} per direction.
     *
     * @param gatewayPort the port facing the gateway
     * @param dcPort      the port facing the data center
     * @param mtu         the WAN's MTU; longer frames are dropped as oversize
     * @param seed        seed of the loss, jitter and reorder draws
     */
    public DelayLine(String gatewayPort, String dcPort, int mtu, WanImpairment impairment, long ringBytes, long seed) {
        this.impairment = impairment;
        this.random = new SplittableRandom(seed);
        this.maxFrame = mtu + 18;
        long entryMax = align(ENTRY_HEADER + maxFrame + 1L);
        if (ringBytes < 4 * entryMax) throw new IllegalArgumentException("ring of " + ringBytes + " bytes is too small");
        int gatewayFd = -1, dcFd = -1;
        try {
            gatewayFd = open(gatewayPort);
            dcFd = open(dcPort);
            towardsDc = new Direction("to-dc", gatewayFd, dcFd, address(Syscalls.ifNameToIndex(dcPort)), ringBytes, entryMax);
            towardsGateway = new Direction("to-gateway", dcFd, gatewayFd, address(Syscalls.ifNameToIndex(gatewayPort)), ringBytes, entryMax);
        } catch (RuntimeException e) {
            if (gatewayFd >= 0) Syscalls.close(gatewayFd);
            if (dcFd >= 0) Syscalls.close(dcFd);
            arena.close();
            throw e;
        }
        pollFds = arena.allocate(2 * Syscalls.POLLFD_SIZE, 8);
        pollFds.set(ValueLayout.JAVA_INT, 0, gatewayFd);
        pollFds.set(ValueLayout.JAVA_SHORT, 4, Syscalls.POLLIN);
        pollFds.set(ValueLayout.JAVA_INT, Syscalls.POLLFD_SIZE, dcFd);
        pollFds.set(ValueLayout.JAVA_SHORT, Syscalls.POLLFD_SIZE + 4, Syscalls.POLLIN);
        timeout = arena.allocate(16, 8);
        message = arena.allocate(MSGHDR_SIZE, 8);
        iovec = arena.allocate(16, 8);
        control = arena.allocate(CONTROL_SIZE, 8);
        clock = arena.allocate(16, 8);
        message.set(ValueLayout.ADDRESS, MSG_IOV, iovec);
        message.set(ValueLayout.JAVA_LONG, MSG_IOVLEN, 1);
        message.set(ValueLayout.ADDRESS, MSG_CONTROL, control);
        statistics = arena.allocate(8, 4);
        statisticsLength = arena.allocate(4, 4);
        // The default 50 µs slack would add up to 50 µs to every wake-up; 1 µs keeps the delay sub-millisecond exact.
        calls.prctl(LinkCalls.PR_SET_TIMERSLACK, 1000);
    }

    private static long align(long n) {
        return (n + 15) & ~15L;
    }

    private int open(String port) {
        // Protocol 0 at socket(): nothing is received before bind names the one port (and then every protocol).
        int fd = Syscalls.socket(Syscalls.AF_PACKET, Syscalls.SOCK_RAW | Syscalls.SOCK_CLOEXEC, 0);
        if (fd < 0) throw new SyscallException("socket(AF_PACKET) for '" + port + "'", Syscalls.errno());
        try {
            MemorySegment one = arena.allocateFrom(ValueLayout.JAVA_INT, 1);
            // Our own sends out of this port must not come back in as arrivals.
            if (Syscalls.setsockopt(fd, LinkCalls.SOL_PACKET, LinkCalls.PACKET_IGNORE_OUTGOING, one, 4) < 0)
                throw new SyscallException("setsockopt(PACKET_IGNORE_OUTGOING) on '" + port + "'", Syscalls.errno());
            // The kernel's arrival time of each frame: the delay counts from there, not from when this thread got to it.
            if (Syscalls.setsockopt(fd, Syscalls.SOL_SOCKET, LinkCalls.SO_TIMESTAMPNS, one, 4) < 0)
                throw new SyscallException("setsockopt(SO_TIMESTAMPNS) on '" + port + "'", Syscalls.errno());
            MemorySegment size = arena.allocateFrom(ValueLayout.JAVA_INT, 32 << 20);
            // Room for a burst that arrives while this thread waits for a CPU; beyond it the kernel counts drops.
            Syscalls.setsockopt(fd, Syscalls.SOL_SOCKET, Syscalls.SO_RCVBUFFORCE, size, 4);
            Syscalls.setsockopt(fd, Syscalls.SOL_SOCKET, Syscalls.SO_SNDBUFFORCE, size, 4);
            MemorySegment bindAddress = address(Syscalls.ifNameToIndex(port));
            bindAddress.set(BE_SHORT, 2, (short) ETH_P_ALL);
            if (Syscalls.bind(fd, bindAddress, SOCKADDR_LL_SIZE) < 0)
                throw new SyscallException("bind(AF_PACKET, '" + port + "')", Syscalls.errno());
            return fd;
        } catch (RuntimeException e) {
            Syscalls.close(fd);
            throw e;
        }
    }

    /**
     * {@code struct sockaddr_ll} of a port. Protocol 0 when sending: the kernel then takes the frame's own EtherType.
     */
    private MemorySegment address(int ifindex) {
        MemorySegment a = arena.allocate(SOCKADDR_LL_SIZE, 4);
        a.set(ValueLayout.JAVA_SHORT, 0, (short) Syscalls.AF_PACKET);
        a.set(ValueLayout.JAVA_INT, 4, ifindex);
        a.set(ValueLayout.JAVA_BYTE, 11, (byte) 6);
        return a;
    }

    /** Runs until {@link #stop()}: receives, holds, sends. */
    public void run() {
        while (running) {
            towardsDc.receive();
            towardsGateway.receive();
            long now = System.nanoTime();
            long nextDue = Math.min(towardsDc.transmitDue(now), towardsGateway.transmitDue(now));
            long wait = nextDue == Long.MAX_VALUE ? IDLE_WAIT_NANOS : nextDue - System.nanoTime();
            // Within the usual wake-up lateness of the due time: keep looping (receiving meanwhile) instead of sleeping.
            if (wait <= wakeEarlyNanos) {
                Thread.onSpinWait();
                continue;
            }
            long sleep = nextDue == Long.MAX_VALUE ? wait : wait - wakeEarlyNanos;
            timeout.set(ValueLayout.JAVA_LONG, 0, sleep / 1_000_000_000L);
            timeout.set(ValueLayout.JAVA_LONG, 8, sleep % 1_000_000_000L);
            pollFds.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
            pollFds.set(ValueLayout.JAVA_SHORT, Syscalls.POLLFD_SIZE + 6, (short) 0);
            long asleep = System.nanoTime();
            int ready = calls.ppoll(pollFds, 2, timeout);
            if (ready < 0 && calls.errno() != LinkCalls.EINTR)
                throw new SyscallException("ppoll on the WAN ports", calls.errno());
            if (ready == 0 && nextDue != Long.MAX_VALUE) {
                // Timed out: learn how late wake-ups come (a VM's idle CPU can take hundreds of µs), and wake that
                // much earlier next time. Moving average over ~16 wake-ups, plus a margin, at most 2 ms.
                long late = Math.max(0, System.nanoTime() - (asleep + sleep));
                lateNanos += (late - lateNanos) / 16;
                wakeEarlyNanos = Math.min(MAX_WAKE_EARLY_NANOS, lateNanos + lateNanos / 2 + 20_000);
            }
        }
    }

    /** How long before a frame is due the loop stops sleeping; learnt from the wake-ups' lateness. */
    private long wakeEarlyNanos = 50_000;
    private long lateNanos;
    private static final long MAX_WAKE_EARLY_NANOS = 2_000_000;

    /** Ends {@link #run()} within its longest wait (100 ms). */
    public void stop() {
        running = false;
    }

    /** The counters of both directions, named {@code DIRECTION.COUNTER}; safe to read from another thread (racy). */
    public Map<String, Long> counters() {
        Map<String, Long> m = new LinkedHashMap<>();
        towardsDc.counters(m);
        towardsGateway.counters(m);
        return m;
    }

    @Override
    public void close() {
        Syscalls.close(towardsDc.inFd);
        Syscalls.close(towardsGateway.inFd);
        arena.close();
    }

    /** Frames from one port to the other: the ring, the loss state and the counters. */
    private final class Direction {
        final String name;
        final int inFd;
        final int outFd;
        final MemorySegment outAddress;
        final MemorySegment ring;
        final long ringAddress;
        final long capacity;
        final long entryMax;
        final long scratchAddress;
        /** Positions counted from the start, never wrapped: the ring offset is {@code position % capacity}. */
        long head, tail;
        long lastDue;
        boolean burstBad;
        volatile long received, forwarded, lost, reordered, ringFull, oversize, queueDrops, sendErrors, socketDrops;

        Direction(String name, int inFd, int outFd, MemorySegment outAddress, long ringBytes, long entryMax) {
            this.name = name;
            this.inFd = inFd;
            this.outFd = outFd;
            this.outAddress = outAddress;
            this.capacity = ringBytes & ~15L;
            this.entryMax = entryMax;
            this.ring = arena.allocate(capacity, 4096);
            this.ringAddress = ring.address();
            this.scratchAddress = arena.allocate(entryMax, 16).address();
        }

        /** Where the next entry starts: at {@code position}, or at the next lap when a largest entry does not fit before the ring's end. */
        long entryStart(long position) {
            long offset = position % capacity;
            return offset + entryMax > capacity ? position + capacity - offset : position;
        }

        void receive() {
            for (int i = 0; i < RECEIVE_BATCH; i++) {
                long start = entryStart(tail);
                boolean full = start + entryMax - head > capacity;
                // With the ring full the frame still has to be taken off the socket: into the scratch buffer, then dropped.
                long offset = start % capacity;
                long frame = full ? scratchAddress : ringAddress + offset + ENTRY_HEADER;
                iovec.set(ValueLayout.JAVA_LONG, 0, frame);
                iovec.set(ValueLayout.JAVA_LONG, 8, maxFrame + 1);
                message.set(ValueLayout.JAVA_LONG, MSG_CONTROLLEN, CONTROL_SIZE);
                long n = calls.recvmsg(inFd, message, LinkCalls.MSG_DONTWAIT | LinkCalls.MSG_TRUNC);
                if (n < 0) {
                    int e = calls.errno();
                    if (e == LinkCalls.EAGAIN) return;
                    if (e == LinkCalls.EINTR) continue;
                    throw new SyscallException("recv on the WAN port (" + name + ")", e);
                }
                received++;
                if (full) {
                    ringFull++;
                    continue;
                }
                if (n > maxFrame) {
                    oversize++;
                    continue;
                }
                if (lose()) {
                    lost++;
                    continue;
                }
                long now = arrivalTime();
                if (impairment.reorder() > 0 && random.nextDouble() < impairment.reorder()) {
                    reordered++;
                    send(frame, n);
                    continue;
                }
                long delay = impairment.delayNanos();
                if (impairment.jitterNanos() > 0)
                    delay += random.nextLong(-impairment.jitterNanos(), impairment.jitterNanos() + 1);
                long due = Math.max(now + delay, lastDue);
                lastDue = due;
                ring.set(ValueLayout.JAVA_LONG, offset, due);
                ring.set(ValueLayout.JAVA_INT, offset + 8, (int) n);
                tail = start + align(ENTRY_HEADER + n);
            }
        }

        /**
         * When the frame just received reached the port, on the System.nanoTime() scale: the kernel's timestamp
         * (SCM_TIMESTAMPNS, CLOCK_REALTIME) moved by the clocks' offset; now when there is none or it is not
         * plausible (a clock step).
         */
        private long arrivalTime() {
            long now = System.nanoTime();
            if (now - offsetTakenAt > CLOCK_REFRESH_NANOS) {
                calls.clockGettime(LinkCalls.CLOCK_REALTIME, clock);
                long after = System.nanoTime();
                realtimeOffset = clock.get(ValueLayout.JAVA_LONG, 0) * 1_000_000_000L + clock.get(ValueLayout.JAVA_LONG, 8) - (now + after) / 2;
                offsetTakenAt = now;
            }
            long controlLength = message.get(ValueLayout.JAVA_LONG, MSG_CONTROLLEN);
            // struct cmsghdr { size_t len; int level; int type; } then the struct timespec.
            if (controlLength >= 32 && control.get(ValueLayout.JAVA_INT, 8) == Syscalls.SOL_SOCKET
                    && control.get(ValueLayout.JAVA_INT, 12) == LinkCalls.SCM_TIMESTAMPNS) {
                long stamp = control.get(ValueLayout.JAVA_LONG, 16) * 1_000_000_000L + control.get(ValueLayout.JAVA_LONG, 24) - realtimeOffset;
                if (stamp <= now && now - stamp < 1_000_000_000L) return stamp;
            }
            return now;
        }

        private boolean lose() {
            WanImpairment.BurstLoss b = impairment.burst();
            if (b != null) {
                burstBad = burstBad ? random.nextDouble() >= b.r() : random.nextDouble() < b.p();
                return random.nextDouble() >= (burstBad ? b.h() : b.k());
            }
            return impairment.loss() > 0 && random.nextDouble() < impairment.loss();
        }

        /** Sends what is due by {@code now}; returns when the next held frame is due (MAX_VALUE: none held). */
        long transmitDue(long now) {
            while (head < tail) {
                long start = entryStart(head);
                long offset = start % capacity;
                long due = ring.get(ValueLayout.JAVA_LONG, offset);
                if (due > now) return due;
                int length = ring.get(ValueLayout.JAVA_INT, offset + 8);
                if (!send(ringAddress + offset + ENTRY_HEADER, length)) return now + SEND_RETRY_NANOS;
                head = start + align(ENTRY_HEADER + length);
            }
            return Long.MAX_VALUE;
        }

        /** Sends one frame; false when the socket's buffer is full and the frame must be retried. */
        private boolean send(long frame, long length) {
            while (true) {
                long r = calls.sendto(outFd, frame, length, LinkCalls.MSG_DONTWAIT, outAddress, SOCKADDR_LL_SIZE);
                if (r >= 0) {
                    forwarded++;
                    return true;
                }
                int e = calls.errno();
                if (e == LinkCalls.EINTR) continue;
                if (e == LinkCalls.EAGAIN) return false;
                // ENOBUFS: the port's qdisc (the WAN's pfifo) was full and dropped the frame: the WAN's queue drop.
                if (e == LinkCalls.ENOBUFS) queueDrops++;
                else sendErrors++;
                return true;
            }
        }

        void counters(Map<String, Long> m) {
            readSocketDrops();
            m.put(name + ".received", received);
            m.put(name + ".forwarded", forwarded);
            m.put(name + ".lost", lost);
            m.put(name + ".reordered", reordered);
            m.put(name + ".ring_full", ringFull);
            m.put(name + ".oversize", oversize);
            m.put(name + ".queue_drops", queueDrops);
            m.put(name + ".send_errors", sendErrors);
            m.put(name + ".socket_drops", socketDrops);
        }

        /** PACKET_STATISTICS: frames the kernel dropped because the socket's buffer was full (reading resets it). */
        private void readSocketDrops() {
            synchronized (statistics) {
                statisticsLength.set(ValueLayout.JAVA_INT, 0, 8);
                if (Syscalls.getsockopt(inFd, LinkCalls.SOL_PACKET, LinkCalls.PACKET_STATISTICS, statistics, statisticsLength) == 0)
                    socketDrops += Integer.toUnsignedLong(statistics.get(ValueLayout.JAVA_INT, 4));
            }
        }
    }
}
