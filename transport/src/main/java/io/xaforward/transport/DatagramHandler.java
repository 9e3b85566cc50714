package io.xaforward.transport;

import java.lang.foreign.MemorySegment;

/**
 * Receives one XAF datagram (XAF header + payload, outer headers already stripped) from {@link DatagramPort#poll}.
 * The bytes are only valid during the call: the backend reuses its receive buffer for the next datagram.
 */
@FunctionalInterface
public interface DatagramHandler {
    void onDatagram(MemorySegment segment, long offset, int length);
}
