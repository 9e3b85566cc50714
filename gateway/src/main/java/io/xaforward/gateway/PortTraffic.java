package io.xaforward.gateway;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One gateway port's traffic as the Java engines count it, the same figures as the XDP program's per-port counters:
 * XAF frames received on the port (malformed ones included) with their frame lengths, and frames sent out of it
 * with their egress frame lengths. Safe for several writer threads (the relay sends out of a port from the threads
 * of other ports); allocation-free.
 */
public final class PortTraffic {
    private static final int RX_PACKETS = 0, RX_BYTES = 1, TX_PACKETS = 2, TX_BYTES = 3;
    private final AtomicLongArray values = new AtomicLongArray(4);

    public void received(long frameBytes) {
        values.incrementAndGet(RX_PACKETS);
        values.addAndGet(RX_BYTES, frameBytes);
    }

    public void sent(long frameBytes) {
        values.incrementAndGet(TX_PACKETS);
        values.addAndGet(TX_BYTES, frameBytes);
    }

    public long rxPackets() { return values.get(RX_PACKETS); }
    public long rxBytes() { return values.get(RX_BYTES); }
    public long txPackets() { return values.get(TX_PACKETS); }
    public long txBytes() { return values.get(TX_BYTES); }

    /** Appends " rx_packets.IFACE=N rx_bytes.IFACE=N tx_packets.IFACE=N tx_bytes.IFACE=N" to a counter line. */
    public void appendTo(StringBuilder line, String iface) {
        line.append(" rx_packets.").append(iface).append('=').append(rxPackets())
                .append(" rx_bytes.").append(iface).append('=').append(rxBytes())
                .append(" tx_packets.").append(iface).append('=').append(txPackets())
                .append(" tx_bytes.").append(iface).append('=').append(txBytes());
    }
}
