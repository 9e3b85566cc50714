package io.xaforward.transport;

import io.xaforward.dataplane.sys.FdWaiter;
import io.xaforward.dataplane.sys.InetSockaddr;
import io.xaforward.dataplane.sys.MessageVector;
import io.xaforward.dataplane.sys.SyscallException;
import io.xaforward.dataplane.sys.Syscalls;
import io.xaforward.dataplane.sys.UdpControl;
import io.xaforward.protocol.XafHeader;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Inet6Address;
import java.net.InetSocketAddress;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * XAF over UDP (the IPv4 and IPv6 network forms) on a socket this port owns and drives through the FFM API, moving
 * many datagrams per system call:
 * <ul>
 *   <li><b>send</b>: datagrams claimed back to back for the same destination with the same length form a
 *       <i>train</i> in one contiguous buffer; a train goes to the kernel as one message with {@code UDP_SEGMENT}
 *       (GSO), which cuts it into the original datagrams, and all pending trains go out in one {@code sendmmsg}
 *       ({@link #flush()}, or when the buffer is full). Each datagram on the wire is still one complete XAF datagram:
 *       gateways see every one.</li>
 *   <li><b>receive</b>: {@code UDP_GRO} lets the kernel hand over a train of datagrams of one sender as one message
 *       with their size in a control message; {@code recvmmsg} takes several messages per call; {@link #poll} splits
 *       them back into datagrams, handed to the transport in place.</li>
 * </ul>
 * Where the kernel lacks GSO or GRO (or {@link Offloads} turns them off) the port still batches with
 * sendmmsg/recvmmsg, one datagram per message; a train the kernel refuses to segment is resent datagram by datagram
 * and GSO is turned off for the port ({@link #gsoFallbacks()}). Tests compare both paths byte for byte.
 *
 * <p><b>Flows.</b> With {@code flows} &gt; 1 the port also opens send-only sockets on the next ports (bind port + 1,
 * + 2, ...) and sends each flush's trains from the next of them in turn, so its traffic to one peer is several UDP
 * flows (as NCCL opens several sockets per peer): a receiver's RSS spreads them over its queues and cores, and
 * equal-cost paths over their links. A flush's trains leave in order from one socket, so a flow switches only between
 * bursts and the path keeps the order inside each burst (flowlet switching). Every socket but the first only sends;
 * peers always send to the first. {@link #receivedFrom} then accepts a peer's datagrams from any of its ports
 * [port, port + flows), which is what a sender with the same setting uses and what an XAF gateway with the same
 * {@code src-port-span} writes (docs/PROTOCOL.md §7); every rank of a job uses the same setting.
 *
 * <p>Why: every datagram that takes its own trip through the kernel pays the socket, IP, netfilter and device layers
 * on both hosts; a 64 kB train pays them once (docs/TRANSPORT.md, "Datagrams per system call"). All buffers are
 * allocated up front; nothing is allocated per datagram. One thread uses the port (the transport's event loop);
 * {@link #wakeup()} may be called from any.
 */
public final class UdpDatagramPort implements DatagramPort {
    /** UDP payload limit: 65535 minus the 8-byte UDP header and a 20-byte IPv4 header. */
    public static final int MAX_UDP_DATAGRAM = 65_507;
    public static final int DEFAULT_SOCKET_BUFFER_BYTES = 8 << 20;
    /** Most flows (UDP source ports) one port sends from. */
    public static final int MAX_FLOWS = 64;

    /** Which kernel offloads the port asks for; it falls back by itself where the kernel refuses one. */
    public record Offloads(boolean gso, boolean gro) {
        public static final Offloads ALL = new Offloads(true, true);
        /** Plain sendmmsg/recvmmsg, one datagram per message (the fallback path). */
        public static final Offloads NONE = new Offloads(false, false);
    }

    /** Datagrams one GSO send may carry (the kernel's UDP_MAX_SEGMENTS is at least 64). */
    static final int MAX_SEGMENTS = 64;
    /** Trains one flush may hold; each has a 64 kB slot of the send area. */
    static final int MAX_TRAINS = 16;
    private static final int TRAIN_SPACE = 1 << 16;
    /** Messages one recvmmsg may return; each has a 64 kB slot (a GRO train is at most 64 kB). */
    static final int RECEIVE_MESSAGES = 8;
    private static final int RECEIVE_SPACE = 1 << 16;

    private static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final int EAGAIN = 11, EIO = 5, EINVAL = 22;

    private final int fd;
    /** The sockets the flows send from; sendFds[0] is {@link #fd}, the one that also receives. */
    private final int[] sendFds;
    /** The flow (index into sendFds) the pending trains go out on. */
    private int sendFlow;
    private final int family;
    private final Arena arena = Arena.ofShared();
    private final FdWaiter waiter;
    private final InetPeer localPeer;
    private final int maxDatagramLength;
    private final int maxTrainBytes;
    private boolean gso;
    private final boolean gro;

    // ---- send side: trains in the send area, one message (mmsghdr + iovec) and UDP_SEGMENT control message each
    private final MemorySegment sendArea;
    private final MessageVector sendVector;
    private final MemorySegment sendControl;
    private final int[] trainSlot = new int[MAX_TRAINS];
    private final int[] trainSegment = new int[MAX_TRAINS];
    private final int[] trainCount = new int[MAX_TRAINS];
    private final int[] trainBytes = new int[MAX_TRAINS];
    /** Trains [firstPending, trains) are written and not yet sent. */
    private int trains, firstPending;
    /** The train further datagrams of the same destination and length may join, or -1. */
    private int openTrain = -1;
    private int claimedTrain = -1, claimedLength, claimedSlot;
    private boolean claimStartsTrain;
    /** The kernel said EAGAIN: no claim is taken until the pending trains are out. */
    private boolean blocked;

    // ---- destinations: sockaddr per peer in native memory, and the raw fields a received name is compared with
    private final MemorySegment names;
    private static final int MAX_PEERS = 4096;
    private Peer[] slotPeers = new Peer[16];
    private int[] slotPorts = new int[16];
    private long[] slotHigh = new long[16], slotLow = new long[16];
    private int slots;
    private Peer lastPeer;
    private int lastSlot = -1;

    // ---- receive side
    private final MemorySegment receiveArea;
    private final MessageVector receiveVector;
    private final MemorySegment receiveNames;
    private final MemorySegment receiveControl;
    /** Index of the message whose datagrams are being delivered (for {@link #receivedFrom}), or -1. */
    private int delivering = -1;
    private int matchedMessage = -1;
    private Peer matchedPeer;
    private boolean matchedResult;

    // ---- counters (read racily by other threads for reports)
    private volatile long sendCalls, datagramsSent, receiveCalls, datagramsReceived, sendDrops, gsoFallbacks;

    /** Binds to {@code bind} (port 0 picks a free port), IPv6 when the address is IPv6, with GSO and GRO. */
    public UdpDatagramPort(InetSocketAddress bind) {
        this(bind, MAX_UDP_DATAGRAM, DEFAULT_SOCKET_BUFFER_BYTES);
    }

    /** {@link #UdpDatagramPort(InetSocketAddress)} sending from {@code flows} UDP ports (the class comment). */
    public UdpDatagramPort(InetSocketAddress bind, int flows) {
        this(bind, MAX_UDP_DATAGRAM, DEFAULT_SOCKET_BUFFER_BYTES, Offloads.ALL, flows);
    }

    public UdpDatagramPort(InetSocketAddress bind, int maxDatagramLength, int socketBufferBytes) {
        this(bind, maxDatagramLength, socketBufferBytes, Offloads.ALL);
    }

    public UdpDatagramPort(InetSocketAddress bind, int maxDatagramLength, int socketBufferBytes, Offloads offloads) {
        this(bind, maxDatagramLength, socketBufferBytes, offloads, 1);
    }

    /**
     * @param flows UDP source ports to send from, 1 to {@link #MAX_FLOWS}: the bound port and the ones after it (with
     *              bind port 0, a free run of them); see the class comment
     * @throws SyscallException naming the port when a socket cannot be opened or bound (a flow's port in use)
     */
    public UdpDatagramPort(InetSocketAddress bind, int maxDatagramLength, int socketBufferBytes, Offloads offloads,
                           int flows) {
        if (maxDatagramLength < XafHeader.LENGTH || maxDatagramLength > MAX_UDP_DATAGRAM) {
            throw new IllegalArgumentException("maxDatagramLength " + maxDatagramLength + " is outside ["
                    + XafHeader.LENGTH + ", " + MAX_UDP_DATAGRAM + "]");
        }
        if (flows < 1 || flows > MAX_FLOWS) {
            throw new IllegalArgumentException("flows must be 1 to " + MAX_FLOWS + ", was " + flows);
        }
        if (bind.getPort() != 0 && bind.getPort() + flows - 1 > 0xFFFF) {
            throw new IllegalArgumentException(flows + " flows from port " + bind.getPort() + " pass port 65535");
        }
        this.maxDatagramLength = maxDatagramLength;
        this.maxTrainBytes = MAX_UDP_DATAGRAM;
        family = bind.getAddress() instanceof Inet6Address ? Syscalls.AF_INET6 : Syscalls.AF_INET;
        try {
            names = arena.allocate((long) MAX_PEERS * InetSockaddr.SPACE, 8);
            sendFds = openSockets(bind, flows, socketBufferBytes);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
        fd = sendFds[0];
        try {
            localPeer = new InetPeer(localAddress());
            // Probe both offloads once: a kernel without them answers ENOPROTOOPT and the port batches without.
            gso = offloads.gso() && intOption(Syscalls.UDP_SEGMENT, 0);
            gro = offloads.gro() && intOption(Syscalls.UDP_GRO, 1);
            waiter = new FdWaiter(fd);
        } catch (RuntimeException e) {
            for (int s : sendFds) Syscalls.close(s);
            arena.close();
            throw e;
        }
        sendArea = arena.allocate((long) MAX_TRAINS * TRAIN_SPACE, 64);
        sendVector = MessageVector.allocate(arena, MAX_TRAINS);
        sendControl = arena.allocate((long) MAX_TRAINS * UdpControl.SPACE, 8);
        for (int t = 0; t < MAX_TRAINS; t++) {
            sendVector.buffer(t, sendArea.asSlice((long) t * TRAIN_SPACE), 0);
            UdpControl.prepareSegment(sendControl, (long) t * UdpControl.SPACE);
        }
        receiveArea = arena.allocate((long) RECEIVE_MESSAGES * RECEIVE_SPACE, 64);
        receiveVector = MessageVector.allocate(arena, RECEIVE_MESSAGES);
        receiveNames = arena.allocate((long) RECEIVE_MESSAGES * InetSockaddr.SPACE, 8);
        receiveControl = arena.allocate((long) RECEIVE_MESSAGES * UdpControl.SPACE, 8);
        for (int i = 0; i < RECEIVE_MESSAGES; i++) {
            receiveVector.buffer(i, receiveArea.asSlice((long) i * RECEIVE_SPACE), RECEIVE_SPACE);
            receiveVector.name(i, receiveNames.address() + (long) i * InetSockaddr.SPACE, InetSockaddr.SPACE);
            receiveVector.control(i, receiveControl.address() + (long) i * UdpControl.SPACE, UdpControl.SPACE);
        }
    }

    /**
     * Opens and binds the flows' sockets: the first on {@code bind}, flow i on its port + i. With port 0 the kernel
     * picks the first port; when one after it is taken, the run is given up and tried again from a new one.
     */
    private int[] openSockets(InetSocketAddress bind, int flows, int bufferBytes) {
        int[] fds = new int[flows];
        MemorySegment address = arena.allocate(InetSockaddr.SPACE, 8);
        for (int attempt = 0; ; attempt++) {
            int opened = 0;
            try {
                int base = bind.getPort();
                for (int i = 0; i < flows; i++) {
                    InetSocketAddress at = i == 0 ? bind : new InetSocketAddress(bind.getAddress(), base + i);
                    int s = Syscalls.socket(family, Syscalls.SOCK_DGRAM | Syscalls.SOCK_NONBLOCK | Syscalls.SOCK_CLOEXEC, 0);
                    if (s < 0) throw new SyscallException("cannot open a UDP socket for " + at, Syscalls.errno());
                    fds[opened++] = s;
                    // Only the first socket receives; the others need room to send.
                    if (i == 0) bufferSize(s, Syscalls.SO_RCVBUFFORCE, Syscalls.SO_RCVBUF, bufferBytes);
                    bufferSize(s, Syscalls.SO_SNDBUFFORCE, Syscalls.SO_SNDBUF, bufferBytes);
                    int length = InetSockaddr.write(address, family, at);
                    if (Syscalls.bind(s, address, length) < 0) {
                        throw new SyscallException(i == 0 ? "cannot bind a UDP port on " + at
                                : "cannot bind flow " + i + " of " + flows + " on " + at, Syscalls.errno());
                    }
                    if (i == 0 && base == 0) base = portOf(s);
                    if (base + flows - 1 > 0xFFFF) {
                        throw new SyscallException(flows + " flows from port " + base + " pass port 65535", EINVAL);
                    }
                }
                return fds;
            } catch (SyscallException e) {
                for (int i = 0; i < opened; i++) Syscalls.close(fds[i]);
                if (bind.getPort() != 0 || flows == 1 || attempt == 8) throw e;
            }
        }
    }

    private void bufferSize(int socket, int forced, int plain, int bytes) {
        // The FORCE variants pass the sysctl limits (root); otherwise the kernel caps the request at rmem/wmem_max.
        if (!intOption(socket, Syscalls.SOL_SOCKET, forced, bytes)) intOption(socket, Syscalls.SOL_SOCKET, plain, bytes);
    }

    private boolean intOption(int name, int value) {
        return intOption(fd, Syscalls.SOL_UDP, name, value);
    }

    private static boolean intOption(int socket, int level, int name, int value) {
        try (Arena a = Arena.ofConfined()) {
            return Syscalls.setsockopt(socket, level, name, a.allocateFrom(ValueLayout.JAVA_INT, value), 4) == 0;
        }
    }

    private static int portOf(int socket) {
        return socketName(socket).getPort();
    }

    private InetSocketAddress localAddress() {
        return socketName(fd);
    }

    private static InetSocketAddress socketName(int socket) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment address = a.allocate(InetSockaddr.SPACE, 8);
            MemorySegment length = a.allocateFrom(ValueLayout.JAVA_INT, InetSockaddr.SPACE);
            if (Syscalls.getsockname(socket, address, length) < 0) {
                throw new SyscallException("getsockname", Syscalls.errno());
            }
            return InetSockaddr.read(address);
        }
    }

    /** Whether sends are segmented by the kernel (UDP_SEGMENT); false after a fallback. */
    public boolean gsoEnabled() { return gso; }
    /** Whether receives return trains (UDP_GRO). */
    public boolean groEnabled() { return gro; }
    /** UDP source ports this port sends from (its own and the ones after it). */
    public int flows() { return sendFds.length; }
    /** sendmmsg calls made. */
    public long sendCalls() { return sendCalls; }
    /** Datagrams handed to the kernel. */
    public long datagramsSent() { return datagramsSent; }
    /** recvmmsg calls that returned data. */
    public long receiveCalls() { return receiveCalls; }
    /** Datagrams delivered to handlers. */
    public long datagramsReceived() { return datagramsReceived; }
    /** Datagrams accepted by a commit but refused by the kernel later (the transport's recovery resends them). */
    public long sendDrops() { return sendDrops; }
    /** Trains the kernel refused to segment and that went out datagram by datagram (GSO is then off). */
    public long gsoFallbacks() { return gsoFallbacks; }

    @Override
    public int maxDatagramLength() {
        return maxDatagramLength;
    }

    // ------------------------------------------------------------------ send

    @Override
    public boolean send(MemorySegment buffer, long offset, int length, Peer destination) {
        long at = claim(length, destination);
        if (at < 0) return false;
        MemorySegment.copy(buffer, offset, sendArea, at, length);
        return commitClaim();
    }

    /**
     * Claims room for one datagram in a train: the open train when it goes to the same destination, has room and
     * the datagram is no longer than its segment size; otherwise a new train. A datagram shorter than its train's
     * segment size closes the train (the kernel allows only the last segment to be short).
     */
    @Override
    public long claim(int length, Peer destination) {
        int slot = slotOf(destination);
        if (length > maxDatagramLength || length < 0) {
            throw new IllegalArgumentException("datagram of " + length + " bytes exceeds the port limit of "
                    + maxDatagramLength + " bytes");
        }
        if (blocked && !drain()) {
            return CLAIM_FULL;
        }
        int t = openTrain;
        if (t >= 0 && trainSlot[t] == slot && length <= trainSegment[t] && trainCount[t] < MAX_SEGMENTS
                && trainBytes[t] + length <= maxTrainBytes) {
            claimedTrain = t;
            claimedLength = length;
            claimStartsTrain = false;
            return (long) t * TRAIN_SPACE + trainBytes[t];
        }
        if (trains == MAX_TRAINS && !drain()) {
            return CLAIM_FULL;
        }
        claimedTrain = trains;
        claimedLength = length;
        claimedSlot = slot;
        claimStartsTrain = true;
        return (long) trains * TRAIN_SPACE;
    }

    @Override
    public boolean supportsClaim() {
        return true;
    }

    @Override
    public MemorySegment claimSegment() {
        return sendArea;
    }

    /** Adds the claimed datagram to its train; the kernel gets it at the next {@link #flush()}. */
    @Override
    public boolean commitClaim() {
        int t = claimedTrain;
        if (t < 0) throw new IllegalStateException("commitClaim without a claim");
        claimedTrain = -1;
        if (claimStartsTrain) {
            trains++;
            trainSlot[t] = claimedSlot;
            trainSegment[t] = claimedLength;
            trainCount[t] = 1;
            trainBytes[t] = claimedLength;
            openTrain = gso ? t : -1;
        } else {
            trainCount[t]++;
            trainBytes[t] += claimedLength;
            if (claimedLength < trainSegment[t]) openTrain = -1;
        }
        return true;
    }

    /** Sends every pending train; what the kernel cannot take now (EAGAIN) stays queued for the next flush. */
    @Override
    public void flush() {
        if (trains > firstPending) drain();
    }

    /** Whether datagrams are queued that the kernel has not taken yet. */
    public boolean hasPendingSends() {
        return trains > firstPending;
    }

    /** Sends trains [firstPending, trains); true when all are out (the send area is then free again). */
    private boolean drain() {
        openTrain = -1;
        // A new burst takes the next flow; one the kernel took only part of stays on its flow, in order.
        if (firstPending == 0 && !blocked && sendFds.length > 1) sendFlow = sendFlow + 1 == sendFds.length ? 0 : sendFlow + 1;
        int socket = sendFds[sendFlow];
        while (firstPending < trains) {
            int first = firstPending;
            int n = trains - first;
            for (int t = first; t < trains; t++) {
                sendVector.bufferLength(t, trainBytes[t]);
                // Raw addresses, not slices: nothing is allocated per flush.
                sendVector.name(t, names.address() + (long) trainSlot[t] * InetSockaddr.SPACE, InetSockaddr.length(family));
                boolean segmented = trainCount[t] > 1;
                if (segmented) {
                    UdpControl.segmentSize(sendControl, (long) t * UdpControl.SPACE, trainSegment[t]);
                    sendVector.control(t, sendControl.address() + (long) t * UdpControl.SPACE, UdpControl.SPACE);
                } else {
                    sendVector.control(t, 0L, 0);
                }
            }
            int sent = Syscalls.sendmmsg(socket, sendVector.from(first), n, Syscalls.MSG_DONTWAIT);
            if (sent > 0) {
                sendCalls++;
                long datagrams = 0;
                for (int t = first; t < first + sent; t++) datagrams += trainCount[t];
                datagramsSent += datagrams;
                firstPending += sent;
                continue;
            }
            int errno = Syscalls.errno();
            if (errno == Syscalls.EINTR) continue;
            if (errno == EAGAIN) {
                blocked = true;
                return false;
            }
            if ((errno == EIO || errno == EINVAL) && trainCount[first] > 1) {
                // The kernel would not segment this train (no checksum offload on the route, an MTU below the
                // segment size...): send its datagrams one by one, and stop building trains.
                gso = false;
                gsoFallbacks++;
                if (!sendSingly(first)) return false;
                firstPending++;
                continue;
            }
            // Unreachable route, firewall, message too long: the train is lost; the transport recovers the chunks.
            sendDrops += trainCount[first];
            firstPending++;
        }
        trains = 0;
        firstPending = 0;
        blocked = false;
        return true;
    }

    /** Sends the datagrams of train {@code t} as messages of their own; false (train kept) on EAGAIN. */
    private boolean sendSingly(int t) {
        int count = trainCount[t], segment = trainSegment[t], bytes = trainBytes[t];
        long base = (long) t * TRAIN_SPACE;
        int done = 0;
        for (int i = 0; i < count; i++) {
            int length = Math.min(segment, bytes - i * segment);
            long r = Syscalls.sendto(sendFds[sendFlow], sendArea.asSlice(base + (long) i * segment, length), length,
                    Syscalls.MSG_DONTWAIT, names.asSlice((long) trainSlot[t] * InetSockaddr.SPACE),
                    InetSockaddr.length(family));
            if (r < 0 && Syscalls.errno() == EAGAIN) {
                // Keep the rest as a train of its own that starts at datagram i (moved to the slot's start).
                MemorySegment.copy(sendArea, base + (long) i * segment, sendArea, base, bytes - (long) i * segment);
                trainCount[t] = count - i;
                trainBytes[t] = bytes - i * segment;
                blocked = true;
                datagramsSent += done;
                return false;
            }
            if (r < 0) sendDrops++; else done++;
        }
        datagramsSent += done;
        return true;
    }

    // ------------------------------------------------------------------ receive

    @Override
    public int poll(DatagramHandler handler, int limit) {
        int delivered = 0;
        while (delivered < limit) {
            for (int i = 0; i < RECEIVE_MESSAGES; i++) {
                receiveVector.nameLength(i, InetSockaddr.SPACE);
                receiveVector.controlLength(i, UdpControl.SPACE);
            }
            int received = Syscalls.recvmmsg(fd, receiveVector.from(0), RECEIVE_MESSAGES, Syscalls.MSG_DONTWAIT);
            if (received < 0) {
                int errno = Syscalls.errno();
                if (errno == Syscalls.EINTR) continue;
                if (errno == EAGAIN) break;
                continue; // a queued ICMP error: the next call returns data or EAGAIN
            }
            if (received == 0) break;
            receiveCalls++;
            for (int i = 0; i < received; i++) {
                delivered += deliver(handler, i);
            }
            if (received < RECEIVE_MESSAGES) break;
        }
        datagramsReceived += delivered;
        return delivered;
    }

    /** Hands the datagrams of received message {@code i} to the handler, split at the GRO segment size. */
    private int deliver(DatagramHandler handler, int i) {
        int length = receiveVector.messageLength(i);
        int groSegment = UdpControl.groSegmentSize(receiveControl, (long) i * UdpControl.SPACE,
                receiveVector.controlLength(i));
        int segment = groSegment > 0 ? groSegment : length;
        long base = (long) i * RECEIVE_SPACE;
        int count = 0;
        delivering = i;
        try {
            for (int offset = 0; offset < length || count == 0; offset += segment) {
                handler.onDatagram(receiveArea, base + offset, Math.min(segment, length - offset));
                count++;
                if (segment == 0) break;
            }
        } finally {
            delivering = -1;
        }
        return count;
    }

    @Override
    public boolean receivedFrom(Peer peer) {
        int i = delivering;
        if (i < 0) throw new IllegalStateException("receivedFrom outside a DatagramHandler call");
        if (i == matchedMessage && peer == matchedPeer) return matchedResult;
        int slot = slotOf(peer, false);
        boolean match = false;
        if (slot >= 0) {
            long name = (long) i * InetSockaddr.SPACE;
            int port = InetSockaddr.port(receiveNames, name);
            // an IPv4 sender is compared in the IPv4-mapped form
            long high = InetSockaddr.mappedHigh(receiveNames, name);
            long low = InetSockaddr.mappedLow(receiveNames, name);
            // A peer sends from its port and the flows after it (the class comment).
            match = Integer.compareUnsigned(port - slotPorts[slot], sendFds.length) < 0
                    && high == slotHigh[slot] && low == slotLow[slot];
        }
        matchedMessage = i;
        matchedPeer = peer;
        matchedResult = match;
        return match;
    }

    @Override
    public boolean canAwaitReceive() {
        return true;
    }

    /** poll(2) on the socket (and for room to send, while trains wait for it) beside a wake-up eventfd. */
    @Override
    public void awaitReceive(long timeoutNanos) {
        matchedMessage = -1; // received names are about to be overwritten
        boolean pending = hasPendingSends();
        short events = pending && sendFlow == 0 ? (short) (Syscalls.POLLIN | Syscalls.POLLOUT) : Syscalls.POLLIN;
        try {
            waiter.await(events, DatagramPort.awaitMillis(timeoutNanos), pending && sendFlow != 0 ? sendFds[sendFlow] : -1);
        } catch (SyscallException e) {
            // Closed under us: return, and the event loop sees why on its next pass.
        }
    }

    @Override
    public void wakeup() {
        waiter.wakeup();
    }

    // ------------------------------------------------------------------ addresses

    private int slotOf(Peer destination) {
        return slotOf(destination, true);
    }

    /** The slot of a destination's sockaddr, added on first use (allocates only then); -1 if absent and !add. */
    private int slotOf(Peer destination, boolean add) {
        if (destination == lastPeer) return lastSlot;
        for (int s = 0; s < slots; s++) {
            if (slotPeers[s] == destination) return remember(destination, s);
        }
        for (int s = 0; s < slots; s++) {
            if (slotPeers[s].equals(destination)) return remember(destination, s);
        }
        if (!(destination instanceof InetPeer(InetSocketAddress address)) || address.getAddress() == null) {
            if (!add) return -1;
            throw new IllegalArgumentException("UDP port cannot send to " + destination);
        }
        if (family == Syscalls.AF_INET && address.getAddress() instanceof Inet6Address) {
            if (!add) return -1;
            throw new IllegalArgumentException("an IPv4 UDP port cannot send to the IPv6 address " + address);
        }
        if (slots == MAX_PEERS) throw new IllegalStateException("more than " + MAX_PEERS + " UDP destinations");
        if (slots == slotPeers.length) {
            slotPeers = Arrays.copyOf(slotPeers, 2 * slots);
            slotPorts = Arrays.copyOf(slotPorts, 2 * slots);
            slotHigh = Arrays.copyOf(slotHigh, 2 * slots);
            slotLow = Arrays.copyOf(slotLow, 2 * slots);
        }
        int s = slots++;
        slotPeers[s] = destination;
        InetSockaddr.write(names.asSlice((long) s * InetSockaddr.SPACE, InetSockaddr.SPACE), family, address);
        byte[] mapped = InetSockaddr.mapped(address.getAddress());
        slotPorts[s] = address.getPort();
        slotHigh[s] = MemorySegment.ofArray(mapped).get(BE_LONG, 0);
        slotLow[s] = MemorySegment.ofArray(mapped).get(BE_LONG, 8);
        return remember(destination, s);
    }

    private int remember(Peer peer, int slot) {
        lastPeer = peer;
        lastSlot = slot;
        return slot;
    }

    @Override
    public InetPeer localPeer() {
        return localPeer;
    }

    private boolean closed;

    /** Closes the socket and frees the buffers; idempotent. Datagrams not yet flushed are dropped. */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        waiter.close();
        for (int s : sendFds) Syscalls.close(s);
        arena.close();
    }

    @Override
    public String toString() {
        return "UdpDatagramPort[" + localPeer + (gso ? ", gso" : "") + (gro ? ", gro" : "")
                + (sendFds.length > 1 ? ", " + sendFds.length + " flows" : "") + "]";
    }
}
