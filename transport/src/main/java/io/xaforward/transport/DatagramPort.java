package io.xaforward.transport;

import java.lang.foreign.MemorySegment;

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

    /**
     * Delivers up to {@code limit} received datagrams to {@code handler} and returns how many it delivered;
     * never blocks.
     */
    int poll(DatagramHandler handler, int limit);

    /** The address other ports use to reach this one. */
    Peer localPeer();

    @Override
    void close();
}
