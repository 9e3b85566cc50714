package io.xaforward.dataplane;

/**
 * Per-port traffic of the XDP gateway, indexed by port slot (0..63), summed over CPUs at one moment: XAF frames
 * received on the port and their ingress lengths, frames forwarded out of it and their egress lengths, and frames
 * routed to it but dropped as too big for its MTU. Cumulative since load; {@link #minus} gives the traffic between
 * two snapshots.
 */
public record PortCounterSnapshot(long[] rxPackets, long[] rxBytes, long[] txPackets, long[] txBytes, long[] txTooBig) {
    public PortCounterSnapshot {
        for (long[] a : new long[][] {rxPackets, rxBytes, txPackets, txBytes, txTooBig}) {
            if (a.length != SharedLayouts.MAX_PORTS) throw new IllegalArgumentException("need one value per port slot");
        }
        rxPackets = rxPackets.clone();
        rxBytes = rxBytes.clone();
        txPackets = txPackets.clone();
        txBytes = txBytes.clone();
        txTooBig = txTooBig.clone();
    }

    public long rxPackets(int slot) { return rxPackets[slot]; }
    public long rxBytes(int slot) { return rxBytes[slot]; }
    public long txPackets(int slot) { return txPackets[slot]; }
    public long txBytes(int slot) { return txBytes[slot]; }
    /** Frames routed out of the port but dropped because they did not fit its MTU. */
    public long txTooBig(int slot) { return txTooBig[slot]; }

    @Override public long[] rxPackets() { return rxPackets.clone(); }
    @Override public long[] rxBytes() { return rxBytes.clone(); }
    @Override public long[] txPackets() { return txPackets.clone(); }
    @Override public long[] txBytes() { return txBytes.clone(); }
    @Override public long[] txTooBig() { return txTooBig.clone(); }

    /** This snapshot minus an earlier one. */
    public PortCounterSnapshot minus(PortCounterSnapshot earlier) {
        return new PortCounterSnapshot(diff(rxPackets, earlier.rxPackets), diff(rxBytes, earlier.rxBytes),
                diff(txPackets, earlier.txPackets), diff(txBytes, earlier.txBytes), diff(txTooBig, earlier.txTooBig));
    }

    private static long[] diff(long[] a, long[] b) {
        long[] d = new long[a.length];
        for (int i = 0; i < a.length; i++) d[i] = a[i] - b[i];
        return d;
    }
}
