package io.xaforward.transport;

import java.lang.foreign.MemorySegment;

/**
 * Receiver-side state of one expected message: where chunks go, which ones arrived (a pooled bitmap) and the
 * chunk geometry, fixed by the posted receive (its size and the job's chunk size), never by what arrives.
 */
final class InboundMessage extends MessageState {
    final MemorySegment dest;
    /** {@code dest.byteSize()}, read once (as {@link OutboundMessage#byteSize}: no interface call per chunk). */
    final long byteSize;
    final ChunkSink sink;

    long chunkSize;
    long[] received;
    int receivedCount;
    int cumulative;
    boolean ackPending;
    /** Chunks received since this message's last ACK, and when the first of them arrived (delayed ACKs). */
    int unackedChunks;
    long firstUnackedNanos;
    /** Something the sender should hear of at once: a gap (loss or reordering) or a duplicate. */
    boolean ackNow;
    long lastActivityNanos;

    InboundMessage(PeerState peer, MessageId id, MemorySegment dest, ChunkSink sink) {
        super(peer, id);
        this.dest = dest;
        this.byteSize = dest.byteSize();
        this.sink = sink;
    }

    long chunkOffset(int index) {
        return index * chunkSize;
    }

    int expectedLength(int index) {
        return (int) (index < chunkCount - 1 ? chunkSize : byteSize - chunkSize * (chunkCount - 1));
    }
}
