package io.xaforward.transport;

import io.xaforward.protocol.MessageType;
import io.xaforward.protocol.XafHeader;
import io.xaforward.transport.TransportStats.Counter;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * Writes, seals and hands to the port every datagram the transport sends: DATA chunks (claim-then-write straight
 * into the port's memory when it offers that), ACKs and NACKs; paces them with an optional token bucket and counts
 * them. Owns the send buffer and the header template, so nothing is allocated per datagram. Event-loop thread only.
 */
final class DatagramWriter {
    private final TransportConfig config;
    private final DatagramPort port;
    private final WireSeal seal;
    private final TransportStats stats;
    private final LoopTime time;

    private final XafHeader txHeader = new XafHeader();
    private final MemorySegment txSegment;
    /** The port's claim-then-write memory (data chunks are written there in place), or null if it has none. */
    private final MemorySegment claimSegment;
    /** A freshly initialised header, copied over the send buffer instead of XafHeader.init() (which slices). */
    private final MemorySegment headerTemplate;

    private final double pacingBytesPerNano;
    private final double pacingBurst;
    private double tokens;
    private long lastRefillNanos;

    DatagramWriter(TransportConfig config, DatagramPort port, WireSeal seal, TransportStats stats, LoopTime time) {
        this.config = config;
        this.port = port;
        this.seal = seal;
        this.stats = stats;
        this.time = time;
        int datagram = XafHeader.LENGTH + config.maxPayload();
        txSegment = MemorySegment.ofBuffer(ByteBuffer.allocateDirect(Math.max(datagram,
                XafHeader.LENGTH + AckPayload.MAX_LENGTH + seal.trailerLength())));
        claimSegment = port.supportsClaim() ? port.claimSegment() : null;
        headerTemplate = MemorySegment.ofArray(new byte[XafHeader.LENGTH]);
        new XafHeader().wrap(headerTemplate, 0).init();
        long rate = config.pacingRateBytesPerSecond();
        pacingBytesPerNano = rate / 1e9;
        long burst = config.pacingBurstBytes() > 0 ? config.pacingBurstBytes()
                : Math.max(4L * datagram, rate / 200); // 5 ms of traffic
        pacingBurst = burst;
        tokens = burst;
        lastRefillNanos = time.now;
    }

    // ---------------------------------------------------------------- pacing

    /** Whether a token bucket paces the sends (the loop then polls instead of sleeping in the port). */
    boolean paced() {
        return pacingBytesPerNano > 0;
    }

    /** Adds the tokens earned since the last refill (up to the burst). */
    void refill() {
        if (pacingBytesPerNano > 0) {
            tokens = Math.min(pacingBurst, tokens + (time.now - lastRefillNanos) * pacingBytesPerNano);
            lastRefillNanos = time.now;
        }
    }

    /** True when pacing forbids sending more in this pass. */
    boolean outOfTokens() {
        return pacingBytesPerNano > 0 && tokens <= 0;
    }

    // ---------------------------------------------------------------- datagrams

    /**
     * Sends chunk {@code c} of {@code m} with {@code flags} (last chunk, retransmission); false when the port refused
     * it (counted), in which case nothing changed.
     */
    boolean sendChunk(OutboundMessage m, int c, int flags) {
        PeerState peer = m.peer;
        int length = m.chunkLength(c);
        if (claimSegment != null) {
            // Claim-then-write: the chunk is copied once, straight into the port's frame or send buffer.
            int datagram = XafHeader.LENGTH + length + seal.trailerLength();
            long at = port.claim(datagram, peer.address);
            if (at < 0) {
                stats.increment(Counter.PORT_SEND_FAILURES);
                return false;
            }
            MemorySegment.copy(m.data, m.chunkOffset(c), claimSegment, at + XafHeader.LENGTH, length);
            writeHeader(claimSegment, at, peer, MessageType.DATA, flags, m.elemType, m.id.step(), m.id.bucketId(), c,
                    m.chunkCount, length);
            return accounted(port.commitClaim(), datagram);
        }
        MemorySegment.copy(m.data, m.chunkOffset(c), txSegment, XafHeader.LENGTH, length);
        return transmit(peer, writeHeader(txSegment, 0, peer, MessageType.DATA, flags, m.elemType, m.id.step(),
                m.id.bucketId(), c, m.chunkCount, length));
    }

    /**
     * Sends an ACK for (step, bucket): the cumulative index, the received count and a SACK bitmap of the chunks above
     * the cumulative index taken from {@code bitmap} ({@code words} long; null for none).
     */
    void sendAck(PeerState peer, int step, int bucket, int count, int cumulative, int received,
                 long[] bitmap, int words) {
        int remaining = count - cumulative;
        int sackWords = bitmap == null ? 0 : Math.min(AckPayload.MAX_SACK_WORDS, Bitmaps.wordsFor(remaining));
        int used = 0; // trailing empty words are left out: nothing above the highest received chunk to report
        for (int w = 0; w < sackWords; w++) {
            if (Bitmaps.window64(bitmap, 0, words, cumulative + 64 * w) != 0) used = w + 1;
        }
        int payloadLength = AckPayload.length(used);
        long base = claimControl(peer, payloadLength);
        if (base < 0) {
            return;
        }
        MemorySegment out = controlSegment();
        long at = base + XafHeader.LENGTH;
        for (int w = 0; w < used; w++) {
            AckPayload.writeSackWord(out, at, w, Bitmaps.window64(bitmap, 0, words, cumulative + 64 * w));
        }
        AckPayload.writeFixed(out, at, cumulative, count, received, used);
        if (commitControl(base, peer, MessageType.ACK, step, bucket, cumulative, count, payloadLength)) {
            stats.increment(Counter.ACKS_SENT);
        }
    }

    /** Sends a NACK for (step, bucket) naming the chunks set in {@code dropped}, counted from {@code base}. */
    void sendNack(PeerState peer, int step, int bucket, int count, int base, long[] dropped) {
        int sackWords = 0;
        for (int w = 0; w < dropped.length; w++) {
            if (dropped[w] != 0) {
                sackWords = w + 1;
            }
        }
        int payloadLength = AckPayload.length(sackWords);
        long datagram = claimControl(peer, payloadLength);
        if (datagram < 0) {
            return;
        }
        MemorySegment out = controlSegment();
        long at = datagram + XafHeader.LENGTH;
        AckPayload.writeFixed(out, at, base, count, 0, sackWords);
        for (int w = 0; w < sackWords; w++) {
            AckPayload.writeSackWord(out, at, w, dropped[w]);
        }
        if (commitControl(datagram, peer, MessageType.NACK, step, bucket, base, count, payloadLength)) {
            stats.increment(Counter.NACKS_SENT);
        }
    }

    /**
     * Where an ACK or NACK is written: like data chunks, straight into the port's claimed memory when it offers
     * that, so the port copies nothing and the seal sees one buffer for every datagram (switching between two
     * costs it a new ByteBuffer view each time); else the send buffer.
     */
    private MemorySegment controlSegment() {
        return claimSegment != null ? claimSegment : txSegment;
    }

    /**
     * Room for a control datagram of {@code payloadLength} bytes (before the seal's trailer) to {@code peer}: its
     * offset in {@link #controlSegment()}, or -1 when the port refused the claim (counted).
     */
    private long claimControl(PeerState peer, int payloadLength) {
        if (claimSegment == null) {
            return 0;
        }
        long at = port.claim(XafHeader.LENGTH + payloadLength + seal.trailerLength(), peer.address);
        if (at < 0) {
            stats.increment(Counter.PORT_SEND_FAILURES);
        }
        return at;
    }

    /** Writes the header of the control datagram at {@code base}, seals it and hands it to the port. */
    private boolean commitControl(long base, PeerState peer, MessageType type, int step, int bucket, int chunkIndex,
                                  int chunkCount, int payloadLength) {
        int sealed = writeHeader(controlSegment(), base, peer, type, 0, 0, step, bucket, chunkIndex, chunkCount,
                payloadLength);
        if (claimSegment != null) {
            return accounted(port.commitClaim(), XafHeader.LENGTH + sealed);
        }
        return transmit(peer, sealed);
    }

    /**
     * Writes the header of a datagram at {@code base} of {@code segment} (a claimed frame or the send buffer), whose
     * {@code dataLength} bytes of data follow it already, and seals it; returns its payload length (data plus the
     * seal's trailer).
     */
    private int writeHeader(MemorySegment segment, long base, PeerState peer, MessageType type, int flags,
                            int elemType, int step, int bucket, int chunkIndex, int chunkCount, int dataLength) {
        int payloadLength = dataLength + seal.trailerLength();
        MemorySegment.copy(headerTemplate, 0, segment, base, XafHeader.LENGTH);
        txHeader.wrap(segment, base)
                .type(type.code()).flags(flags | seal.flags()).elemType(elemType)
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
}
