package io.xaforward.dataplane;

import java.util.Arrays;

/**
 * Packets and bytes per {@link Counter}, summed over CPUs at one moment. Snapshots are cumulative since load;
 * {@link #minus} gives the traffic between two of them.
 */
public record CounterSnapshot(long[] packets, long[] bytes) {
    public CounterSnapshot {
        if (packets.length != Counter.values().length || bytes.length != Counter.values().length) {
            throw new IllegalArgumentException("need one value per Counter");
        }
        packets = packets.clone();
        bytes = bytes.clone();
    }

    public long packets(Counter c) { return packets[c.ordinal()]; }
    public long bytes(Counter c) { return bytes[c.ordinal()]; }

    @Override public long[] packets() { return packets.clone(); }
    @Override public long[] bytes() { return bytes.clone(); }

    /** This snapshot minus an earlier one. */
    public CounterSnapshot minus(CounterSnapshot earlier) {
        long[] p = new long[packets.length];
        long[] b = new long[bytes.length];
        for (int i = 0; i < p.length; i++) {
            p[i] = packets[i] - earlier.packets[i];
            b[i] = bytes[i] - earlier.bytes[i];
        }
        return new CounterSnapshot(p, b);
    }

    /** Sum of packets over all counters except RX_XAF: every frame the program saw, once. */
    public long totalFrames() {
        long t = 0;
        for (Counter c : Counter.values()) if (c != Counter.RX_XAF) t += packets(c);
        return t;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CounterSnapshot s && Arrays.equals(packets, s.packets) && Arrays.equals(bytes, s.bytes);
    }

    @Override
    public int hashCode() { return Arrays.hashCode(packets) * 31 + Arrays.hashCode(bytes); }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("CounterSnapshot[");
        for (Counter c : Counter.values()) {
            if (packets(c) != 0 || bytes(c) != 0) sb.append(c).append('=').append(packets(c)).append('/').append(bytes(c)).append("B ");
        }
        return sb.append(']').toString();
    }
}
