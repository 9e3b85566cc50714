package io.xaforward.transport;

import java.lang.foreign.MemorySegment;

/**
 * Sender-side state of one message. Per-chunk state lives in one pooled bitmap array holding four bitmaps
 * (acknowledged, in flight, queued for retransmission, ever retransmitted) and a pooled array of last send times.
 */
final class OutboundMessage extends MessageState {
    final MemorySegment data;
    /**
     * {@code data.byteSize()}, read once: the segment's class differs between callers (heap, native, mapped), and an
     * interface call per chunk made the JIT deoptimise the send and ACK paths each time it met another class.
     */
    final long byteSize;
    final int elemType;

    int chunkSize;
    long[] bits;
    long[] lastSent;
    int nextNew;
    int lowestUnacked;
    int ackedCount;
    /** Time of the first transmission or of the last acknowledgement progress; 0 before the first transmission. */
    long progressNanos;
    /** A NACK for this message was acted on: the receiver sends one per message, so a second is refused. */
    boolean nackAnswered;

    OutboundMessage(PeerState peer, MessageId id, MemorySegment data, int elemType) {
        super(peer, id);
        this.data = data;
        this.byteSize = data.byteSize();
        this.elemType = elemType;
    }

    int ackedBase() { return 0; }
    int inFlightBase() { return words; }
    int queuedBase() { return 2 * words; }
    int retransmittedBase() { return 3 * words; }

    boolean acked(int chunk) { return Bitmaps.get(bits, 0, chunk); }
    boolean inFlight(int chunk) { return Bitmaps.get(bits, words, chunk); }
    boolean queued(int chunk) { return Bitmaps.get(bits, 2 * words, chunk); }
    /** Whether a first transmission is left that an ACK's SACK bitmap can still report (so every arrival can be). */
    boolean hasNewChunkInReach() {
        return nextNew < chunkCount && nextNew - lowestUnacked < AckPayload.SACK_SPAN_CHUNKS;
    }

    long chunkOffset(int chunk) {
        return (long) chunk * chunkSize;
    }

    int chunkLength(int chunk) {
        return (int) Math.min(chunkSize, byteSize - chunkOffset(chunk));
    }
}
