package io.xaforward.transport;

import io.xaforward.protocol.MessageType;
import io.xaforward.protocol.XafHeader;
import io.xaforward.transport.TransportStats.Counter;

import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Locale;
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
 * GMAC tag and sequence number or AES-GCM encryption keyed by the job secret), checked before any byte is used. The
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
    private static final int CONTROL_CODE = MessageType.CONTROL.code();
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
    /** The port sleeps in whole milliseconds (poll(2)): a shorter wait for a paced send parks the thread instead. */
    private static final long PORT_SLEEP_GRANULARITY_NANOS = 1_000_000;
    private static final long PACED_PARK_MIN_NANOS = 10_000;
    /**
     * The rate controller's smallest window: a receiver descheduled for a few milliseconds on a busy host must not
     * stall a path whose bandwidth-delay product is a few chunks (a LAN). 256 chunks (370 KB) keep a LAN at 1 Gbit/s
     * through 3 ms of such stalls, as the loss-based window's 512 did.
     */
    static final int RATE_MIN_WINDOW = 256;
    /** Chunks in flight per peer at most: the configured window, less where the port's flows need it. */
    private final int window;

    private final TransportConfig config;
    private final DatagramPort port;
    private final TransportStats stats = new TransportStats();
    private final PeerState[] peers;
    /**
     * Messages submitted from any thread, taken by the event loop: one queue per direction, so that taking one needs
     * no type test (a type switch there was deoptimised by the JIT each time the other kind came first).
     */
    private final ConcurrentLinkedQueue<OutboundMessage> sendSubmissions = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<InboundMessage> expectSubmissions = new ConcurrentLinkedQueue<>();
    private final LoopTime time;
    private final XafHeader rxHeader = new XafHeader();
    private final WireSeal seal;
    /** Message bytes per chunk (the payload less the seal's trailer). */
    private final int chunkData;
    private final DatagramWriter writer;
    private final Sender sender;
    private final Receiver receiver;
    private final IdleStrategy idleStrategy;
    private final DatagramHandler receiveHandler = this::onDatagram;
    private final long busySleepNanos;
    private long nextTimerCheckNanos;

    private volatile boolean closed;
    private volatile Thread thread;
    /** The event loop is (about to be) asleep in {@link DatagramPort#awaitReceive}: submissions must wake it. */
    private volatile boolean sleeping;
    /** Why the event loop died, or null while it runs. */
    private volatile Throwable crashed;

    /** Takes ownership of {@code port} (closed with the transport). */
    public ReliableTransport(TransportConfig config, AddressBook addressBook, DatagramPort port) {
        this.config = Objects.requireNonNull(config, "config");
        Objects.requireNonNull(addressBook, "addressBook");
        this.port = Objects.requireNonNull(port, "port");
        int datagram = XafHeader.LENGTH + config.maxPayload();
        if (datagram > port.maxDatagramLength()) {
            throw new IllegalArgumentException("chunk payload of " + config.maxPayload() + " bytes plus the "
                    + XafHeader.LENGTH + "-byte XAF header exceeds the port's datagram limit of "
                    + port.maxDatagramLength() + " bytes");
        }
        seal = WireSeal.of(config.wireSecurity(), config.secret(), config.jobId(), config.runNonce(), Math.max(datagram,
                XafHeader.LENGTH + AckPayload.MAX_LENGTH + WireSeal.TRAILER_BYTES));
        chunkData = config.chunkDataBytes();
        peers = new PeerState[addressBook.rankLimit()];
        // The peer sends over as many flows as this port (every rank of a job has the same setting): the window
        // must hold every sequence number it can have in flight, or reordering is counted as replay. Refused
        // here, before anything is sent, when it cannot.
        window = config.windowFitsFlows()
                ? Math.min(config.windowChunks(), ReplayWindow.largestWindow(port.flows())) : config.windowChunks();
        int replayWindow = ReplayWindow.sizeFor(window, port.flows());
        SecureRandom salts = new SecureRandom();
        int chunkWireBytes = XafHeader.LENGTH + config.maxPayload();
        for (int rank = 0; rank < peers.length; rank++) {
            if (addressBook.contains(rank) && rank != config.localRank()) {
                CongestionController congestion = config.congestionControl() == CongestionControl.RATE
                        ? new RateController(chunkWireBytes, LossWindow.INITIAL_CWND, RATE_MIN_WINDOW, window,
                        config.localRank() * 31 + rank)
                        : new LossWindow(window);
                peers[rank] = new PeerState(rank, addressBook.networkId(rank), addressBook.peer(rank),
                        window, replayWindow, congestion);
                // AES-GCM nonces and replay checks use these: a random salt plus a counter, never the clock.
                peers[rank].txSequence = WireSeal.initialSequence(salts);
            }
        }
        time = new LoopTime(config.clock());
        LongArrayPool pool = new LongArrayPool();
        writer = new DatagramWriter(config, port, seal, stats, time);
        sender = new Sender(config, window, peers, writer, stats, pool, time);
        receiver = new Receiver(config, writer, stats, pool, time, peers.length);
        busySleepNanos = Math.min(BUSY_SLEEP_NANOS, config.minRto().toNanos());
        idleStrategy = new IdleStrategy(SPIN_PASSES, idlePasses -> {
            long pacedWait = sender.nanosUntilPacedSend();
            if (pacedWait < PORT_SLEEP_GRANULARITY_NANOS) {
                // A peer's pacer lets its next chunks out sooner than the port's sleep could end.
                LockSupport.parkNanos(Math.max(PACED_PARK_MIN_NANOS, pacedWait));
            } else if (port.canAwaitReceive() && !writer.paced()) {
                sleepUntilWoken(pacedWait);
            } else {
                // No Thread.yield(): on a busy host it can cost a whole scheduler slice, starving the pacer.
                LockSupport.parkNanos(idlePasses < 256 ? 10_000 : 50_000);
            }
        });
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
            sb.append(String.format(Locale.ROOT,
                    "rank %d: srtt %.2f ms, rttvar %.2f ms, max %.2f ms, rto %.2f ms, ",
                    p.rank, p.srttNanos / 1e6, p.rttVarNanos / 1e6, p.maxRttNanos / 1e6, sender.rtoNanos(p) / 1e6));
            sb.append(p.congestion.summary());
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
        submit(sendSubmissions, message);
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
        submit(expectSubmissions, message);
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

    private <M extends MessageState> void submit(ConcurrentLinkedQueue<M> queue, M message) {
        if (closed) {
            throw new IllegalStateException("transport of rank " + config.localRank() + " is closed");
        }
        queue.add(message);
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
        } finally {
            // The loop thread is the seal's only user: free its native state once the thread is done with it.
            seal.close();
        }
    }

    private void loop() {
        while (!closed) {
            idleStrategy.idle(doWork());
        }
    }

    /**
     * Sleeps in the port until a datagram arrives, a message is submitted ({@link #submit} wakes the port) or the
     * next timer may be due. Polling instead (a wake-up every few tens of microseconds) cost an idle transport about
     * a tenth of a CPU on an idle machine ({@code IdleTransportTest}) and more under contention, taken from the
     * training on a shared core.
     */
    private void sleepUntilWoken(long pacedWaitNanos) {
        sleeping = true;
        // Dekker with submit(): it adds, then reads sleeping; we set sleeping, then read the queue. One sees the other.
        if (sendSubmissions.isEmpty() && expectSubmissions.isEmpty() && !closed) {
            long timeout = receiver.hasAckPending()
                    ? Math.min(busySleepNanos, Math.max(1, receiver.ackDelayNanos()))
                    : hasTimersRunning() ? busySleepNanos : IDLE_SLEEP_NANOS;
            port.awaitReceive(Math.min(timeout, pacedWaitNanos));
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
        long now = time.advance();
        int work = drainSubmissions();
        work += port.poll(receiveHandler, POLL_BATCH);
        work += receiver.flushAcks();
        work += sender.checkRetransmitTimers();
        if (now - nextTimerCheckNanos >= 0) {
            nextTimerCheckNanos = now + TIMER_CHECK_INTERVAL_NANOS;
            work += checkMessageTimeouts();
        }
        work += sender.sendData();
        port.flush();
        return work;
    }

    private int drainSubmissions() {
        int work = 0;
        // Expects first: a message expected and sent in the same pass finds its receive posted.
        InboundMessage in;
        while ((in = expectSubmissions.poll()) != null) {
            work++;
            receiver.admit(in);
        }
        OutboundMessage out;
        while ((out = sendSubmissions.poll()) != null) {
            work++;
            sender.admit(out);
        }
        return work;
    }

    private int checkMessageTimeouts() {
        int work = 0;
        for (PeerState peer : peers) {
            if (peer != null) {
                work += sender.checkTimeouts(peer) + receiver.checkTimeouts(peer);
            }
        }
        return work;
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
        if (h.type() == CONTROL_CODE) {
            // The transport sends none: the last hellos of a start-up exchange (StartupExchange) that arrive after
            // it handed the port over. Sealed under the start-up key, they are no authentication failure of the run.
            stats.increment(Counter.MALFORMED_DROPS);
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
        MessageType type = MessageType.ofCode(h.type());
        if (type == null) {
            stats.increment(Counter.MALFORMED_DROPS);
            return;
        }
        switch (type) {
            case DATA -> receiver.onData(peer, h, data, dataOffset, dataLength);
            case ACK -> sender.onAck(peer, h, data, dataOffset, dataLength);
            case NACK -> sender.onNack(peer, h, data, dataOffset, dataLength);
            case CONTROL -> stats.increment(Counter.MALFORMED_DROPS); // the transport sends none
        }
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

    // ---------------------------------------------------------------- shutdown

    /**
     * Keeps the transport answering (acknowledging retransmissions) until nothing has arrived for {@code idle}, or
     * {@code max} has passed. Call it at the end of a job, after the last barrier and before {@link #close()}: a
     * peer whose final acknowledgement was lost retransmits, and would otherwise wait for an answer from a rank that
     * is already gone. {@code idle} should exceed the peers' largest retransmission timeout.
     */
    public void linger(Duration idle, Duration max) throws InterruptedException {
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
        if (t == null) {
            seal.close(); // caller-driven: the owner stops calling doWork() before close(); a loop thread closes its own
        }
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
        MessageState pending;
        while ((pending = expectSubmissions.poll()) != null) {
            pending.future.completeExceptionally(reason);
        }
        while ((pending = sendSubmissions.poll()) != null) {
            pending.future.completeExceptionally(reason);
        }
    }
}
