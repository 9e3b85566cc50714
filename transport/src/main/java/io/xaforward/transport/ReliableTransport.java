package io.xaforward.transport;

import io.xaforward.protocol.XafHeader;
import io.xaforward.transport.TransportStats.Counter;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Moves whole gradient messages reliably between ranks over an unreliable {@link DatagramPort}: one instance per rank.
 *
 * <p>A message is cut into chunks of at most {@link TransportConfig#maxPayload()} bytes, each sent as one XAF DATA
 * datagram carrying the destination's network index identifier, the job id and token, a ones'-complement sum of its
 * payload and the end-to-end seal of the configured {@link WireSecurity} (CRC32C over header and payload, plus an
 * HMAC tag and sequence number or AES-GCM encryption keyed by the job secret), checked before any byte is used. The
 * receiver hands every chunk exactly once to a {@link ChunkSink}, keeps a bitmap of received
 * chunks and answers with ACK datagrams (cumulative index + SACK bitmap). The sender keeps a window of chunks in flight
 * per peer, retransmits on a timeout derived from the measured round trip with exponential backoff, and at once for
 * gaps the SACK bitmap reveals; an optional token bucket paces everything it sends. docs/TRANSPORT.md has the details.
 *
 * <p>Threading: all protocol work happens in {@link #doWork()} on one thread: either the transport's own thread
 * ({@link #start()}) or a caller that drives it. {@link #send} and {@link #expect} may be called from any thread; they
 * only enqueue. Futures complete on the event-loop thread, so dependent stages should be light or use the
 * {@code *Async} variants. Buffers passed to send/expect must stay valid and untouched until their future completes.
 */
public final class ReliableTransport implements AutoCloseable {
    private static final int POLL_BATCH = 64;
    private static final int SEND_BATCH = 64;
    private static final int COMPLETED_MEMORY = 4096;
    private static final long TIMER_CHECK_INTERVAL_NANOS = 1_000_000;
    /** Idle passes of the event loop spent spinning before it sleeps (each pass polls the port once). */
    private static final int SPIN_PASSES = 32;
    /**
     * Longest sleep while a message is open: well under the smallest retransmission timeout, so timers fire at most
     * this late. Arrivals and submissions wake the loop at once.
     */
    private static final long BUSY_SLEEP_NANOS = 1_000_000;
    /** Longest sleep with nothing open (no timer can be due); arrivals and submissions still wake the loop. */
    private static final long IDLE_SLEEP_NANOS = 50_000_000;

    private final TransportConfig config;
    private final NanoClock clock;
    private final AddressBook addressBook;
    private final DatagramPort port;
    private final TransportStats stats = new TransportStats();
    private final PeerState[] peers;
    private final ConcurrentLinkedQueue<Object> submissions = new ConcurrentLinkedQueue<>();
    private final LongArrayPool pool = new LongArrayPool();
    private final ArrayList<InboundMessage> ackPending = new ArrayList<>();

    private final XafHeader txHeader = new XafHeader();
    private final XafHeader rxHeader = new XafHeader();
    private final ByteBuffer txBuffer;
    private final MemorySegment txSegment;
    /** The port's claim-then-write memory (data chunks are written there in place), or null if it has none. */
    private final MemorySegment claimSegment;
    private final WireSeal seal;
    /** Message bytes per chunk (the payload less the seal's trailer). */
    private final int chunkData;
    /** A freshly initialised header, copied over the send buffer instead of XafHeader.init() (which slices). */
    private final MemorySegment headerTemplate;
    private final DatagramHandler receiveHandler = this::onDatagram;

    /** Recently completed inbound messages, so that a retransmission after a lost final ACK is answered. */
    private final RecentMessages received = new RecentMessages(COMPLETED_MEMORY);
    /** Recently completed outbound messages, so that a reused message id is refused. */
    private final RecentMessages sent = new RecentMessages(COMPLETED_MEMORY);

    private final long initialRtoNanos;
    private final long minRtoNanos;
    private final long maxRtoNanos;
    private final long ackTimeoutNanos;
    private final long receiveTimeoutNanos;
    private final double pacingBytesPerNano;
    private final double pacingBurst;
    private double tokens;
    private long lastRefillNanos;
    private long nextTimerCheckNanos;
    private int peerCursor;
    private long nowNanos;
    private long lastSendStamp;

    private volatile boolean closed;
    private volatile Thread thread;
    /** The event loop is (about to be) asleep in {@link DatagramPort#awaitReceive}: submissions must wake it. */
    private volatile boolean sleeping;
    /** Why the event loop died, or null while it runs. */
    private volatile Throwable crashed;
    private final long busySleepNanos;
    private final int ackEveryChunks;
    private final long ackDelayNanos;

    /** Takes ownership of {@code port} (closed with the transport). */
    public ReliableTransport(TransportConfig config, AddressBook addressBook, DatagramPort port) {
        this.config = Objects.requireNonNull(config, "config");
        this.addressBook = Objects.requireNonNull(addressBook, "addressBook");
        this.port = Objects.requireNonNull(port, "port");
        this.clock = config.clock();
        int datagram = XafHeader.LENGTH + config.maxPayload();
        if (datagram > port.maxDatagramLength()) {
            throw new IllegalArgumentException("chunk payload of " + config.maxPayload() + " bytes plus the "
                    + XafHeader.LENGTH + "-byte XAF header exceeds the port's datagram limit of "
                    + port.maxDatagramLength() + " bytes");
        }
        seal = new WireSeal(config.wireSecurity(), config.secret(), Math.max(datagram,
                XafHeader.LENGTH + AckPayload.MAX_LENGTH + WireSeal.TRAILER_BYTES));
        chunkData = config.chunkDataBytes();
        txBuffer = ByteBuffer.allocateDirect(Math.max(datagram,
                XafHeader.LENGTH + AckPayload.MAX_LENGTH + seal.trailerLength()));
        txSegment = MemorySegment.ofBuffer(txBuffer);
        claimSegment = port.supportsClaim() ? port.claimSegment() : null;
        headerTemplate = MemorySegment.ofArray(new byte[XafHeader.LENGTH]);
        new XafHeader().wrap(headerTemplate, 0).init();
        peers = new PeerState[addressBook.rankLimit()];
        for (int rank = 0; rank < peers.length; rank++) {
            if (addressBook.contains(rank) && rank != config.localRank()) {
                peers[rank] = new PeerState(rank, addressBook.networkId(rank), addressBook.peer(rank),
                        config.windowChunks());
                // Sequence numbers start from the clock, so a restarted rank continues above its old ones.
                peers[rank].txSequence = System.currentTimeMillis() << 20;
            }
        }
        initialRtoNanos = config.initialRto().toNanos();
        minRtoNanos = config.minRto().toNanos();
        maxRtoNanos = config.maxRto().toNanos();
        ackTimeoutNanos = config.ackTimeout().toNanos();
        receiveTimeoutNanos = config.receiveTimeout().toNanos();
        long rate = config.pacingRateBytesPerSecond();
        pacingBytesPerNano = rate / 1e9;
        long burst = config.pacingBurstBytes() > 0 ? config.pacingBurstBytes()
                : Math.max(4L * datagram, rate / 200); // 5 ms of traffic
        pacingBurst = burst;
        busySleepNanos = Math.min(BUSY_SLEEP_NANOS, config.minRto().toNanos());
        // Every chunk ACKed at once when the delay is 0 or the count is 1 (the behaviour before delayed ACKs).
        ackEveryChunks = config.ackDelay().isZero() ? 1 : config.ackEveryChunks();
        ackDelayNanos = ackEveryChunks == 1 ? 0 : config.ackDelay().toNanos();
        tokens = burst;
        lastRefillNanos = clock.nanoTime();
    }

    public TransportConfig config() { return config; }

    /**
     * The round-trip estimate and retransmission timeout per peer, for diagnostics ("rank 1: srtt 1.2 ms, rttvar
     * 0.3 ms, max 9.8 ms, rto 5.0 ms; ..."). Read racily from another thread: good enough for a log line.
     */
    public String peerSummary() {
        StringBuilder sb = new StringBuilder();
        for (PeerState p : peers) {
            if (p == null) continue;
            if (!sb.isEmpty()) sb.append("; ");
            sb.append(String.format(java.util.Locale.ROOT,
                    "rank %d: srtt %.2f ms, rttvar %.2f ms, max %.2f ms, rto %.2f ms, cwnd %.1f, ssthresh %.1f",
                    p.rank, p.srttNanos / 1e6, p.rttVarNanos / 1e6, p.maxRttNanos / 1e6,
                    p.rtoNanos(initialRtoNanos, minRtoNanos, maxRtoNanos) / 1e6, p.cwnd, p.ssthresh));
        }
        return sb.toString();
    }
    public TransportStats stats() { return stats; }

    // ---------------------------------------------------------------- submission (any thread)

    /** Sends {@code data} as message {@code id} to {@code dstRank}; the future completes when every chunk is acked. */
    public CompletableFuture<Void> send(int dstRank, MessageId id, MemorySegment data) {
        return send(dstRank, id, data, 0);
    }

    /** As {@link #send(int, MessageId, MemorySegment)}, stating the element type (xaf_elem_type) in the header. */
    public CompletableFuture<Void> send(int dstRank, MessageId id, MemorySegment data, int elemType) {
        Objects.requireNonNull(data, "data");
        PeerState peer = remotePeer(dstRank, id);
        checkSize(data.byteSize());
        long chunks = chunkCountOf(data.byteSize());
        if (chunks > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("message of " + data.byteSize() + " bytes needs more than 2^31 chunks");
        }
        OutboundMessage message = new OutboundMessage(peer, id, data, elemType);
        message.chunkSize = chunkData;
        message.chunkCount = (int) chunks;
        submit(message);
        return message.future;
    }

    /** Expects message {@code id} from {@code srcRank} and copies it into {@code dest} (exactly its size). */
    public CompletableFuture<Void> expect(int srcRank, MessageId id, MemorySegment dest) {
        return expect(srcRank, id, dest, ChunkSink.COPY);
    }

    /**
     * Expects message {@code id} from {@code srcRank}, {@code dest.byteSize()} bytes long, and calls {@code sink} once
     * per chunk. Post it before the peer sends: chunks that arrive earlier are dropped and recovered by retransmission.
     */
    public CompletableFuture<Void> expect(int srcRank, MessageId id, MemorySegment dest, ChunkSink sink) {
        Objects.requireNonNull(dest, "dest");
        Objects.requireNonNull(sink, "sink");
        PeerState peer = remotePeer(srcRank, id);
        checkSize(dest.byteSize());
        InboundMessage message = new InboundMessage(peer, id, dest, sink);
        // The geometry comes from the posted receive: every rank of a job cuts messages into the same chunks.
        message.chunkSize = chunkData;
        message.chunkCount = (int) chunkCountOf(dest.byteSize());
        submit(message);
        return message.future;
    }

    private long chunkCountOf(long bytes) {
        return bytes == 0 ? 1 : (bytes + chunkData - 1) / chunkData;
    }

    private PeerState remotePeer(int rank, MessageId id) {
        Objects.requireNonNull(id, "id");
        if (id.jobId() != config.jobId()) {
            throw new IllegalArgumentException("message " + id + " belongs to job " + id.jobId()
                    + " but this transport serves job " + config.jobId());
        }
        if (rank == config.localRank()) {
            throw new IllegalArgumentException("rank " + rank + " is this transport's own rank");
        }
        if (rank < 0 || rank >= peers.length || peers[rank] == null) {
            throw new IllegalArgumentException("rank " + rank + " is not in the address book");
        }
        return peers[rank];
    }

    private void checkSize(long bytes) {
        if (bytes > config.maxMessageBytes()) {
            throw new IllegalArgumentException("message of " + bytes + " bytes exceeds the configured limit of "
                    + config.maxMessageBytes() + " bytes");
        }
    }

    private void submit(Object message) {
        if (closed) {
            throw new IllegalStateException("transport of rank " + config.localRank() + " is closed");
        }
        submissions.add(message);
        if (crashed != null) {
            failSubmissions(stoppedReason()); // the loop is gone: nobody else will
        } else if (sleeping) {
            port.wakeup();
        }
    }

    private IllegalStateException stoppedReason() {
        return new IllegalStateException("transport of rank " + config.localRank() + " stopped: " + crashed, crashed);
    }

    // ---------------------------------------------------------------- event loop

    /** Starts a daemon thread that runs {@link #doWork()}, spinning briefly and then parking when idle. */
    public synchronized ReliableTransport start() {
        if (thread != null) {
            throw new IllegalStateException("already started");
        }
        Thread t = new Thread(this::runLoop, "xaf-transport-rank-" + config.localRank());
        t.setDaemon(true);
        thread = t;
        t.start();
        return this;
    }

    private void runLoop() {
        try {
            loop();
        } catch (RuntimeException | Error e) {
            // A bug or a bad address must not leave every caller waiting for its timeout: fail them all now, and
            // every later submission at once (close() still closes the port).
            crashed = e;
            failEverything(stoppedReason());
            throw e;
        }
    }

    private void loop() {
        int idle = 0;
        while (!closed) {
            if (doWork() > 0) {
                idle = 0;
            } else if (++idle < SPIN_PASSES) {
                Thread.onSpinWait();
            } else if (port.canAwaitReceive() && pacingBytesPerNano == 0) {
                sleepUntilWoken();
            } else {
                // No Thread.yield(): on a busy host it can cost a whole scheduler slice, starving the pacer.
                LockSupport.parkNanos(idle < 256 ? 10_000 : 50_000);
            }
        }
    }

    /**
     * Sleeps in the port until a datagram arrives, a message is submitted ({@link #submit} wakes the port) or the
     * next timer may be due. Polling instead (a wake-up every few tens of microseconds) cost an idle transport about
     * a tenth of a CPU on an idle machine ({@code IdleTransportTest}) and more under contention, taken from the
     * training on a shared core.
     */
    private void sleepUntilWoken() {
        sleeping = true;
        // Dekker with submit(): it adds, then reads sleeping; we set sleeping, then read the queue. One sees the other.
        if (submissions.isEmpty() && !closed) {
            port.awaitReceive(!ackPending.isEmpty() ? Math.min(busySleepNanos, Math.max(1, ackDelayNanos))
                    : hasTimersRunning() ? busySleepNanos : IDLE_SLEEP_NANOS);
        }
        sleeping = false;
    }

    /** Whether a retransmission, loss or message timer may fire: any message in either direction still open. */
    private boolean hasTimersRunning() {
        for (PeerState peer : peers) {
            if (peer != null && (!peer.outbound.isEmpty() || !peer.inbound.isEmpty() || peer.inFlight > 0)) {
                return true;
            }
        }
        return false;
    }

    /** One pass of the event loop; returns the amount of work done (0 = idle). Call from one thread only. */
    public int doWork() {
        nowNanos = clock.nanoTime();
        int work = drainSubmissions();
        work += port.poll(receiveHandler, POLL_BATCH);
        work += flushAcks();
        work += checkRetransmitTimers();
        if (nowNanos - nextTimerCheckNanos >= 0) {
            nextTimerCheckNanos = nowNanos + TIMER_CHECK_INTERVAL_NANOS;
            work += checkMessageTimeouts();
        }
        work += sendData();
        port.flush();
        return work;
    }

    private int drainSubmissions() {
        int work = 0;
        Object next;
        while ((next = submissions.poll()) != null) {
            work++;
            if (next instanceof OutboundMessage out) {
                admit(out);
            } else if (next instanceof InboundMessage in) {
                admit(in);
            }
        }
        return work;
    }

    private void admit(OutboundMessage message) {
        PeerState peer = message.peer;
        if (sent.contains(peer.rank, message.id.step(), message.id.bucketId(), -1)) {
            message.future.completeExceptionally(new IllegalStateException("message " + message.id
                    + " was already sent to rank " + peer.rank + ": message ids must not be reused"));
            return;
        }
        for (OutboundMessage other : peer.outbound) {
            if (other.matches(message.id.step(), message.id.bucketId())) {
                message.future.completeExceptionally(new IllegalStateException("message " + message.id
                        + " to rank " + peer.rank + " is already being sent"));
                return;
            }
        }
        message.words = Bitmaps.wordsFor(message.chunkCount);
        message.bits = pool.acquire(4 * message.words);
        message.lastSent = pool.acquire(message.chunkCount);
        peer.outbound.add(message);
    }

    private void admit(InboundMessage message) {
        PeerState peer = message.peer;
        if (received.contains(peer.rank, message.id.step(), message.id.bucketId(), -1)) {
            message.future.completeExceptionally(new IllegalStateException("message " + message.id
                    + " was already received from rank " + peer.rank + ": message ids must not be reused"));
            return;
        }
        for (InboundMessage other : peer.inbound) {
            if (other.matches(message.id.step(), message.id.bucketId())) {
                message.future.completeExceptionally(new IllegalStateException("message " + message.id
                        + " from rank " + peer.rank + " is already expected"));
                return;
            }
        }
        message.lastActivityNanos = nowNanos;
        message.words = Bitmaps.wordsFor(message.chunkCount);
        message.received = pool.acquire(message.words);
        peer.inbound.add(message);
        if (peer.unexpectedMatches(message.id.step(), message.id.bucketId(), message.chunkCount)) {
            sendNack(peer, message);
        }
    }

    /**
     * Chunks of this message arrived before it was expected and were dropped: tell the sender which (a NACK with
     * the dropped chunks as its bitmap), so that it resends them now instead of after a retransmission timeout,
     * and without taking the drops for congestion.
     */
    private void sendNack(PeerState peer, InboundMessage message) {
        int base = peer.unexpectedBase;
        long[] dropped = peer.unexpectedDropped;
        int sackWords = 0;
        for (int w = 0; w < dropped.length; w++) {
            if (dropped[w] != 0) {
                sackWords = w + 1;
            }
        }
        long at = XafHeader.LENGTH;
        AckPayload.writeFixed(txSegment, at, base, message.chunkCount, 0, sackWords);
        for (int w = 0; w < sackWords; w++) {
            AckPayload.writeSackWord(txSegment, at, w, dropped[w]);
        }
        peer.forgetUnexpected();
        if (transmit(peer, writeHeader(peer, 3, 0, 0, message.id.step(), message.id.bucketId(), base,
                message.chunkCount, AckPayload.length(sackWords)))) {
            stats.increment(Counter.NACKS_SENT);
        }
    }

    // ---------------------------------------------------------------- receive path

    private void onDatagram(MemorySegment segment, long offset, int length) {
        stats.increment(Counter.PACKETS_RECEIVED);
        stats.add(Counter.BYTES_RECEIVED, length);
        if (length < XafHeader.LENGTH) {
            stats.increment(Counter.MALFORMED_DROPS);
            return;
        }
        XafHeader h = rxHeader.wrap(segment, offset);
        int payloadLength = h.payloadLength();
        if (h.magic() != (XafHeader.MAGIC & 0xFFFF) || h.version() != XafHeader.VERSION
                || h.hdrLen() != XafHeader.LENGTH || XafHeader.LENGTH + payloadLength > length) {
            stats.increment(Counter.MALFORMED_DROPS);
            return;
        }
        if (h.jobId() != config.jobId() || h.jobToken() != config.jobToken()) {
            stats.increment(Counter.BAD_TOKEN_DROPS);
            return;
        }
        if (h.dstRank() != config.localRank()) {
            stats.increment(Counter.MISDIRECTED_DROPS);
            return;
        }
        int src = h.srcRank();
        PeerState peer = src < peers.length ? peers[src] : null;
        if (peer == null) {
            stats.increment(Counter.MALFORMED_DROPS);
            return;
        }
        // The rank it claims must be where it came from: the address book's entry (the peer, or the gateway that
        // forwards its traffic), checked before the seal so nothing else of the datagram is touched.
        if (!port.receivedFrom(peer.address)) {
            stats.increment(Counter.SOURCE_ADDRESS_DROPS);
            return;
        }
        // Nothing of the datagram is used before its seal (CRC over header and payload, tag) checks out.
        switch (seal.open(segment, offset, payloadLength)) {
            case WireSeal.OPENED -> { }
            case WireSeal.CRC_MISMATCH -> {
                stats.increment(Counter.CRC_FAILURES);
                return;
            }
            case WireSeal.TOO_LONG -> {
                stats.increment(Counter.MALFORMED_DROPS);
                return;
            }
            default -> {
                stats.increment(Counter.AUTH_FAILURES);
                return;
            }
        }
        if (seal.mode().authenticated() && !peer.replayWindow.accept(seal.sequence())) {
            stats.increment(Counter.REPLAY_DROPS);
            return;
        }
        MemorySegment data = seal.dataSegment();
        long dataOffset = seal.dataOffset();
        int dataLength = seal.dataLength();
        switch (h.type()) {
            case 1 -> onData(peer, h, data, dataOffset, dataLength);
            case 2 -> onAck(peer, h, data, dataOffset, dataLength);
            case 3 -> onNack(peer, h, data, dataOffset, dataLength);
            default -> stats.increment(Counter.MALFORMED_DROPS);
        }
    }

    private void onData(PeerState peer, XafHeader h, MemorySegment segment, long payloadOffset, int length) {
        int step = h.step();
        int bucket = h.bucketId();
        InboundMessage message = null;
        for (int i = 0, n = peer.inbound.size(); i < n; i++) {
            InboundMessage candidate = peer.inbound.get(i);
            if (candidate.matches(step, bucket)) {
                message = candidate;
                break;
            }
        }
        int index = h.chunkIndex();
        int count = h.chunkCount();
        if (message == null) {
            if (received.contains(peer.rank, step, bucket, count)) {
                stats.increment(Counter.DUPLICATES_DROPPED);
                sendAck(peer, step, bucket, count, count, count, null, 0);
            } else {
                stats.increment(Counter.UNEXPECTED_DROPS);
                if (index >= 0 && index < count) {
                    peer.rememberUnexpected(step, bucket, count, index);
                }
            }
            return;
        }
        if (count != message.chunkCount || index < 0 || index >= count || length != message.expectedLength(index)) {
            stats.increment(Counter.MALFORMED_DROPS);
            return;
        }
        message.lastActivityNanos = nowNanos;
        if (Bitmaps.get(message.received, 0, index)) {
            stats.increment(Counter.DUPLICATES_DROPPED);
            message.ackNow = true; // the sender resent it: its ACK may have been lost
            markAckPending(message);
            return;
        }
        if (index != message.cumulative) {
            message.ackNow = true; // a gap: tell the sender now, so that it finds a loss quickly (RACK)
        }
        try {
            message.sink.accept(message.dest, message.chunkOffset(index), segment, payloadOffset, length);
        } catch (RuntimeException e) {
            finishInbound(message);
            message.future.completeExceptionally(e);
            return;
        }
        Bitmaps.set(message.received, 0, index);
        message.receivedCount++;
        while (message.cumulative < count && Bitmaps.get(message.received, 0, message.cumulative)) {
            message.cumulative++;
        }
        if (message.receivedCount == count) {
            received.remember(peer.rank, step, bucket, count);
            sendAck(peer, step, bucket, count, count, count, null, 0);
            finishInbound(message);
            stats.increment(Counter.MESSAGES_RECEIVED);
            message.future.complete(null);
        } else {
            if (message.unackedChunks++ == 0) {
                message.firstUnackedNanos = nowNanos;
            }
            if (message.unackedChunks >= ackEveryChunks) {
                message.ackNow = true;
            }
            markAckPending(message);
        }
    }

    private void markAckPending(InboundMessage message) {
        if (!message.ackPending) {
            message.ackPending = true;
            ackPending.add(message);
        }
    }

    private void finishInbound(InboundMessage message) {
        message.done = true;
        message.peer.inbound.remove(message);
        if (message.received != null) {
            pool.release(message.received);
            message.received = null;
        }
    }

    /**
     * Sends the ACKs that are due: a message's ACK waits until {@link TransportConfig#ackEveryChunks()} new chunks
     * arrived or the oldest of them has waited {@link TransportConfig#ackDelay()}, unless a gap or duplicate asks for
     * it at once (delayed ACKs, as TCP and QUIC do: each ACK costs a datagram and a seal at both ends). Messages
     * whose ACK is not due stay in the list.
     */
    private int flushAcks() {
        int sent = 0;
        int kept = 0;
        for (int i = 0, n = ackPending.size(); i < n; i++) {
            InboundMessage m = ackPending.get(i);
            if (m.done) {
                m.ackPending = false;
                continue;
            }
            if (!m.ackNow && nowNanos - m.firstUnackedNanos < ackDelayNanos) {
                ackPending.set(kept++, m);
                continue;
            }
            m.ackPending = false;
            m.ackNow = false;
            m.unackedChunks = 0;
            sendAck(m.peer, m.id.step(), m.id.bucketId(), m.chunkCount, m.cumulative, m.receivedCount,
                    m.received, m.words);
            sent++;
        }
        for (int i = ackPending.size() - 1; i >= kept; i--) {
            ackPending.remove(i);
        }
        return sent;
    }

    private void sendAck(PeerState peer, int step, int bucket, int count, int cumulative, int received,
                         long[] bitmap, int words) {
        int remaining = count - cumulative;
        int sackWords = bitmap == null ? 0 : Math.min(AckPayload.MAX_SACK_WORDS, Bitmaps.wordsFor(remaining));
        long at = XafHeader.LENGTH;
        int used = 0; // trailing empty words are left out: nothing above the highest received chunk to report
        for (int w = 0; w < sackWords; w++) {
            long bits = Bitmaps.window64(bitmap, 0, words, cumulative + 64 * w);
            AckPayload.writeSackWord(txSegment, at, w, bits);
            if (bits != 0) used = w + 1;
        }
        sackWords = used;
        int payloadLength = AckPayload.length(sackWords);
        AckPayload.writeFixed(txSegment, at, cumulative, count, received, sackWords);
        if (transmit(peer, writeHeader(peer, 2, 0, 0, step, bucket, cumulative, count, payloadLength))) {
            stats.increment(Counter.ACKS_SENT);
        }
    }

    // ---------------------------------------------------------------- acknowledgements at the sender

    /** The SACK words of an ACK-format payload (ACK and NACK), or -1, counted as malformed, when it does not fit. */
    private int sackWordsIfWellFormed(MemorySegment segment, long at, int length) {
        if (length < AckPayload.FIXED_LENGTH) {
            stats.increment(Counter.MALFORMED_DROPS);
            return -1;
        }
        int sackWords = AckPayload.sackWords(segment, at);
        if (AckPayload.length(sackWords) > length) {
            stats.increment(Counter.MALFORMED_DROPS);
            return -1;
        }
        return sackWords;
    }

    /** The message being sent to {@code peer} for (step, bucket), or null. */
    private static OutboundMessage outboundFor(PeerState peer, int step, int bucket) {
        for (int i = 0, n = peer.outbound.size(); i < n; i++) {
            OutboundMessage candidate = peer.outbound.get(i);
            if (candidate.matches(step, bucket)) return candidate;
        }
        return null;
    }

    private void onAck(PeerState peer, XafHeader h, MemorySegment segment, long at, int length) {
        stats.increment(Counter.ACKS_RECEIVED);
        int sackWords = sackWordsIfWellFormed(segment, at, length);
        if (sackWords < 0) return;
        int step = h.step();
        int bucket = h.bucketId();
        OutboundMessage message = outboundFor(peer, step, bucket);
        if (message == null) {
            return; // late ACK of a finished message
        }
        int count = message.chunkCount;
        int cumulative = AckPayload.cumulative(segment, at);
        if (AckPayload.chunkCount(segment, at) != count || !coversOnlySentChunks(message, segment, at, sackWords)) {
            stats.increment(Counter.INVALID_ACK_DROPS);
            return;
        }
        long bestSample = NO_RTT_SAMPLE;
        int newlyAcked = 0;
        for (int c = message.lowestUnacked; c < cumulative; c++) {
            long sample = ackChunk(message, c);
            if (sample != ALREADY_ACKED) {
                newlyAcked++;
                bestSample = Math.min(bestSample, sample);
            }
        }
        message.lowestUnacked = Math.max(message.lowestUnacked, cumulative);
        for (int w = 0; w < sackWords; w++) {
            long bits = AckPayload.sackWord(segment, at, w);
            while (bits != 0) {
                int c = cumulative + 64 * w + Long.numberOfTrailingZeros(bits);
                bits &= bits - 1;
                if (c >= count) {
                    break;
                }
                long sample = ackChunk(message, c);
                if (sample != ALREADY_ACKED) {
                    newlyAcked++;
                    bestSample = Math.min(bestSample, sample);
                }
            }
        }
        if (bestSample != NO_RTT_SAMPLE) {
            peer.rttSample(bestSample);
            // The newest chunk known delivered (sent once, so unambiguous) dates the losses.
            long deliveredSent = nowNanos - bestSample;
            if (deliveredSent >= peer.newestDeliveredSentNanos) {
                peer.newestDeliveredSentNanos = deliveredSent;
                peer.newestDeliveredRttNanos = bestSample;
            }
        }
        if (newlyAcked > 0) {
            message.progressNanos = nowNanos;
            peer.ackProgressNanos = nowNanos;
            // Any progress ends the backoff: a pair that only ever exchanges retransmitted one-chunk messages (a
            // barrier posted late) has no clean RTT sample, and a backoff kept until one would stall it at maxRto.
            peer.backoff = 0;
            peer.onAcked(newlyAcked, config.windowChunks());
        }
        if (message.ackedCount == count) {
            finishOutbound(message);
            stats.increment(Counter.MESSAGES_SENT);
            message.future.complete(null);
            return;
        }
        // Chunks that this ACK shows lost are found by checkRetransmitTimers(), after the whole batch of ACKs.
    }

    /**
     * A NACK names chunks the receiver dropped because it did not expect the message yet: {@code cumulative} is the
     * first index of its bitmap, and each set bit a dropped chunk. They were not lost to congestion, so they are
     * resent at once without reducing the window; the NACK also shows the peer alive, which restarts the timer.
     *
     * <p>Bounded, because in crc32c mode anyone who can reach the port can forge one: a receiver sends at most one
     * NACK per message, so only the first is acted on (later ones count as invalid), and it resends at most a
     * window of chunks (the receiver cannot have dropped more before the expect that triggers the NACK).
     */
    private void onNack(PeerState peer, XafHeader h, MemorySegment segment, long at, int length) {
        stats.increment(Counter.NACKS_RECEIVED);
        int sackWords = sackWordsIfWellFormed(segment, at, length);
        if (sackWords < 0) return;
        OutboundMessage message = outboundFor(peer, h.step(), h.bucketId());
        if (message == null) {
            return;
        }
        if (message.nackAnswered || AckPayload.chunkCount(segment, at) != message.chunkCount
                || !coversOnlySentChunks(message, segment, at, sackWords)) {
            stats.increment(Counter.INVALID_ACK_DROPS);
            return;
        }
        message.nackAnswered = true;
        int base = AckPayload.cumulative(segment, at);
        int resends = config.windowChunks();
        for (int w = 0; w < sackWords && resends > 0; w++) {
            long bits = AckPayload.sackWord(segment, at, w);
            while (bits != 0 && resends > 0) {
                int c = base + 64 * w + Long.numberOfTrailingZeros(bits);
                bits &= bits - 1;
                if (c >= message.chunkCount) {
                    break;
                }
                if (message.inFlight(c) && !message.acked(c)) {
                    declareLost(message, c);
                    stats.increment(Counter.NACK_LOSSES);
                    resends--;
                }
            }
        }
        peer.ackProgressNanos = nowNanos;
    }

    /**
     * An ACK may only acknowledge chunks that were sent: chunks go out in index order, so every chunk below
     * {@code nextNew} was sent at least once and none at or above it was.
     */
    private static boolean coversOnlySentChunks(OutboundMessage message, MemorySegment segment, long at,
                                                int sackWords) {
        int cumulative = AckPayload.cumulative(segment, at);
        if (cumulative < 0 || cumulative > message.nextNew) {
            return false;
        }
        for (int w = 0; w < sackWords; w++) {
            long bits = AckPayload.sackWord(segment, at, w);
            if (bits != 0) {
                long highest = (long) cumulative + 64L * w + 63 - Long.numberOfLeadingZeros(bits);
                if (highest >= message.nextNew) {
                    return false;
                }
            }
        }
        return true;
    }

    private static final long ALREADY_ACKED = -1;
    private static final long NO_RTT_SAMPLE = Long.MAX_VALUE;

    /**
     * Marks a chunk acknowledged. Returns {@link #ALREADY_ACKED}, {@link #NO_RTT_SAMPLE} (Karn: a retransmitted
     * chunk's ACK may belong to either copy) or the round-trip sample in nanoseconds.
     */
    private long ackChunk(OutboundMessage message, int c) {
        if (message.acked(c)) {
            return ALREADY_ACKED;
        }
        Bitmaps.set(message.bits, message.ackedBase(), c);
        message.ackedCount++;
        if (Bitmaps.get(message.bits, message.queuedBase(), c)
                && !Bitmaps.get(message.bits, message.retransmittedBase(), c)) {
            stats.increment(Counter.SPURIOUS_LOSSES);
            if (message.peer.undoSpuriousReduction()) {
                stats.increment(Counter.CWND_UNDOS);
                restoreQueuedOriginals(message.peer);
            }
        }
        Bitmaps.clear(message.bits, message.queuedBase(), c);
        if (message.inFlight(c)) {
            Bitmaps.clear(message.bits, message.inFlightBase(), c);
            message.peer.inFlight--;
        }
        if (message.lastSent[c] == 0 || Bitmaps.get(message.bits, message.retransmittedBase(), c)) {
            return NO_RTT_SAMPLE;
        }
        return nowNanos - message.lastSent[c];
    }

    /**
     * After a spurious loss the first copies of the chunks still queued for their first resend are most likely on
     * their way too (a stalled receiver delivers them all late): put them back in flight instead of resending them.
     * They count as sent now and as retransmitted (no RTT sample, no second undo); if one was lost after all, RACK
     * or the timer finds it again.
     */
    private void restoreQueuedOriginals(PeerState peer) {
        ChunkRing queue = peer.retransmitQueue;
        for (int i = 0, n = queue.size(); i < n; i++) {
            OutboundMessage m = queue.headMessage();
            int c = queue.headChunk();
            long time = queue.headTime();
            queue.removeHead();
            if (m.done || !m.queued(c) || m.acked(c)) {
                continue;
            }
            if (Bitmaps.get(m.bits, m.retransmittedBase(), c)) {
                queue.addLast(m, c, time); // resent before and lost again: still to resend
                continue;
            }
            Bitmaps.clear(m.bits, m.queuedBase(), c);
            Bitmaps.set(m.bits, m.retransmittedBase(), c);
            markInFlight(peer, m, c, nowNanos);
            stats.increment(Counter.RESTORED_CHUNKS);
        }
    }

    private void declareLost(OutboundMessage message, int c) {
        Bitmaps.clear(message.bits, message.inFlightBase(), c);
        message.peer.inFlight--;
        Bitmaps.set(message.bits, message.queuedBase(), c);
        message.peer.retransmitQueue.addLast(message, c, nowNanos);
    }

    private void finishOutbound(OutboundMessage message) {
        PeerState peer = message.peer;
        message.done = true;
        sent.remember(peer.rank, message.id.step(), message.id.bucketId(), message.chunkCount);
        peer.outbound.remove(message);
        peer.inFlight -= Bitmaps.count(message.bits, message.inFlightBase(), message.words);
        pool.release(message.bits);
        pool.release(message.lastSent);
        message.bits = null;
        message.lastSent = null;
        if (peer.outbound.isEmpty()) {
            peer.inFlightQueue.clear();
            peer.retransmitQueue.clear();
            peer.inFlight = 0;
        }
    }

    // ---------------------------------------------------------------- timers

    /**
     * Finds lost chunks, oldest transmission first (the per-peer FIFO is ordered by send time):
     * <ul>
     * <li>A chunk is lost when a chunk sent after it has been delivered and it has been outstanding for longer than
     * that chunk's round trip plus a reordering allowance of srtt/4 (RACK, RFC 8985): the paths keep order, so it
     * should have arrived by then. Send times decide, not the arrival pattern of ACKs. Runs after a whole batch of
     * ACKs was processed, so that ACKs of several messages sent back to back by the receiver are all seen first.</li>
     * <li>The retransmission timer of a peer runs from its last acknowledgement progress or the chunk's last send,
     * whichever is later (RFC 6298 restarts the timer on every ACK of new data): a long queue that drains steadily
     * never times out, only a peer that stops acknowledging does. Every chunk past the timeout is then declared
     * lost (SACKed chunks are not resent) and the congestion window collapses, so the resends go out slowly and
     * ACKs that were merely late remove them from the queue before they are sent.</li>
     * </ul>
     */
    private int checkRetransmitTimers() {
        int work = 0;
        for (PeerState peer : peers) {
            if (peer == null || peer.inFlightQueue.isEmpty()) {
                continue;
            }
            long rto = peer.rtoNanos(initialRtoNanos, minRtoNanos, maxRtoNanos);
            // Outstanding at least as long as the newest delivered chunk took, plus the reordering allowance.
            long lostAge = peer.newestDeliveredRttNanos + peer.reorderingWindowNanos();
            boolean expired = false;
            ChunkRing queue = peer.inFlightQueue;
            while (!queue.isEmpty()) {
                OutboundMessage m = queue.headMessage();
                int c = queue.headChunk();
                long sentAt = queue.headTime();
                if (m.done || !m.inFlight(c) || m.lastSent[c] != sentAt) {
                    queue.removeHead(); // acknowledged, declared lost already, or resent since
                    continue;
                }
                if (sentAt < peer.newestDeliveredSentNanos && nowNanos - sentAt >= lostAge) {
                    if (peer.onLoss(sentAt, nowNanos)) {
                        stats.increment(Counter.CWND_REDUCTIONS);
                    }
                    stats.increment(Counter.SACK_LOSSES);
                } else if (nowNanos - Math.max(sentAt, peer.ackProgressNanos) >= rto) {
                    stats.increment(Counter.TIMEOUT_LOSSES);
                    expired = true;
                } else {
                    break;
                }
                queue.removeHead();
                declareLost(m, c);
                work++;
            }
            if (expired) {
                stats.increment(Counter.TIMEOUT_EVENTS);
                peer.onTimeout(nowNanos);
                stats.increment(Counter.CWND_REDUCTIONS);
                // The timer restarts for what remains in flight; the backoff doubles it until a clean RTT sample.
                peer.ackProgressNanos = nowNanos;
                if (nowNanos - peer.lastBackoffNanos >= rto) {
                    peer.backoff++;
                    peer.lastBackoffNanos = nowNanos;
                }
            }
        }
        return work;
    }

    private int checkMessageTimeouts() {
        int work = 0;
        for (PeerState peer : peers) {
            if (peer == null) {
                continue;
            }
            for (int i = peer.outbound.size() - 1; i >= 0; i--) {
                OutboundMessage m = peer.outbound.get(i);
                if (m.progressNanos != 0 && nowNanos - m.progressNanos > ackTimeoutNanos) {
                    finishOutbound(m);
                    stats.increment(Counter.SEND_TIMEOUTS);
                    m.future.completeExceptionally(new TransportTimeoutException(peer.rank, "rank " + peer.rank
                            + " did not acknowledge message " + m.id + " within " + format(config.ackTimeout())));
                    work++;
                }
            }
            if (receiveTimeoutNanos > 0) {
                for (int i = peer.inbound.size() - 1; i >= 0; i--) {
                    InboundMessage m = peer.inbound.get(i);
                    if (nowNanos - m.lastActivityNanos > receiveTimeoutNanos) {
                        finishInbound(m);
                        m.future.completeExceptionally(new TransportTimeoutException(peer.rank, "rank "
                                + peer.rank + " sent no chunk of message " + m.id + " within "
                                + format(config.receiveTimeout())));
                        work++;
                    }
                }
            }
        }
        return work;
    }

    static String format(Duration d) {
        if (d.toMillis() >= 1000 && d.toMillis() % 1000 == 0) {
            return d.toSeconds() + " s";
        }
        if (d.toNanos() % 1_000_000 == 0) {
            return d.toMillis() + " ms";
        }
        return d.toNanos() / 1000.0 + " us";
    }

    // ---------------------------------------------------------------- send path

    private int sendData() {
        if (pacingBytesPerNano > 0) {
            tokens = Math.min(pacingBurst, tokens + (nowNanos - lastRefillNanos) * pacingBytesPerNano);
            lastRefillNanos = nowNanos;
        }
        int sent = 0;
        int n = peers.length;
        boolean progress = true;
        // Round-robin one chunk per peer per round so that no destination starves the others.
        while (sent < SEND_BATCH && progress) {
            progress = false;
            for (int i = 0; i < n && sent < SEND_BATCH; i++) {
                if (pacingBytesPerNano > 0 && tokens <= 0) {
                    return sent;
                }
                PeerState peer = peers[(peerCursor + i) % n];
                if (peer != null && peer.inFlight < peer.sendWindow(config.windowChunks()) && sendOne(peer)) {
                    sent++;
                    progress = true;
                }
            }
            peerCursor = n == 0 ? 0 : (peerCursor + 1) % n;
        }
        return sent;
    }

    /** Sends one retransmission, or else one new chunk, to {@code peer}; false if it had nothing to send. */
    private boolean sendOne(PeerState peer) {
        ChunkRing rtx = peer.retransmitQueue;
        while (!rtx.isEmpty()) {
            OutboundMessage m = rtx.headMessage();
            int c = rtx.headChunk();
            if (m.done || !m.queued(c) || m.acked(c)) {
                rtx.removeHead();
                continue;
            }
            if (!sendChunk(m, c, true)) {
                return false;
            }
            rtx.removeHead();
            Bitmaps.clear(m.bits, m.queuedBase(), c);
            Bitmaps.set(m.bits, m.retransmittedBase(), c);
            stats.increment(Counter.RETRANSMITS);
            return true;
        }
        for (int i = 0, size = peer.outbound.size(); i < size; i++) {
            OutboundMessage m = peer.outbound.get(i);
            // New chunks only within the reach of an ACK's SACK bitmap, so that every arrival can be reported.
            if (m.nextNew < m.chunkCount && m.nextNew - m.lowestUnacked < AckPayload.SACK_SPAN_CHUNKS) {
                if (m.progressNanos == 0) {
                    m.progressNanos = nowNanos; // the ack timeout runs from the first attempt, even a refused one
                }
                if (!sendChunk(m, m.nextNew, false)) {
                    return false;
                }
                m.nextNew++;
                return true;
            }
        }
        return false;
    }

    private boolean sendChunk(OutboundMessage m, int c, boolean retransmit) {
        PeerState peer = m.peer;
        int length = m.chunkLength(c);
        int flags = (c == m.chunkCount - 1 ? XafHeader.FLAG_LAST_CHUNK : 0)
                | (retransmit ? XafHeader.FLAG_RETRANSMIT : 0);
        boolean sent;
        if (claimSegment != null) {
            // Claim-then-write: the chunk is copied once, straight into the port's frame or send buffer.
            int datagram = XafHeader.LENGTH + length + seal.trailerLength();
            long at = port.claim(datagram, peer.address);
            if (at < 0) {
                stats.increment(Counter.PORT_SEND_FAILURES);
                return false;
            }
            MemorySegment.copy(m.data, m.chunkOffset(c), claimSegment, at + XafHeader.LENGTH, length);
            writeHeader(claimSegment, at, peer, 1, flags, m.elemType, m.id.step(), m.id.bucketId(), c, m.chunkCount,
                    length);
            sent = accounted(port.commitClaim(), datagram);
        } else {
            MemorySegment.copy(m.data, m.chunkOffset(c), txSegment, XafHeader.LENGTH, length);
            sent = transmit(peer, writeHeader(peer, 1, flags, m.elemType, m.id.step(), m.id.bucketId(), c,
                    m.chunkCount, length));
        }
        if (!sent) {
            return false;
        }
        stats.increment(Counter.DATA_CHUNKS_SENT);
        markInFlight(peer, m, c, nowNanos);
        return true;
    }

    /** Chunk {@code c} of {@code m} is (again) in flight to {@code peer}, stamped with a fresh send time. */
    private void markInFlight(PeerState peer, OutboundMessage m, int c, long nowNanos) {
        // Strictly increasing (0 means "never sent"): chunks sent in one pass stay ordered for loss detection.
        long sentAt = Math.max(nowNanos, lastSendStamp + 1);
        lastSendStamp = sentAt;
        m.lastSent[c] = sentAt;
        Bitmaps.set(m.bits, m.inFlightBase(), c);
        peer.inFlight++;
        peer.inFlightQueue.addLast(m, c, sentAt);
    }

    /**
     * Writes the header in front of the {@code dataLength} bytes already in the send buffer and seals the datagram;
     * returns its payload length (data plus the seal's trailer).
     */
    private int writeHeader(PeerState peer, int type, int flags, int elemType, int step, int bucket,
                            int chunkIndex, int chunkCount, int dataLength) {
        return writeHeader(txSegment, 0, peer, type, flags, elemType, step, bucket, chunkIndex, chunkCount, dataLength);
    }

    /** As above, for a datagram at {@code base} of {@code segment} (a claimed frame or send buffer). */
    private int writeHeader(MemorySegment segment, long base, PeerState peer, int type, int flags, int elemType,
                            int step, int bucket, int chunkIndex, int chunkCount, int dataLength) {
        int payloadLength = dataLength + seal.trailerLength();
        MemorySegment.copy(headerTemplate, 0, segment, base, XafHeader.LENGTH);
        txHeader.wrap(segment, base)
                .type(type).flags(flags | seal.flags()).elemType(elemType)
                .networkId(peer.networkId).jobId(config.jobId()).jobToken(config.jobToken())
                .srcRank(config.localRank()).dstRank(peer.rank)
                .step(step).bucketId(bucket).chunkIndex(chunkIndex).chunkCount(chunkCount)
                .payloadLength(payloadLength);
        seal.seal(segment, base, dataLength, peer.txSequence++);
        return payloadLength;
    }

    private boolean transmit(PeerState peer, int payloadLength) {
        int length = XafHeader.LENGTH + payloadLength;
        return accounted(port.send(txSegment, 0, length, peer.address), length);
    }

    /**
     * Accounts a datagram of {@code length} bytes that the port took ({@code sent}: pacing tokens and counters) or
     * refused (a send failure); returns {@code sent}.
     */
    private boolean accounted(boolean sent, int length) {
        if (!sent) {
            stats.increment(Counter.PORT_SEND_FAILURES);
            return false;
        }
        if (pacingBytesPerNano > 0) {
            tokens -= length;
        }
        stats.increment(Counter.PACKETS_SENT);
        stats.add(Counter.BYTES_SENT, length);
        return true;
    }

    // ---------------------------------------------------------------- shutdown

    /**
     * Keeps the transport answering (acknowledging retransmissions) until nothing has arrived for {@code idle}, or
     * {@code max} has passed. Call it at the end of a job, after the last barrier and before {@link #close()}: a
     * peer whose final acknowledgement was lost retransmits, and would otherwise wait for an answer from a rank that
     * is already gone. {@code idle} should exceed the peers' largest retransmission timeout.
     */
    public void linger(java.time.Duration idle, java.time.Duration max) throws InterruptedException {
        long deadline = System.nanoTime() + max.toNanos();
        long seen = stats.packetsReceived();
        while (System.nanoTime() < deadline) {
            Thread.sleep(Math.max(1, Math.min(idle.toMillis(), (deadline - System.nanoTime()) / 1_000_000)));
            long now = stats.packetsReceived();
            if (now == seen) return;
            seen = now;
        }
    }

    /**
     * Stops the event loop, fails every unfinished send/expect with an {@link IllegalStateException} and closes the
     * port. Call from the owner of the transport, not from the event-loop thread.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        port.wakeup();
        Thread t = thread;
        if (t != null && t != Thread.currentThread()) {
            try {
                t.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        failEverything(new IllegalStateException("transport of rank " + config.localRank() + " was closed"));
        port.close();
    }

    /** Fails every submitted, unfinished send and expect with {@code reason}. */
    private void failEverything(IllegalStateException reason) {
        failSubmissions(reason);
        for (PeerState peer : peers) {
            if (peer == null) {
                continue;
            }
            for (OutboundMessage m : peer.outbound) {
                m.future.completeExceptionally(reason);
            }
            for (InboundMessage m : peer.inbound) {
                m.future.completeExceptionally(reason);
            }
            peer.outbound.clear();
            peer.inbound.clear();
        }
    }

    /** Fails every submitted message the loop has not taken yet; safe from any thread. */
    private void failSubmissions(IllegalStateException reason) {
        Object pending;
        while ((pending = submissions.poll()) != null) {
            if (pending instanceof OutboundMessage m) {
                m.future.completeExceptionally(reason);
            } else if (pending instanceof InboundMessage m) {
                m.future.completeExceptionally(reason);
            }
        }
    }
}
