package io.xaforward.transport;

import java.lang.foreign.MemorySegment;

/**
 * What the receiver does with each chunk payload, called exactly once per chunk of a message (duplicates are
 * suppressed before it) on the transport's event-loop thread, straight from the receive buffer. Letting the
 * caller choose means a reduction can add into its accumulator without a separate copy pass.
 */
@FunctionalInterface
public interface ChunkSink {

    /** Copies the payload into {@code dest} at the chunk's offset. */
    ChunkSink COPY = (dest, destOffset, payload, payloadOffset, length) ->
            MemorySegment.copy(payload, payloadOffset, dest, destOffset, length);

    /**
     * @param dest          the segment given to expect
     * @param destOffset    byte offset of this chunk within the message
     * @param payload       the receive buffer; valid only during this call
     * @param payloadOffset offset of the first payload byte in {@code payload}
     * @param length        payload bytes
     */
    void accept(MemorySegment dest, long destOffset, MemorySegment payload, long payloadOffset, int length);
}
