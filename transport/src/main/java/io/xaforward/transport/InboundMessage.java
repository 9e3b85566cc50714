package io.xaforward.transport;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;

/**
 * Receiver-side state of one expected message: where chunks go, which ones arrived (a pooled bitmap) and the
 * chunk geometry learnt from the first chunk that arrives.
 */
final class InboundMessage {
    final PeerState peer;
    final MessageId id;
    final MemorySegment dest;
    final ChunkSink sink;
    final CompletableFuture<Void> future = new CompletableFuture<>();

    /** -1 until the first chunk arrives. */
    int chunkCount = -1;
    long chunkSize;
    int words;
    long[] received;
    int receivedCount;
    int cumulative;
    boolean ackPending;
    long lastActivityNanos;
    boolean done;

    InboundMessage(PeerState peer, MessageId id, MemorySegment dest, ChunkSink sink) {
        this.peer = peer;
        this.id = id;
        this.dest = dest;
        this.sink = sink;
    }

    boolean matches(int step, int bucketId) {
        return id.step() == step && id.bucketId() == bucketId;
    }

    /**
     * Learns chunk count and size from the first chunk: every chunk but the last has the same size, so a non-last
     * chunk gives it directly and the last one gives it through the message size. Returns false if the chunk
     * cannot belong to a message of {@code dest.byteSize()} bytes.
     */
    boolean learnGeometry(int index, int count, int length) {
        long size = dest.byteSize();
        if (count < 1 || index < 0 || index >= count || count > size + 1) {
            return false;
        }
        long candidate;
        if (count == 1) {
            candidate = length;
        } else if (index < count - 1) {
            candidate = length;
        } else {
            long rest = size - length;
            if (rest <= 0 || rest % (count - 1) != 0) {
                return false;
            }
            candidate = rest / (count - 1);
        }
        long last = size - candidate * (count - 1);
        if (candidate <= 0 && size > 0 || last < 0 || last > candidate || (count > 1 && last == 0)) {
            return false;
        }
        chunkCount = count;
        chunkSize = candidate;
        return true;
    }

    long chunkOffset(int index) {
        return index * chunkSize;
    }

    int expectedLength(int index) {
        return (int) (index < chunkCount - 1 ? chunkSize : dest.byteSize() - chunkSize * (chunkCount - 1));
    }
}
