package io.xaforward.dataplane.xsk;

import java.lang.foreign.MemorySegment;

/**
 * Receives frames in place: {@code umem} is the socket's whole UMEM and the frame is {@code length} bytes at
 * {@code offset}. The bytes are valid only until the call returns (the frame then goes back to the FILL ring), so
 * copy whatever must outlive it.
 */
@FunctionalInterface
public interface FrameHandler {
    void onFrame(MemorySegment umem, long offset, int length);
}
