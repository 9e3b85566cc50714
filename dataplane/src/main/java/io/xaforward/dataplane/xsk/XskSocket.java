package io.xaforward.dataplane.xsk;

import io.xaforward.dataplane.sys.FdWaiter;
import io.xaforward.dataplane.sys.SyscallException;
import io.xaforward.dataplane.sys.Syscalls;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * An AF_XDP socket bound to one queue of one interface: frames the XDP program redirects into the socket's XSKMAP
 * slot arrive here without passing the kernel's network stack, and frames written into the UMEM leave through the
 * interface, all without per-frame allocation or copying in Java.
 *
 * <p>Built from raw syscalls through the FFM API (no libxdp): socket(AF_XDP), UMEM registration, ring sizing with
 * setsockopt(SOL_XDP), getsockopt(XDP_MMAP_OFFSETS), mmap of the four rings, bind. Receive with
 * {@link #receive(FrameHandler, int)} (frames go back to the FILL ring after the handler returns); transmit by
 * {@link #claimTx(int) claiming} a UMEM frame, writing into {@link #umem()} at the returned offset,
 * {@link #submitTx()} and {@link #flush()}: in copy mode (the only mode veth offers) the kernel sends only inside
 * sendto(2), at most 32 frames per call, so flush kicks as often as needed and then reaps completions.
 *
 * <p>Open it in the network namespace of the interface. One owner thread at a time; {@link #close} unmaps the
 * rings and frees the UMEM, after which the object must not be used.
 */
public final class XskSocket implements AutoCloseable {
    static final int AF_XDP = 44;
    static final int SOL_XDP = 283;
    static final int XDP_MMAP_OFFSETS = 1, XDP_RX_RING = 2, XDP_TX_RING = 3, XDP_UMEM_REG = 4,
            XDP_UMEM_FILL_RING = 5, XDP_UMEM_COMPLETION_RING = 6, XDP_STATISTICS = 7, XDP_OPTIONS = 8;
    static final int XDP_COPY = 2, XDP_ZEROCOPY = 4;
    static final int XDP_OPTIONS_ZEROCOPY = 1;
    static final long PGOFF_RX_RING = 0, PGOFF_TX_RING = 0x80000000L, PGOFF_FILL_RING = 0x100000000L,
            PGOFF_COMPLETION_RING = 0x180000000L;
    /** Frames the kernel sends per sendto(2) in copy mode. */
    public static final int COPY_MODE_TX_BATCH = 32;

    private static final int EPERM = 1, EINTR = 4, ENODEV = 19, EACCES = 13, EBUSY = 16, EINVAL = 22,
            ENOMEM = 12, ENOBUFS = 105, EOPNOTSUPP = 95, EAFNOSUPPORT = 97, ENETDOWN = 100, ENXIO = 6;
    private static final long BUSY_WAIT_MS = 1000;
    private static final int UMEM_REG_SIZE = 32, SOCKADDR_XDP_SIZE = 16, MMAP_OFFSETS_SIZE = 128, STATISTICS_SIZE = 48;

    private final String ifname;
    private final int ifindex, queue, fd;
    /** Sleeps in poll(2) on the socket in {@link #awaitRx}, which another thread can end ({@link #wakeup()}). */
    private final FdWaiter waiter;
    private final boolean zeroCopy;
    private final Arena arena;
    private final Umem umem;
    private final MemorySegment umemMemory;
    private final XskRing.Producer fill, tx;
    private final XskRing.Consumer rx, completion;
    private final MemorySegment statsBuffer, statsLength;
    private long rxFrames, txFrames;
    /** Received frames not yet back in the FILL ring (see {@link #refill()}); sized for every receive frame. */
    private final long[] fillBacklog;
    private int fillBacklogSize;
    private long fillDeferred;
    private int txClaimed, txInFlight;
    private boolean closed;

    private XskSocket(String ifname, int ifindex, int queue, int fd, boolean zeroCopy, Arena arena, Umem umem,
                      XskRing.Producer fill, XskRing.Producer tx, XskRing.Consumer rx, XskRing.Consumer completion) {
        this.ifname = ifname;
        this.ifindex = ifindex;
        this.queue = queue;
        this.fd = fd;
        this.zeroCopy = zeroCopy;
        this.arena = arena;
        this.umem = umem;
        this.umemMemory = umem.memory();
        this.fillBacklog = new long[umem.rxFrames()];
        this.fill = fill;
        this.tx = tx;
        this.rx = rx;
        this.completion = completion;
        try {
            this.waiter = new FdWaiter(fd);
        } catch (SyscallException e) {
            Syscalls.close(fd);
            arena.close();
            throw fail("eventfd for " + where(), e.errno(), "");
        }
        this.statsBuffer = arena.allocate(STATISTICS_SIZE, 8);
        this.statsLength = arena.allocate(ValueLayout.JAVA_INT);
    }

    /**
     * Opens an AF_XDP socket on queue {@code queue} of {@code ifname} (in the calling thread's network namespace).
     *
     * @throws XskException             when the interface is missing, privileges are lacking, the device has no
     *                                  such queue, zero-copy is not supported, or the kernel refuses a step; the
     *                                  message names the call, the interface and queue, errno and a hint
     * @throws IllegalArgumentException for a negative queue (ring sizes are checked by {@link XskConfig})
     */
    public static XskSocket open(String ifname, int queue, XskConfig cfg) {
        Objects.requireNonNull(ifname, "ifname");
        Objects.requireNonNull(cfg, "cfg");
        if (queue < 0) throw new IllegalArgumentException("queue " + queue + " < 0");
        String where = "'" + ifname + "', queue " + queue;
        int ifindex;
        try {
            ifindex = Syscalls.ifNameToIndex(ifname);
        } catch (SyscallException e) {
            throw new XskException("AF_XDP socket(" + where + "): no interface '" + ifname
                    + "' in this network namespace (" + Syscalls.strerror(e.errno()) + ", errno " + e.errno() + ")", e.errno());
        }
        int fd = Syscalls.socket(AF_XDP, Syscalls.SOCK_RAW | Syscalls.SOCK_CLOEXEC, 0);
        if (fd < 0) {
            int e = Syscalls.errno();
            String hint = e == EPERM || e == EACCES ? " - AF_XDP needs root (CAP_NET_RAW, CAP_IPC_LOCK for the UMEM)"
                    : e == EAFNOSUPPORT ? " - this kernel has no AF_XDP (CONFIG_XDP_SOCKETS)" : "";
            throw fail("socket(" + where + ")", e, hint);
        }
        Arena arena = Arena.ofShared();
        try {
            Umem umem = new Umem(arena, cfg.rxFrames(), cfg.txFrames());
            MemorySegment scratch = arena.allocate(MMAP_OFFSETS_SIZE, 8);

            // struct xdp_umem_reg { u64 addr; u64 len; u32 chunk_size; u32 headroom; u32 flags; u32 tx_metadata_len; }
            scratch.fill((byte) 0);
            scratch.set(ValueLayout.JAVA_LONG, 0, umem.memory().address());
            scratch.set(ValueLayout.JAVA_LONG, 8, umem.memory().byteSize());
            scratch.set(ValueLayout.JAVA_INT, 16, Umem.FRAME_SIZE);
            if (Syscalls.setsockopt(fd, SOL_XDP, XDP_UMEM_REG, scratch, UMEM_REG_SIZE) < 0) {
                int e = Syscalls.errno();
                throw fail("setsockopt(XDP_UMEM_REG, " + where + ")", e, e == ENOMEM || e == ENOBUFS || e == EPERM
                        ? " - " + umem.memory().byteSize() + " bytes of UMEM could not be pinned (RLIMIT_MEMLOCK / CAP_IPC_LOCK)" : "");
            }
            ringSize(fd, XDP_UMEM_FILL_RING, "XDP_UMEM_FILL_RING", cfg.fillRingSize(), where, scratch);
            ringSize(fd, XDP_UMEM_COMPLETION_RING, "XDP_UMEM_COMPLETION_RING", cfg.completionRingSize(), where, scratch);
            ringSize(fd, XDP_RX_RING, "XDP_RX_RING", cfg.rxRingSize(), where, scratch);
            ringSize(fd, XDP_TX_RING, "XDP_TX_RING", cfg.txRingSize(), where, scratch);

            // struct xdp_mmap_offsets { struct xdp_ring_offset rx, tx, fr, cr; }, each {producer, consumer, desc, flags}
            MemorySegment len = arena.allocate(ValueLayout.JAVA_INT);
            len.set(ValueLayout.JAVA_INT, 0, MMAP_OFFSETS_SIZE);
            if (Syscalls.getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, scratch, len) < 0) {
                throw fail("getsockopt(XDP_MMAP_OFFSETS, " + where + ")", Syscalls.errno(), "");
            }
            if (len.get(ValueLayout.JAVA_INT, 0) != MMAP_OFFSETS_SIZE) {
                throw new XskException("AF_XDP getsockopt(XDP_MMAP_OFFSETS, " + where + ") returned "
                        + len.get(ValueLayout.JAVA_INT, 0) + " bytes, expected " + MMAP_OFFSETS_SIZE + " (kernel too old)", 0);
            }
            XskRing.Consumer rx = new XskRing.Consumer(map(fd, arena, scratch, 0, PGOFF_RX_RING, cfg.rxRingSize(), XskRing.DESC_ENTRY, "RX", where),
                    off(scratch, 0, 0), off(scratch, 0, 1), off(scratch, 0, 3), off(scratch, 0, 2), cfg.rxRingSize());
            XskRing.Producer tx = new XskRing.Producer(map(fd, arena, scratch, 1, PGOFF_TX_RING, cfg.txRingSize(), XskRing.DESC_ENTRY, "TX", where),
                    off(scratch, 1, 0), off(scratch, 1, 1), off(scratch, 1, 3), off(scratch, 1, 2), cfg.txRingSize());
            XskRing.Producer fill = new XskRing.Producer(map(fd, arena, scratch, 2, PGOFF_FILL_RING, cfg.fillRingSize(), XskRing.ADDR_ENTRY, "FILL", where),
                    off(scratch, 2, 0), off(scratch, 2, 1), off(scratch, 2, 3), off(scratch, 2, 2), cfg.fillRingSize());
            XskRing.Consumer completion = new XskRing.Consumer(map(fd, arena, scratch, 3, PGOFF_COMPLETION_RING, cfg.completionRingSize(), XskRing.ADDR_ENTRY, "COMPLETION", where),
                    off(scratch, 3, 0), off(scratch, 3, 1), off(scratch, 3, 3), off(scratch, 3, 2), cfg.completionRingSize());

            // Every receive frame starts in the FILL ring, so the kernel can deliver as soon as we are bound.
            int first = fill.reserve(fill.free(umem.rxFrames()));
            for (int i = 0; i < umem.rxFrames(); i++) fill.setAddr(first + i, umem.rxFrame(i));
            fill.submit();

            // struct sockaddr_xdp { u16 family; u16 flags; u32 ifindex; u32 queue_id; u32 shared_umem_fd; }
            scratch.fill((byte) 0);
            scratch.set(ValueLayout.JAVA_SHORT, 0, (short) AF_XDP);
            scratch.set(ValueLayout.JAVA_SHORT, 2, (short) (cfg.zeroCopy() ? XDP_ZEROCOPY : XDP_COPY));
            scratch.set(ValueLayout.JAVA_INT, 4, ifindex);
            scratch.set(ValueLayout.JAVA_INT, 8, queue);
            if (!bindWaitingForRelease(fd, scratch)) {
                int e = Syscalls.errno();
                throw fail("bind(" + where + (cfg.zeroCopy() ? ", zero-copy" : ", copy mode") + ")", e, bindHint(e, ifname, queue, cfg.zeroCopy()));
            }
            len.set(ValueLayout.JAVA_INT, 0, 4);
            scratch.set(ValueLayout.JAVA_INT, 0, 0);
            boolean zc = Syscalls.getsockopt(fd, SOL_XDP, XDP_OPTIONS, scratch, len) == 0
                    && (scratch.get(ValueLayout.JAVA_INT, 0) & XDP_OPTIONS_ZEROCOPY) != 0;
            return new XskSocket(ifname, ifindex, queue, fd, zc, arena, umem, fill, tx, rx, completion);
        } catch (RuntimeException | Error e) {
            Syscalls.close(fd);
            arena.close(); // unmaps the rings that were mapped and frees the UMEM
            throw e;
        }
    }

    /**
     * bind(2), retried for up to {@value #BUSY_WAIT_MS} ms while it fails with EBUSY: the kernel releases the UMEM
     * of a closed socket asynchronously, so a queue stays busy for a moment after its previous socket closed.
     */
    private static boolean bindWaitingForRelease(int fd, MemorySegment address) {
        long deadline = System.nanoTime() + BUSY_WAIT_MS * 1_000_000L;
        while (true) {
            if (Syscalls.bind(fd, address, SOCKADDR_XDP_SIZE) == 0) return true;
            if (Syscalls.errno() != EBUSY || System.nanoTime() > deadline) return false;
            try {
                Thread.sleep(5);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
    }

    private static String bindHint(int errno, String ifname, int queue, boolean zeroCopy) {
        if (zeroCopy && (errno == EOPNOTSUPP || errno == EINVAL || errno == ENXIO)) {
            return " - the driver of '" + ifname + "' does not support zero-copy AF_XDP (veth never does): "
                    + "open it in copy mode (XskConfig.withZeroCopy(false))";
        }
        return switch (errno) {
            case EINVAL -> queue > 0 ? " - the device has no queue " + queue
                    : " - the kernel rejected the UMEM or ring setup";
            case EBUSY -> " - queue " + queue + " of '" + ifname + "' already has an AF_XDP socket or UMEM (waited "
                    + BUSY_WAIT_MS + " ms for the kernel to release a closed one)";
            case ENETDOWN -> " - '" + ifname + "' is down";
            case ENODEV -> " - '" + ifname + "' vanished";
            case EPERM, EACCES -> " - needs root (CAP_NET_RAW)";
            default -> "";
        };
    }

    private static void ringSize(int fd, int option, String name, int size, String where, MemorySegment scratch) {
        scratch.set(ValueLayout.JAVA_INT, 0, size);
        if (Syscalls.setsockopt(fd, SOL_XDP, option, scratch, 4) < 0) {
            int e = Syscalls.errno();
            throw fail("setsockopt(" + name + " = " + size + ", " + where + ")", e,
                    e == EINVAL ? " - ring sizes must be powers of two" : "");
        }
    }

    /** Field {@code field} (0 producer, 1 consumer, 2 desc, 3 flags) of ring {@code ring} in xdp_mmap_offsets. */
    private static long off(MemorySegment offsets, int ring, int field) {
        return offsets.get(ValueLayout.JAVA_LONG, ring * 32L + field * 8L);
    }

    /** Maps one ring; the arena unmaps it when closed. */
    private static MemorySegment map(int fd, Arena arena, MemorySegment offsets, int ring, long pgoff, int size,
                                     int entrySize, String name, String where) {
        long length = off(offsets, ring, 2) + (long) size * entrySize;
        MemorySegment p = Syscalls.mmap(length, Syscalls.PROT_READ | Syscalls.PROT_WRITE,
                Syscalls.MAP_SHARED | Syscalls.MAP_POPULATE, fd, pgoff);
        if (p.address() == Syscalls.MAP_FAILED) {
            throw fail("mmap(" + name + " ring, " + length + " bytes, " + where + ")", Syscalls.errno(), "");
        }
        return p.reinterpret(length, arena, s -> Syscalls.munmap(s, length));
    }

    private static XskException fail(String operation, int errno, String hint) {
        return new XskException("AF_XDP " + operation + ": " + Syscalls.strerror(errno) + " (errno " + errno + ")" + hint, errno);
    }

    public int fd() { return fd; }
    public String ifname() { return ifname; }
    public int ifindex() { return ifindex; }
    public int queue() { return queue; }
    /** Whether the kernel bound the socket in zero-copy mode (XDP_OPTIONS). */
    public boolean isZeroCopy() { return zeroCopy; }
    /** The whole UMEM; {@link #claimTx} offsets and {@link FrameHandler} offsets point into it. */
    public MemorySegment umem() { return umemMemory; }
    public Umem frames() { return umem; }

    /**
     * Hands up to {@code max} received frames to {@code handler}, in arrival order, then returns them to the FILL
     * ring. Does not block. Returns the number of frames handled (0 when none were waiting). If the handler throws,
     * the frames up to and including the failing one are consumed and recycled; the rest stay in the RX ring.
     */
    public int receive(FrameHandler handler, int max) {
        refill();
        int n = rx.peek(max);
        if (n == 0) return 0;
        int first = rx.first();
        int done = 0;
        try {
            while (done < n) {
                int i = first + done;
                done++;
                handler.onFrame(umemMemory, rx.descAddr(i), rx.descLength(i));
            }
        } finally {
            recycle(first, done);
        }
        return n;
    }

    private void recycle(int first, int n) {
        for (int k = 0; k < n; k++) fillBacklog[fillBacklogSize++] = Umem.frameBase(rx.descAddr(first + k));
        rx.release(n);
        rxFrames += n;
        refill();
    }

    /**
     * Offers the frames of {@link #fillBacklog} to the FILL ring, as many as it has room for. The kernel publishes
     * its FILL consumer index lazily (it reads FILL entries in batches), so frames may already sit in the RX ring
     * while the FILL ring still counts their entries as taken: the rest waits for the next call. Every received
     * frame is either in the backlog or in the kernel's rings, so the backlog never exceeds the receive frames.
     */
    private void refill() {
        if (fillBacklogSize == 0) return;
        int slots = fill.free(fillBacklogSize);
        if (slots == 0) return;
        int f = fill.reserve(slots);
        int start = fillBacklogSize - slots;
        for (int k = 0; k < slots; k++) fill.setAddr(f + k, fillBacklog[start + k]);
        fill.submit();
        fillBacklogSize = start;
        if (fillBacklogSize > 0) fillDeferred++;
    }

    /** Times received frames had to wait for room in the FILL ring (the kernel had not published its progress). */
    public long fillDeferred() { return fillDeferred; }

    /**
     * Waits up to {@code timeoutMs} for received frames; true when some are ready. For loops that would otherwise
     * spin on an idle socket.
     */
    public boolean awaitRx(int timeoutMs) {
        if (rx.peek(1) > 0) return true;
        try {
            waiter.await(Syscalls.POLLIN, timeoutMs);
        } catch (SyscallException e) {
            throw fail("poll(" + where() + ")", e.errno(), "");
        }
        return rx.peek(1) > 0;
    }

    /**
     * Ends an {@link #awaitRx} in progress on another thread, or makes the next one return at once. Any thread;
     * does nothing after {@link #close()}.
     */
    public void wakeup() {
        waiter.wakeup();
    }

    /**
     * Claims a transmit frame for a frame of {@code length} bytes and returns its offset in {@link #umem()}, or -1
     * when the TX ring is full or every transmit frame is in flight ({@link #flush()} and retry). Write the frame
     * at the offset, then {@link #submitTx()}. Allocation-free.
     */
    public long claimTx(int length) {
        if (length < 1 || length > Umem.FRAME_SIZE) {
            throw new IllegalArgumentException("frame length " + length + " not in 1.." + Umem.FRAME_SIZE);
        }
        if (tx.free(1) == 0) return -1;
        long frame = umem.takeTxFrame();
        if (frame < 0) {
            reapCompletions();
            frame = umem.takeTxFrame();
            if (frame < 0) return -1;
        }
        tx.setDesc(tx.reserve(1), frame, length);
        txClaimed++;
        return frame;
    }

    /** {@link #claimTx(int)} as a slice of the UMEM (one small object per call), or null when nothing is free. */
    public MemorySegment claimTxSegment(int length) {
        long offset = claimTx(length);
        return offset < 0 ? null : umemMemory.asSlice(offset, length);
    }

    /** Publishes every claimed frame to the TX ring (they leave at the next {@link #flush()}). */
    public void submitTx() {
        if (txClaimed == 0) return;
        tx.submit();
        txInFlight += txClaimed;
        txClaimed = 0;
    }

    /**
     * Submits claimed frames, kicks the kernel with sendto(MSG_DONTWAIT) until the TX ring is drained (copy mode
     * sends at most 32 frames per kick) or the device pushes back, and reaps completions. Returns the number of
     * frames whose transmission completed during this call.
     */
    public int flush() {
        submitTx();
        int outstanding = tx.outstanding();
        int kicks = outstanding / COPY_MODE_TX_BATCH + 1;
        while (outstanding > 0 && kicks-- > 0) {
            if (!kick()) break;
            outstanding = tx.outstanding();
        }
        return reapCompletions();
    }

    /** One sendto(2) kick; false when the kernel is busy (try again later). */
    private boolean kick() {
        long r = Syscalls.sendto(fd, MemorySegment.NULL, 0, Syscalls.MSG_DONTWAIT, MemorySegment.NULL, 0);
        if (r >= 0) return true;
        int e = Syscalls.errno();
        if (e == Syscalls.EAGAIN || e == EBUSY || e == ENOBUFS || e == EINTR) return false;
        throw fail("sendto(" + where() + ") TX kick", e, e == ENETDOWN ? " - '" + ifname + "' is down" : "");
    }

    /** Returns transmitted frames from the COMPLETION ring to the free stack; the number reaped. */
    public int reapCompletions() {
        int n = completion.peek(Integer.MAX_VALUE);
        if (n == 0) return 0;
        int first = completion.first();
        for (int k = 0; k < n; k++) umem.returnTxFrame(completion.addr(first + k));
        completion.release(n);
        txInFlight -= n;
        txFrames += n;
        return n;
    }

    /** Frames submitted to the kernel whose completion has not been reaped yet. */
    public int txInFlight() { return txInFlight; }

    /** User-space counts plus the kernel's XDP_STATISTICS for this socket. */
    public XskStats stats() {
        statsBuffer.fill((byte) 0);
        statsLength.set(ValueLayout.JAVA_INT, 0, STATISTICS_SIZE);
        if (Syscalls.getsockopt(fd, SOL_XDP, XDP_STATISTICS, statsBuffer, statsLength) < 0) {
            throw fail("getsockopt(XDP_STATISTICS, " + where() + ")", Syscalls.errno(), "");
        }
        // struct xdp_statistics { rx_dropped, rx_invalid_descs, tx_invalid_descs, rx_ring_full,
        //                         rx_fill_ring_empty_descs, tx_ring_empty_descs } (u64 each)
        return new XskStats(rxFrames, txFrames, stat(0), stat(3), stat(4), stat(1), stat(2), stat(5));
    }

    private long stat(int i) { return statsBuffer.get(ValueLayout.JAVA_LONG, i * 8L); }

    private String where() { return "'" + ifname + "', queue " + queue; }

    /** Closes the socket (the kernel drops it from any XSKMAP), unmaps the rings and frees the UMEM. Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) return;
            closed = true;
        }
        waiter.close(); // first: no wakeup() may write to the eventfd's number once it is closed and reused
        Syscalls.close(fd);
        arena.close();
    }

    @Override
    public String toString() {
        return "XskSocket[fd " + fd + ", " + where() + (zeroCopy ? ", zero-copy" : ", copy") + (closed ? ", closed" : "") + "]";
    }
}
