package io.xaforward.transport;

import io.xaforward.dataplane.Counter;
import io.xaforward.dataplane.sys.Syscalls;
import io.xaforward.dataplane.xsk.FrameHandler;
import io.xaforward.dataplane.xsk.Umem;
import io.xaforward.dataplane.xsk.XskConfig;
import io.xaforward.dataplane.xsk.XskException;
import io.xaforward.dataplane.xsk.XskRedirect;
import io.xaforward.dataplane.xsk.XskSocket;
import io.xaforward.dataplane.xsk.XskStats;
import io.xaforward.protocol.Checksums;
import io.xaforward.protocol.FrameParser;
import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.ParsedFrame;
import io.xaforward.protocol.XafHeader;

import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.util.IdentityHashMap;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * XAF datagrams over an AF_XDP socket, in any of the three network forms: the kernel-bypass sibling of
 * {@link UdpDatagramPort} (IP forms) and {@link PacketDatagramPort} (identifier form).
 *
 * <p>Why: an endpoint that receives through the kernel pays for the socket layer on every packet. Here the XAF XDP
 * program ({@link XskRedirect}, LOCAL routes for this endpoint's network index identifiers and job) steers only this
 * endpoint's XAF frames into the socket's UMEM; everything else (ARP, neighbour discovery, other traffic) still
 * reaches the kernel. Receiving hands the XAF part of each frame to the handler straight out of the UMEM; sending
 * copies the datagram once into a claimed UMEM transmit frame behind outer headers written by {@link FrameWriter}
 * (Ethernet + IPv4/UDP, Ethernet + IPv6/UDP or Ethernet + ID header; the UDP checksum is computed in O(1) from the
 * XAF header's payload_sum, so a kernel UDP socket on the other side accepts the frames).
 *
 * <p>Addressing: the identifier form sends to {@link EthernetPeer} (next-hop MAC; the ID header's destination is
 * the datagram's network index identifier), the IP forms to {@link EthernetIpPeer} (next-hop MAC + destination
 * IP, UDP port 9450 both ways). No neighbour resolution happens here: the caller knows the next hop's MAC.
 *
 * <p>Transmission is batched: in copy mode (all veth offers) the kernel moves TX descriptors only inside sendto(2),
 * at most {@value #TX_BATCH} per kick, so frames are kicked out once {@value #TX_BATCH} are pending and at every
 * {@link #poll}. Receiving checks the outer IPv4/UDP checksums (the kernel no longer does) and counts and drops
 * frames that fail, or that are not XAF frames of this port's form.
 *
 * <p>Construct it in the interface's network namespace (a thread that entered it); {@link #close()} detaches the
 * XDP program in that same namespace from whatever thread calls it. One thread uses the port at a time.
 * Steady-state send and poll allocate nothing.
 */
public final class XskDatagramPort implements DatagramPort {
    /** Frames the kernel sends per kick in copy mode; pending frames are flushed when this many have queued. */
    public static final int TX_BATCH = XskSocket.COPY_MODE_TX_BATCH;
    private static final int PEER_CACHE = 16;

    private final NetworkForm form;
    private final int outer;
    private final int maxDatagramLength;
    private final XskSocket socket;
    private final XskRedirect redirect;
    private final int namespaceFd;
    private final MemorySegment umem;
    private final Peer self;
    private final int identity;
    private final long mac;
    private final byte[] ip;

    private final FrameWriter writer = new FrameWriter();
    private final FrameParser parser = new FrameParser();
    private final XafHeader header = new XafHeader();
    private final MemorySegment[] frameSlices;
    private final long[] frameSliceStarts;
    private final Peer[] cachedPeers = new Peer[PEER_CACHE];
    private final OuterAddressing[] cachedAddressing = new OuterAddressing[PEER_CACHE];
    private int nextCacheSlot;
    private final FrameHandler receiver = this::onFrame;
    private DatagramHandler currentHandler;
    private int delivered;
    private int pendingTx;
    private long foreignFrames, checksumFailures, txRingFull;
    private boolean closed;

    /**
     * Opens the socket with {@link XskConfig#defaults()} in copy mode and native XDP (no generic fallback).
     *
     * @see #XskDatagramPort(String, int, NetworkForm, String, InetAddress, int, int, int, int, XskConfig, boolean, int...)
     */
    public XskDatagramPort(String ifname, int queue, NetworkForm form, String mac, InetAddress ip, int identity,
                           int mtu, int jobId, int jobToken, int... networkIds) {
        this(ifname, queue, form, mac, ip, identity, mtu, jobId, jobToken, XskConfig.defaults(), false, networkIds);
    }

    /**
     * Opens an AF_XDP socket on {@code queue} of {@code ifname} and attaches the XAF XDP program to the interface
     * with LOCAL routes that deliver {@code networkIds} of job {@code jobId}/{@code jobToken} into it.
     *
     * @param ifname     the interface, in the calling thread's network namespace
     * @param queue      its receive queue (0 on veth)
     * @param form       the network form this port sends and accepts
     * @param mac        this interface's MAC address ("02:00:00:00:00:01"): the Ethernet source of sent frames
     * @param ip         this endpoint's address for the IP forms (IPv4 for {@link NetworkForm#IPV4}, IPv6 for
     *                   {@link NetworkForm#IPV6}); must be null for {@link NetworkForm#ID}
     * @param identity   the ID header's source identity (identifier form; ignored by the IP forms)
     * @param mtu        the link MTU (IP packet / ID header + XAF size limit); capped by the 2048-byte UMEM frame
     * @param jobId      job whose frames are delivered (must match the transport's job)
     * @param jobToken   that job's token
     * @param config     socket ring and UMEM sizes
     * @param allowGenericFallback attach in generic (skb) XDP mode if native XDP is refused
     * @param networkIds the network index identifiers addressed to this endpoint (at least one)
     * @throws IllegalArgumentException for inconsistent arguments (IP family vs form, MTU too small, no networks)
     * @throws XskException when the socket cannot be opened or bound
     */
    public XskDatagramPort(String ifname, int queue, NetworkForm form, String mac, InetAddress ip, int identity,
                           int mtu, int jobId, int jobToken, XskConfig config, boolean allowGenericFallback,
                           int... networkIds) {
        Objects.requireNonNull(ifname, "ifname");
        this.form = Objects.requireNonNull(form, "form");
        Objects.requireNonNull(mac, "mac");
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(networkIds, "networkIds");
        if (networkIds.length == 0) {
            throw new IllegalArgumentException("an XskDatagramPort needs at least one network index identifier to receive");
        }
        checkIpMatchesForm(form, ip);
        this.outer = form.outerHeaderLength();
        int largestFrame = Math.min(mtu + 14, Umem.FRAME_SIZE);
        this.maxDatagramLength = largestFrame - outer;
        if (maxDatagramLength < XafHeader.LENGTH) {
            throw new IllegalArgumentException("MTU " + mtu + " leaves " + maxDatagramLength + " bytes after the "
                    + form + " outer headers; an XAF datagram needs at least " + XafHeader.LENGTH);
        }
        this.mac = EthernetPeer.of(mac).mac();
        this.ip = ip == null ? null : ip.getAddress();
        this.identity = identity;
        this.self = ip == null ? new EthernetPeer(this.mac) : new EthernetIpPeer(this.mac, ip);

        this.namespaceFd = Syscalls.open("/proc/thread-self/ns/net", Syscalls.O_RDONLY | Syscalls.O_CLOEXEC);
        if (namespaceFd < 0) {
            int e = Syscalls.errno();
            throw new IllegalStateException("cannot open /proc/thread-self/ns/net: " + Syscalls.strerror(e));
        }
        XskSocket s = null;
        try {
            s = XskSocket.open(ifname, queue, config);
            this.redirect = XskRedirect.install(s, form.code(), jobId, jobToken, allowGenericFallback, networkIds);
        } catch (RuntimeException | Error e) {
            if (s != null) s.close();
            Syscalls.close(namespaceFd);
            throw e;
        }
        this.socket = s;
        this.umem = s.umem();
        int frames = s.frames().rxFrames() + s.frames().txFrames();
        this.frameSlices = new MemorySegment[frames];
        this.frameSliceStarts = new long[frames];
        // Prebuilt views where data will start: behind the kernel's headroom in receive frames, at the base of
        // transmit frames. Frames used for the first time then cost nothing either.
        for (int i = 0; i < frames; i++) {
            long base = (long) i * Umem.FRAME_SIZE;
            frameAt(i < s.frames().rxFrames() ? base + Umem.KERNEL_HEADROOM : base);
        }
    }

    private static void checkIpMatchesForm(NetworkForm form, InetAddress ip) {
        switch (form) {
            case ID -> {
                if (ip != null) throw new IllegalArgumentException("the ID form has no IP address, got " + ip);
            }
            case IPV4 -> {
                if (!(ip instanceof Inet4Address)) {
                    throw new IllegalArgumentException("the IPV4 form needs this endpoint's IPv4 address, got " + ip);
                }
            }
            case IPV6 -> {
                if (!(ip instanceof Inet6Address)) {
                    throw new IllegalArgumentException("the IPV6 form needs this endpoint's IPv6 address, got " + ip);
                }
            }
        }
    }

    public NetworkForm form() { return form; }

    @Override
    public int maxDatagramLength() { return maxDatagramLength; }

    /**
     * Writes the datagram into a UMEM transmit frame behind this form's outer headers and queues it; frames leave
     * in batches of {@value #TX_BATCH} or at the next {@link #poll}. Returns false when every transmit frame is
     * in flight even after a flush (the transport retransmits later).
     *
     * @throws IllegalArgumentException for a peer of the wrong type or IP family, or a datagram that is too long,
     *                                  shorter than an XAF header or whose payload_len disagrees with its length
     * @throws IllegalStateException    after {@link #close()}
     */
    @Override
    public boolean send(MemorySegment buffer, long offset, int length, Peer destination) {
        if (closed) throw new IllegalStateException(this + " is closed");
        OuterAddressing addressing = addressingFor(destination);
        if (length < XafHeader.LENGTH || length > maxDatagramLength) {
            throw new IllegalArgumentException("datagram of " + length + " bytes is outside [" + XafHeader.LENGTH
                    + ", " + maxDatagramLength + "] for this " + form + " port");
        }
        header.wrap(buffer, offset);
        int payloadLength = header.payloadLength();
        if (XafHeader.LENGTH + payloadLength != length) {
            throw new IllegalArgumentException("datagram of " + length + " bytes announces payload_len "
                    + payloadLength + " (expected " + (length - XafHeader.LENGTH) + ")");
        }
        if (pendingTx >= TX_BATCH) flushTx();
        int frameLength = outer + length;
        long frameOffset = socket.claimTx(frameLength);
        if (frameOffset < 0) {
            flushTx();
            frameOffset = socket.claimTx(frameLength);
            if (frameOffset < 0) {
                txRingFull++;
                return false;
            }
        }
        MemorySegment frame = frameAt(frameOffset);
        MemorySegment.copy(buffer, offset, frame, outer, length);
        if (form == NetworkForm.ID) {
            addressing.dstId(header.networkId());
        }
        writer.encapsulate(frame, form, addressing);
        pendingTx++; // published to the TX ring with the rest of the batch at the next flush
        return true;
    }

    private long claimedFrame = -1;
    private OuterAddressing claimedAddressing;

    /**
     * Claims a UMEM transmit frame and returns the UMEM offset behind this form's outer headers, where the caller
     * writes the XAF datagram in place (the only copy of the payload on the way out); {@link #commitClaim} writes
     * the outer headers around it and queues the frame. Frames leave in batches as with {@link #send}.
     */
    @Override
    public long claim(int length, Peer destination) {
        if (closed) throw new IllegalStateException(this + " is closed");
        OuterAddressing addressing = addressingFor(destination);
        if (length < XafHeader.LENGTH || length > maxDatagramLength) {
            throw new IllegalArgumentException("datagram of " + length + " bytes is outside [" + XafHeader.LENGTH
                    + ", " + maxDatagramLength + "] for this " + form + " port");
        }
        if (claimedFrame >= 0) throw new IllegalStateException("the previous claim was not committed");
        if (pendingTx >= TX_BATCH) flushTx();
        long frameOffset = socket.claimTx(outer + length);
        if (frameOffset < 0) {
            flushTx();
            frameOffset = socket.claimTx(outer + length);
            if (frameOffset < 0) {
                txRingFull++;
                return CLAIM_FULL;
            }
        }
        claimedFrame = frameOffset;
        claimedAddressing = addressing;
        return frameOffset + outer;
    }

    /** The whole UMEM: claimed offsets are UMEM offsets. */
    @Override
    public boolean supportsClaim() {
        return true;
    }

    @Override
    public MemorySegment claimSegment() {
        return umem;
    }

    @Override
    public boolean commitClaim() {
        if (claimedFrame < 0) throw new IllegalStateException("commitClaim without a claim");
        MemorySegment frame = frameAt(claimedFrame);
        OuterAddressing addressing = claimedAddressing;
        claimedFrame = -1;
        claimedAddressing = null;
        if (form == NetworkForm.ID) {
            addressing.dstId(header.wrap(frame, outer).networkId());
        }
        writer.encapsulate(frame, form, addressing);
        pendingTx++; // published to the TX ring with the rest of the batch at the next flush
        return true;
    }

    /** The per-peer outer addressing, built once per peer and reused (allocation-free for up to 16 peers). */
    private OuterAddressing addressingFor(Peer destination) {
        if (destination == null) {
            throw new IllegalArgumentException("destination peer is null");
        }
        for (int i = 0; i < PEER_CACHE; i++) {
            if (cachedPeers[i] == destination) return cachedAddressing[i];
        }
        for (int i = 0; i < PEER_CACHE; i++) {
            if (destination.equals(cachedPeers[i])) return cachedAddressing[i];
        }
        OuterAddressing a = newAddressing(destination);
        int slot = nextCacheSlot;
        nextCacheSlot = (nextCacheSlot + 1) % PEER_CACHE;
        cachedPeers[slot] = destination;
        cachedAddressing[slot] = a;
        return a;
    }

    private OuterAddressing newAddressing(Peer destination) {
        OuterAddressing a = new OuterAddressing().srcMac(mac);
        if (form == NetworkForm.ID) {
            if (!(destination instanceof EthernetPeer(long dstMac))) {
                throw new IllegalArgumentException("an identifier-form XskDatagramPort sends to EthernetPeer "
                        + "(next-hop MAC), not " + describe(destination));
            }
            return a.dstMac(dstMac).srcId(identity);
        }
        if (!(destination instanceof EthernetIpPeer(long dstMac, InetAddress dstIp))) {
            throw new IllegalArgumentException("an " + form + " XskDatagramPort sends to EthernetIpPeer (next-hop MAC "
                    + "+ destination IP), not " + describe(destination));
        }
        boolean familyMatches = form == NetworkForm.IPV4 ? dstIp instanceof Inet4Address : dstIp instanceof Inet6Address;
        if (!familyMatches) {
            throw new IllegalArgumentException("an " + form + " XskDatagramPort cannot send to " + dstIp.getHostAddress()
                    + " (address family of the other IP form)");
        }
        return a.dstMac(dstMac).srcIp(ip).dstIp(dstIp);
    }

    private static String describe(Peer p) {
        return p == null ? "null" : p.getClass().getSimpleName() + " " + p;
    }

    /**
     * Kicks queued frames out, then hands up to {@code limit} received XAF datagrams of this port's form to the
     * handler, in place in the UMEM (valid only during the call). Frames that are not XAF of this form, or whose
     * IPv4 header or UDP checksum is wrong, are dropped and counted; they do not count towards {@code limit}'s
     * delivered total but do consume it.
     */
    @Override
    public int poll(DatagramHandler handler, int limit) {
        if (closed) throw new IllegalStateException(this + " is closed");
        flushQueuedTx();
        if (limit <= 0) return 0;
        currentHandler = handler;
        delivered = 0;
        try {
            socket.receive(receiver, limit);
        } finally {
            currentHandler = null;
        }
        return delivered;
    }

    @Override
    public boolean canAwaitReceive() {
        return true;
    }

    /**
     * Kicks out frames still queued (they would wait for the whole sleep otherwise), then sleeps in poll(2) on the
     * socket and its wake-up eventfd.
     */
    @Override
    public void awaitReceive(long timeoutNanos) {
        if (closed) return;
        flushQueuedTx();
        socket.awaitRx(DatagramPort.awaitMillis(timeoutNanos));
    }

    @Override
    public void wakeup() {
        socket.wakeup();
    }

    private void onFrame(MemorySegment memory, long offset, int length) {
        MemorySegment frame = frameAt(offset);
        ParsedFrame p = parser.parse(frame, Math.min(length, frame.byteSize()));
        if (!p.isXaf() || p.form() != form) {
            foreignFrames++;
            return;
        }
        if (form != NetworkForm.ID && !Checksums.verifyOuter(frame, p)) {
            checksumFailures++;
            return;
        }
        delivered++;
        currentFrame = frame;
        try {
            currentHandler.onDatagram(memory, offset + p.xafOffset(), (int) (XafHeader.LENGTH + p.payloadLength()));
        } finally {
            currentFrame = null;
        }
    }

    /**
     * A segment from UMEM offset {@code offset} to the end of its frame, cached per frame: received data starts
     * at the same headroom every time and transmit frames at their base, so steady state allocates nothing.
     */
    private MemorySegment frameAt(long offset) {
        int index = (int) (offset / Umem.FRAME_SIZE);
        if (frameSliceStarts[index] != offset || frameSlices[index] == null) {
            long end = Umem.frameBase(offset) + Umem.FRAME_SIZE;
            frameSlices[index] = umem.asSlice(offset, end - offset);
            frameSliceStarts[index] = offset;
        }
        return frameSlices[index];
    }

    /** Kicks out frames queued since the last kick, and reaps completions still outstanding. */
    private void flushQueuedTx() {
        if (pendingTx > 0 || socket.txInFlight() > 0) flushTx();
    }

    private void flushTx() {
        socket.flush();
        pendingTx = 0;
    }

    /** The frame being delivered to the handler, for {@link #receivedFrom}. */
    private MemorySegment currentFrame;
    /** Each peer's IP address as bytes, made once per peer (InetAddress hands out copies). */
    private final IdentityHashMap<Peer, MemorySegment> peerIps = new IdentityHashMap<>();

    /**
     * Compares the frame being delivered with the peer: Ethernet source = the peer's MAC (the sender, or the
     * gateway or router it came through) and, for the IP forms, IP source = the peer's IP address.
     */
    @Override
    public boolean receivedFrom(Peer peer) {
        MemorySegment frame = currentFrame;
        if (frame == null) throw new IllegalStateException("receivedFrom outside a DatagramHandler call");
        long mac;
        if (peer instanceof EthernetPeer(long m)) mac = m;
        else if (peer instanceof EthernetIpPeer(long m, InetAddress ip)) mac = m;
        else return false;
        if (PacketDatagramPort.sourceMac(frame) != mac) return false;
        if (form == NetworkForm.ID) return true;
        if (!(peer instanceof EthernetIpPeer ipPeer)) return false;
        MemorySegment ip = peerIps.get(peer);
        if (ip == null) {
            ip = MemorySegment.ofArray(ipPeer.ip().getAddress());
            peerIps.put(peer, ip);
        }
        long srcIp = form == NetworkForm.IPV4 ? 14 + 12 : 14 + 8;
        if (ip.byteSize() != (form == NetworkForm.IPV4 ? 4 : 16)) return false;
        return MemorySegment.mismatch(frame, srcIp, srcIp + ip.byteSize(), ip, 0, ip.byteSize()) < 0;
    }

    @Override
    public Peer localPeer() { return self; }

    /** Frames dropped on receive because they were not XAF frames of this port's form. */
    public long foreignFrames() { return foreignFrames; }

    /** IPv4/IPv6 frames dropped on receive because an IPv4 header or UDP checksum was wrong. */
    public long checksumFailures() { return checksumFailures; }

    /** Sends refused because every transmit frame was in flight. */
    public long txRingFull() { return txRingFull; }

    /** The socket's user-space and kernel counters (XDP_STATISTICS). */
    public XskStats socketStats() { return socket.stats(); }

    /**
     * XAF frames for this endpoint that the XDP program dropped because their job id or token was not this port's
     * (with AF_XDP the kernel-side program checks tokens before the transport sees a frame).
     */
    public long badTokenDrops() {
        return redirect.dataplane().counters().packets(Counter.DROP_BAD_TOKEN);
    }

    /** The installed XDP redirect, for its dataplane counters. */
    public XskRedirect redirect() { return redirect; }

    /**
     * Sends what is still queued, detaches the XDP program (in the namespace the port was built in, whichever
     * thread calls this) and closes the socket. Idempotent.
     */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        try {
            try {
                flushTx();
            } catch (RuntimeException ignored) {
                // the interface may already be gone; closing must still release everything
            }
            closeRedirectInOwnNamespace();
        } finally {
            socket.close();
            Syscalls.close(namespaceFd);
        }
    }

    /**
     * XDP detach goes through netlink, which speaks for the calling thread's namespace: a platform thread enters
     * the port's namespace first so that it never detaches a program from a same-numbered interface elsewhere.
     */
    private void closeRedirectInOwnNamespace() {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = Thread.ofPlatform().name("xsk-port-close").start(() -> {
            try {
                if (Syscalls.setns(namespaceFd, Syscalls.CLONE_NEWNET) < 0) {
                    throw new IllegalStateException("setns to the port's namespace failed: "
                            + Syscalls.strerror(Syscalls.errno()));
                }
                redirect.close();
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while detaching the XDP program", e);
        }
        Throwable e = failure.get();
        if (e instanceof RuntimeException r) throw r;
        if (e instanceof Error err) throw err;
    }

    @Override
    public String toString() {
        return "XskDatagramPort[" + form + ", " + self + ", " + socket + "]";
    }
}
