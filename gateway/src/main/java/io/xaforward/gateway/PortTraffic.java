package io.xaforward.gateway;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One gateway port's traffic as the Java engines count it, the same figures as the XDP program's per-port counters (served as {@link EngineMetrics.PortFamily}):
 * XAF frames received on the port (malformed ones included) with their frame lengths, and frames sent out of it
 * with their egress frame lengths, and frames routed out of it but dropped as too big for its MTU. Safe for several writer threads (the relay sends out of a port from the threads
 * of other ports); allocation-free.
 */
public final class PortTraffic {
    private static final int RX_PACKETS = 0, RX_BYTES = 1, TX_PACKETS = 2, TX_BYTES = 3, TX_TOO_BIG = 4;
    private final AtomicLongArray values = new AtomicLongArray(5);

    public void received(long frameBytes) {
        values.incrementAndGet(RX_PACKETS);
        values.addAndGet(RX_BYTES, frameBytes);
    }

    public void sent(long frameBytes) {
        values.incrementAndGet(TX_PACKETS);
        values.addAndGet(TX_BYTES, frameBytes);
    }

    /** A frame routed out of this port did not fit its MTU (dropped as drop_too_big). */
    public void tooBig() {
        values.incrementAndGet(TX_TOO_BIG);
    }

    public long rxPackets() { return values.get(RX_PACKETS); }
    public long rxBytes() { return values.get(RX_BYTES); }
    public long txPackets() { return values.get(TX_PACKETS); }
    public long txBytes() { return values.get(TX_BYTES); }
    public long txTooBig() { return values.get(TX_TOO_BIG); }
}
