package io.xaforward.transport;

import io.xaforward.protocol.XafHeader;
import io.xaforward.transport.TransportStats.Counter;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;

/**
 * The receiving half of the transport: expected messages, DATA chunks handed exactly once to their sink, the bitmap
 * of what arrived, delayed ACKs, chunks that came before their message was expected (held in {@link EarlyChunks}
 * until it is, or dropped and named in a NACK when there is no room), and the receive timeout. Event-loop thread
 * only.
 */
final class Receiver {
    private static final int COMPLETED_MEMORY = 4096;

    private final TransportConfig config;
    private final DatagramWriter writer;
    private final TransportStats stats;
    private final LongArrayPool pool;
    private final LoopTime time;
    private final ArrayList<InboundMessage> ackPending = new ArrayList<>();
    /** Recently completed inbound messages, so that a retransmission after a lost final ACK is answered. */
    private final RecentMessages received = new RecentMessages(COMPLETED_MEMORY);
    private final int ackEveryChunks;
    private final long ackDelayNanos;
    private final long receiveTimeoutNanos;
    private final EarlyChunks early;
    /** Held chunks older than this are dropped: their sender has given up on the message (its ACK timeout). */
    private final long earlyLifetimeNanos;
    private final EarlyChunks.Taker takeHeld = this::takeHeld;
    private final EarlyChunks.Expired expireHeld = this::expireHeld;
    /** The message taking held chunks ({@link #admit}), or the peer whose held chunks expire ({@link #checkTimeouts}). */
    private InboundMessage taking;
    private PeerState expiring;

    Receiver(TransportConfig config, DatagramWriter writer, TransportStats stats, LongArrayPool pool, LoopTime time,
             int rankLimit) {
        this.config = config;
        this.writer = writer;
        this.stats = stats;
        this.pool = pool;
        this.time = time;
        // Every chunk ACKed at once when the delay is 0 or the count is 1 (the behaviour before delayed ACKs).
        ackEveryChunks = config.ackDelay().isZero() ? 1 : config.ackEveryChunks();
        ackDelayNanos = ackEveryChunks == 1 ? 0 : config.ackDelay().toNanos();
        receiveTimeoutNanos = config.receiveTimeout().toNanos();
        early = new EarlyChunks((int) Math.min(Integer.MAX_VALUE, config.earlyChunkBytes() / config.maxPayload()),
                config.maxPayload(), rankLimit);
        earlyLifetimeNanos = config.ackTimeout().toNanos();
    }

    /** How long an ACK may wait for more chunks (0: none waits). */
    long ackDelayNanos() {
        return ackDelayNanos;
    }

    /** Whether an ACK is waiting to be sent (the loop must wake for it). */
    boolean hasAckPending() {
        return !ackPending.isEmpty();
    }

    /**
     * Takes a posted receive: refused when its id was used or is in use. Chunks of it that came before are taken from
     * the held ones; those that had to be dropped are named in a NACK.
     */
    void admit(InboundMessage message) {
        PeerState peer = message.peer;
        if (message.refuseReusedId(received, peer.inbound, "received", "from", "is already expected")) {
            return;
        }
        message.lastActivityNanos = time.now;
        message.words = Bitmaps.wordsFor(message.chunkCount);
        message.received = pool.acquire(message.words);
        peer.inbound.add(message);
        if (early.heldFrom(peer.rank) > 0) {
            taking = message;
            early.take(peer.rank, message.id.step(), message.id.bucketId(), takeHeld);
            taking = null;
        }
        if (peer.unexpectedMatches(message.id.step(), message.id.bucketId(), message.chunkCount)) {
            if (message.done) peer.forgetUnexpected();
            else sendNack(peer, message);
        }
    }

    /** A held chunk of the message being admitted: delivered (and checked) as a fresh one would be. */
    private void takeHeld(int index, int count, MemorySegment segment, long offset, int length) {
        InboundMessage message = taking;
        if (message.done) {
            stats.increment(Counter.DUPLICATES_DROPPED); // completed by other held copies of its chunks (or failed)
            return;
        }
        deliver(message, index, count, segment, offset, length);
    }

    /** A held chunk dropped unclaimed: named in the NACK if its message is posted after all. */
    private void expireHeld(int step, int bucket, int count, int index) {
        stats.increment(Counter.EARLY_CHUNKS_EXPIRED);
        expiring.rememberUnexpected(step, bucket, count, index);
    }

    /**
     * Chunks of this message arrived before it was expected and were dropped: tell the sender which (a NACK with
     * the dropped chunks as its bitmap), so that it resends them now instead of after a retransmission timeout,
     * and without taking the drops for congestion.
     */
    private void sendNack(PeerState peer, InboundMessage message) {
        int base = peer.unexpectedBase;
        writer.sendNack(peer, message.id.step(), message.id.bucketId(), message.chunkCount, base,
                peer.unexpectedDropped);
        peer.forgetUnexpected();
    }

    /** A DATA chunk whose seal checked out: {@code length} bytes of data at {@code payloadOffset}. */
    void onData(PeerState peer, XafHeader h, MemorySegment segment, long payloadOffset, int length) {
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
                writer.sendAck(peer, step, bucket, count, count, count, null, 0);
            } else if (index >= 0 && index < count
                    && early.hold(peer.rank, step, bucket, count, index, segment, payloadOffset, length, time.now)) {
                stats.increment(Counter.EARLY_CHUNKS_HELD);
            } else {
                stats.increment(Counter.UNEXPECTED_DROPS);
                if (index >= 0 && index < count) {
                    peer.rememberUnexpected(step, bucket, count, index);
                }
            }
            return;
        }
        deliver(message, index, count, segment, payloadOffset, length);
    }

    /**
     * Hands chunk {@code index} of a chunk count {@code count} to the message's sink once and acknowledges it, after
     * checking its geometry against the posted receive (count, index, length; a mismatch is a malformed drop).
     */
    private void deliver(InboundMessage message, int index, int count, MemorySegment segment, long payloadOffset,
                         int length) {
        if (count != message.chunkCount || index < 0 || index >= count || length != message.expectedLength(index)) {
            stats.increment(Counter.MALFORMED_DROPS);
            return;
        }
        PeerState peer = message.peer;
        message.lastActivityNanos = time.now;
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
            finish(message);
            message.future.completeExceptionally(e);
            return;
        }
        Bitmaps.set(message.received, 0, index);
        message.receivedCount++;
        while (message.cumulative < count && Bitmaps.get(message.received, 0, message.cumulative)) {
            message.cumulative++;
        }
        if (message.receivedCount == count) {
            received.remember(peer.rank, message.id.step(), message.id.bucketId(), count);
            writer.sendAck(peer, message.id.step(), message.id.bucketId(), count, count, count, null, 0);
            finish(message);
            stats.increment(Counter.MESSAGES_RECEIVED);
            message.future.complete(null);
        } else {
            if (message.unackedChunks++ == 0) {
                message.firstUnackedNanos = time.now;
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

    /** Takes a finished (or failed) message off its peer and returns its bitmap to the pool. */
    void finish(InboundMessage message) {
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
    int flushAcks() {
        int sent = 0;
        int kept = 0;
        for (int i = 0, n = ackPending.size(); i < n; i++) {
            InboundMessage m = ackPending.get(i);
            if (m.done) {
                m.ackPending = false;
                continue;
            }
            if (!m.ackNow && time.now - m.firstUnackedNanos < ackDelayNanos) {
                ackPending.set(kept++, m);
                continue;
            }
            m.ackPending = false;
            m.ackNow = false;
            m.unackedChunks = 0;
            writer.sendAck(m.peer, m.id.step(), m.id.bucketId(), m.chunkCount, m.cumulative, m.receivedCount,
                    m.received, m.words);
            sent++;
        }
        for (int i = ackPending.size() - 1; i >= kept; i--) {
            ackPending.remove(i);
        }
        return sent;
    }

    /**
     * Drops held chunks of {@code peer} older than the ACK timeout, and fails the expected messages of {@code peer}
     * from which nothing arrived within the receive timeout.
     */
    int checkTimeouts(PeerState peer) {
        int work = 0;
        if (early.heldFrom(peer.rank) > 0) {
            expiring = peer;
            work += early.expire(peer.rank, time.now - earlyLifetimeNanos, expireHeld);
            expiring = null;
        }
        if (receiveTimeoutNanos <= 0) {
            return work;
        }
        for (int i = peer.inbound.size() - 1; i >= 0; i--) {
            InboundMessage m = peer.inbound.get(i);
            if (time.now - m.lastActivityNanos > receiveTimeoutNanos) {
                finish(m);
                m.future.completeExceptionally(new TransportTimeoutException(peer.rank, "rank "
                        + peer.rank + " sent no chunk of message " + m.id + " within "
                        + ReliableTransport.format(config.receiveTimeout())));
                work++;
            }
        }
        return work;
    }
}
