package io.xaforward.transport;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.LockSupport;

/**
 * The I/O backend under {@link ReliableTransport}: moves whole XAF datagrams (48-byte XAF header + payload) to and
 * from peers; the backend adds and strips whatever outer headers its network form needs (UDP/IP, Ethernet + ID header).
 *
 * <p>The interface is frame-oriented and small on purpose so that UDP, the in-memory test network and an AF_XDP
 * socket can all sit behind it. Neither method may allocate per datagram. A port is used by one thread at a time
 * (the transport's event loop).
 */
public interface DatagramPort extends AutoCloseable {

    /** Largest XAF datagram (header + payload) this port can carry in one frame. */
    int maxDatagramLength();

    /**
     * Sends {@code length} bytes starting at {@code offset} of {@code buffer} as one datagram. The bytes are copied
     * (or handed to the kernel) before this returns, so the caller may reuse the buffer at once.
     *
     * @return false when the backend had no room (socket buffer or ring full); the datagram was not sent and the
     *         reliability layer will retransmit it
     */
    boolean send(MemorySegment buffer, long offset, int length, Peer destination);

    /** {@link #claim} result: this port has no claim-then-write path; use {@link #send}. */
    long CLAIM_UNSUPPORTED = -2;
    /** {@link #claim} result: no room now (ring or buffer full); try again later. */
    long CLAIM_FULL = -1;

    /**
     * Claim-then-write, the one-copy send path (as Aeron's BufferClaim): reserves room for one datagram of exactly
     * {@code length} bytes to {@code destination} and returns the offset in {@link #claimSegment()} where the caller
     * writes the XAF datagram (header + payload) in place, straight into the outgoing frame or send buffer; then
     * {@link #commitClaim()} sends it. Returns {@link #CLAIM_FULL} when there is no room now and
     * {@link #CLAIM_UNSUPPORTED} (the default) when the port only offers {@link #send}.
     *
     * @throws IllegalArgumentException as {@link #send} does, for a bad destination or length
     */
    default long claim(int length, Peer destination) {
        return CLAIM_UNSUPPORTED;
    }

    /** Whether {@link #claim} is implemented (never changes for a port). */
    default boolean supportsClaim() {
        return false;
    }

    /** The memory that {@link #claim} offsets point into; stable for the port's life. */
    default MemorySegment claimSegment() {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " has no claim-then-write path");
    }

    /**
     * Sends the datagram written at the last successful {@link #claim}. Returns false when the backend refused it
     * at the last moment (the datagram is lost; the reliability layer retransmits).
     */
    default boolean commitClaim() {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " has no claim-then-write path");
    }

    /**
     * Hands everything sent or committed since the last flush to the network. A port that batches datagrams into
     * fewer system calls ({@link UdpDatagramPort}: GSO trains, sendmmsg) may hold them until this call or until its
     * buffer fills; the transport calls it at the end of every pass of its event loop. The default does nothing
     * (ports that send at once).
     */
    default void flush() {
    }

    /**
     * Delivers up to {@code limit} received datagrams to {@code handler} and returns how many it delivered;
     * never blocks.
     */
    int poll(DatagramHandler handler, int limit);

    /**
     * Whether {@link #awaitReceive} blocks until a datagram arrives (a kernel socket that can be waited on). The
     * transport polls ports that cannot, parking briefly between polls.
     */
    default boolean canAwaitReceive() {
        return false;
    }

    /**
     * Blocks the calling thread (the transport's event loop, when it has nothing to do) until a datagram may be
     * waiting, {@link #wakeup()} is called from another thread, or {@code timeoutNanos} pass; it may return early.
     * An idle transport that sleeps here instead of polling leaves its CPU to training, which on a shared core is
     * the difference between a fast and a slow step. The default parks for the timeout.
     */
    default void awaitReceive(long timeoutNanos) {
        LockSupport.parkNanos(timeoutNanos);
    }

    /** {@link #awaitReceive}'s timeout in whole milliseconds for poll(2)/select: rounded up, at least 1 (0 blocks). */
    static int awaitMillis(long timeoutNanos) {
        return (int) Math.min(Integer.MAX_VALUE, Math.max(1, (timeoutNanos + 999_999) / 1_000_000));
    }

    /**
     * Ends an {@link #awaitReceive} in progress, or makes the next one return at once (as Selector.wakeup does).
     * May be called from any thread, also after {@link #close()}.
     */
    default void wakeup() {
    }

    /**
     * During a {@link DatagramHandler} call from {@link #poll}: whether the datagram being delivered came from
     * {@code peer}'s address (UDP: source IP and port; AF_PACKET/AF_XDP: source MAC, and source IP for the IP forms).
     * The transport asks before it uses any byte of the datagram beyond the rank it claims, so a datagram that
     * claims a rank from another address is dropped. Compares raw address fields and allocates nothing. A port whose
     * datagrams carry no sender address answers true.
     */
    default boolean receivedFrom(Peer peer) {
        return true;
    }

    /** The address other ports use to reach this one. */
    Peer localPeer();

    /**
     * How many flows (UDP source ports, so separate receive queues at the peer) the port spreads its datagrams
     * over: datagrams of different flows may overtake each other, and the transport sizes its replay window for
     * that. 1 unless the port sends from several.
     */
    default int flows() {
        return 1;
    }

    @Override
    void close();
}
