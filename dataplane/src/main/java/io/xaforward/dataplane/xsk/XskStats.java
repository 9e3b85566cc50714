package io.xaforward.dataplane.xsk;

/**
 * What an AF_XDP socket has done: frames this object delivered and transmitted (counted in user space) and the
 * kernel's own per-socket counters from getsockopt(XDP_STATISTICS).
 *
 * @param rxFrames         frames handed to a {@link FrameHandler}
 * @param txFrames         transmitted frames whose completion was reaped
 * @param rxDropped        frames the kernel dropped for this socket (e.g. too large for a frame)
 * @param rxRingFull       frames dropped because the RX ring was full (user space too slow)
 * @param fillRingEmpty    times the kernel found no frame in the FILL ring
 * @param rxInvalid        invalid descriptors on the receive side
 * @param txInvalid        invalid descriptors user space put on the TX ring
 * @param txRingEmpty      times the kernel found the TX ring empty when asked to send
 */
public record XskStats(long rxFrames, long txFrames, long rxDropped, long rxRingFull, long fillRingEmpty,
                       long rxInvalid, long txInvalid, long txRingEmpty) {

    /** Frames the kernel meant for this socket but could not deliver (an empty FILL ring shows up in rxDropped). */
    public long rxLost() { return rxDropped + rxRingFull; }
}
