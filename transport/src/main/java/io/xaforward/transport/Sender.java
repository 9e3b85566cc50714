package io.xaforward.transport;

import io.xaforward.protocol.XafHeader;
import io.xaforward.transport.TransportStats.Counter;

import java.lang.foreign.MemorySegment;

/**
 * The sending half of the transport: messages being sent, the window of chunks in flight per peer (congestion state
 * in {@link PeerState}), ACK and NACK processing, loss detection (RACK, retransmission timer, NACK) and the order in
 * which chunks go out. Event-loop thread only.
 */
final class Sender {
    private static final int SEND_BATCH = 64;
    private static final int COMPLETED_MEMORY = 4096;

    private final TransportConfig config;
    private final DatagramWriter writer;
    private final TransportStats stats;
    private final LongArrayPool pool;
    private final LoopTime time;
    private final PeerState[] peers;
    /** Recently completed outbound messages, so that a reused message id is refused. */
    private final RecentMessages sent = new RecentMessages(COMPLETED_MEMORY);
    private final long initialRtoNanos;
    private final long minRtoNanos;
    private final long maxRtoNanos;
    private final long ackTimeoutNanos;
    private int peerCursor;
    private long lastSendStamp;
    /** Bytes (header and payload) of the chunks the ACK being processed acknowledged for the first time. */
    private long ackedBytes;
    /** Chunks in flight per peer at most: the configured window, less where the port's flows need it. */
    private final int window;

    Sender(TransportConfig config, int window, PeerState[] peers, DatagramWriter writer, TransportStats stats,
           LongArrayPool pool, LoopTime time) {
        this.config = config;
        this.window = window;
        this.peers = peers;
        this.writer = writer;
        this.stats = stats;
        this.pool = pool;
        this.time = time;
        initialRtoNanos = config.initialRto().toNanos();
        minRtoNanos = config.minRto().toNanos();
        maxRtoNanos = config.maxRto().toNanos();
        ackTimeoutNanos = config.ackTimeout().toNanos();
    }

    /** The retransmission timeout of {@code peer} now. */
    long rtoNanos(PeerState peer) {
        return peer.rtoNanos(initialRtoNanos, minRtoNanos, maxRtoNanos);
    }

    /** Takes a submitted send: refused when its id was used or is in use. */
    void admit(OutboundMessage message) {
        PeerState peer = message.peer;
        if (message.refuseReusedId(sent, peer.outbound, "sent", "to", "is already being sent")) {
            return;
        }
        message.words = Bitmaps.wordsFor(message.chunkCount);
        message.bits = pool.acquire(4 * message.words);
        message.lastSent = pool.acquire(message.chunkCount);
        peer.outbound.add(message);
    }


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

    void onAck(PeerState peer, XafHeader h, MemorySegment segment, long at, int length) {
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
        ackedBytes = 0;
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
            long deliveredSent = time.now - bestSample;
            if (deliveredSent >= peer.newestDeliveredSentNanos) {
                peer.newestDeliveredSentNanos = deliveredSent;
                peer.newestDeliveredRttNanos = bestSample;
            }
        }
        if (newlyAcked > 0) {
            message.progressNanos = time.now;
            peer.ackProgressNanos = time.now;
            // Any progress ends the backoff: a pair that only ever exchanges retransmitted one-chunk messages (a
            // barrier posted late) has no clean RTT sample, and a backoff kept until one would stall it at maxRto.
            peer.backoff = 0;
            peer.congestion.onAck(time.now, ackedBytes, newlyAcked, bestSample == NO_RTT_SAMPLE ? -1 : bestSample,
                    peer.inFlight);
        }
        if (message.ackedCount == count) {
            finish(message);
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
    void onNack(PeerState peer, XafHeader h, MemorySegment segment, long at, int length) {
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
        int resends = window;
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
        peer.ackProgressNanos = time.now;
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
        ackedBytes += XafHeader.LENGTH + message.chunkLength(c);
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
        return time.now - message.lastSent[c];
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
            long queuedAt = queue.headTime();
            queue.removeHead();
            if (m.done || !m.queued(c) || m.acked(c)) {
                continue;
            }
            if (Bitmaps.get(m.bits, m.retransmittedBase(), c)) {
                queue.addLast(m, c, queuedAt); // resent before and lost again: still to resend
                continue;
            }
            Bitmaps.clear(m.bits, m.queuedBase(), c);
            Bitmaps.set(m.bits, m.retransmittedBase(), c);
            markInFlight(peer, m, c, time.now);
            stats.increment(Counter.RESTORED_CHUNKS);
        }
    }

    private void declareLost(OutboundMessage message, int c) {
        Bitmaps.clear(message.bits, message.inFlightBase(), c);
        message.peer.inFlight--;
        Bitmaps.set(message.bits, message.queuedBase(), c);
        message.peer.retransmitQueue.addLast(message, c, time.now);
    }

    void finish(OutboundMessage message) {
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
    int checkRetransmitTimers() {
        int work = 0;
        for (PeerState peer : peers) {
            if (peer == null || peer.inFlightQueue.isEmpty()) {
                continue;
            }
            long rto = rtoNanos(peer);
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
                if (sentAt < peer.newestDeliveredSentNanos && time.now - sentAt >= lostAge) {
                    if (peer.congestion.onLoss(sentAt, time.now)) {
                        stats.increment(Counter.CWND_REDUCTIONS);
                    }
                    stats.increment(Counter.SACK_LOSSES);
                } else if (time.now - Math.max(sentAt, peer.ackProgressNanos) >= rto) {
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
                if (peer.congestion.onTimeout(time.now)) {
                    stats.increment(Counter.CWND_REDUCTIONS);
                }
                // The timer restarts for what remains in flight; the backoff doubles it until a clean RTT sample.
                peer.ackProgressNanos = time.now;
                if (time.now - peer.lastBackoffNanos >= rto) {
                    peer.backoff++;
                    peer.lastBackoffNanos = time.now;
                }
            }
        }
        return work;
    }

    int sendData() {
        writer.refill();
        int sent = 0;
        int n = peers.length;
        boolean progress = true;
        // Round-robin one chunk per peer per round so that no destination starves the others.
        while (sent < SEND_BATCH && progress) {
            progress = false;
            for (int i = 0; i < n && sent < SEND_BATCH; i++) {
                if (writer.outOfTokens()) {
                    return sent;
                }
                PeerState peer = peers[(peerCursor + i) % n];
                if (peer == null || peer.inFlight >= peer.sendWindow(window)
                        || !peer.congestion.pacingAllows(time.now)) {
                    continue;
                }
                if (sendOne(peer)) {
                    sent++;
                    progress = true;
                } else if (!hasChunkToSend(peer)) {
                    peer.congestion.markAppLimited(); // room in the window and nothing to send
                }
            }
            peerCursor = n == 0 ? 0 : (peerCursor + 1) % n;
        }
        return sent;
    }

    /** Whether {@code peer} has a resend queued or a new chunk within reach of the ACKs' SACK bitmap. */
    private static boolean hasChunkToSend(PeerState peer) {
        if (!peer.retransmitQueue.isEmpty()) {
            return true;
        }
        for (int i = 0, size = peer.outbound.size(); i < size; i++) {
            if (peer.outbound.get(i).hasNewChunkInReach()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Nanoseconds until a peer that the pacer holds back may send again (0: one may send now), or Long.MAX_VALUE
     * when no peer is held back by its pacer: how long the event loop may sleep without delaying a paced send.
     */
    long nanosUntilPacedSend() {
        long wait = Long.MAX_VALUE;
        for (PeerState peer : peers) {
            if (peer != null && peer.inFlight < peer.sendWindow(window) && hasChunkToSend(peer)) {
                wait = Math.min(wait, peer.congestion.nanosUntilPacingCredit(time.now));
            }
        }
        return wait;
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
            stats.add(Counter.RETRANSMITTED_BYTES, m.chunkLength(c));
            return true;
        }
        for (int i = 0, size = peer.outbound.size(); i < size; i++) {
            OutboundMessage m = peer.outbound.get(i);
            if (m.hasNewChunkInReach()) {
                if (m.progressNanos == 0) {
                    m.progressNanos = time.now; // the ack timeout runs from the first attempt, even a refused one
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

    /** Chunk {@code c} of {@code m} is (again) in flight to {@code peer}, stamped with a fresh send time. */
    private void markInFlight(PeerState peer, OutboundMessage m, int c, long now) {
        // Strictly increasing (0 means "never sent"): chunks sent in one pass stay ordered for loss detection.
        long sentAt = Math.max(now, lastSendStamp + 1);
        lastSendStamp = sentAt;
        m.lastSent[c] = sentAt;
        Bitmaps.set(m.bits, m.inFlightBase(), c);
        peer.inFlight++;
        peer.inFlightQueue.addLast(m, c, sentAt);
    }

    /** Sends chunk {@code c} of {@code m} (a first transmission or a resend) and marks it in flight. */
    private boolean sendChunk(OutboundMessage m, int c, boolean retransmit) {
        int flags = (c == m.chunkCount - 1 ? XafHeader.FLAG_LAST_CHUNK : 0)
                | (retransmit ? XafHeader.FLAG_RETRANSMIT : 0);
        if (!writer.sendChunk(m, c, flags)) {
            return false;
        }
        stats.increment(Counter.DATA_CHUNKS_SENT);
        m.peer.congestion.onSent(time.now, XafHeader.LENGTH + m.chunkLength(c));
        markInFlight(m.peer, m, c, time.now);
        return true;
    }

    /** Fails the messages to {@code peer} that were not acknowledged within the ACK timeout. */
    int checkTimeouts(PeerState peer) {
        int work = 0;
        for (int i = peer.outbound.size() - 1; i >= 0; i--) {
            OutboundMessage m = peer.outbound.get(i);
            if (m.progressNanos != 0 && time.now - m.progressNanos > ackTimeoutNanos) {
                finish(m);
                stats.increment(Counter.SEND_TIMEOUTS);
                m.future.completeExceptionally(new TransportTimeoutException(peer.rank, "rank " + peer.rank
                        + " did not acknowledge message " + m.id + " within "
                        + ReliableTransport.format(config.ackTimeout())));
                work++;
            }
        }
        return work;
    }
}
