package io.xaforward.transport;

/**
 * Sliding-window replay check over the 64-bit sequence numbers of one sender (IPsec style): a sequence number is
 * accepted once, if it is newer than the newest seen or at most {@link #SIZE} - 1 older and not seen yet. Only
 * authenticated datagrams may be recorded, or a forger could slide the window. Allocation-free.
 */
final class ReplayWindow {
    static final int SIZE = 1024;
    private final long[] seen = new long[SIZE / 64];
    private long newest;
    private boolean started;

    /** True (and records it) if {@code sequence} was not seen before and is inside the window. */
    boolean accept(long sequence) {
        if (!started) {
            started = true;
            newest = sequence;
            set(sequence);
            return true;
        }
        if (sequence > newest) {
            long advance = sequence - newest;
            if (advance >= SIZE) {
                java.util.Arrays.fill(seen, 0L);
            } else {
                for (long s = newest + 1; s <= sequence; s++) {
                    clear(s);
                }
            }
            newest = sequence;
            set(sequence);
            return true;
        }
        if (newest - sequence >= SIZE || isSet(sequence)) {
            return false;
        }
        set(sequence);
        return true;
    }

    private void set(long s) { seen[(int) ((s >>> 6) & (SIZE / 64 - 1))] |= 1L << s; }
    private void clear(long s) { seen[(int) ((s >>> 6) & (SIZE / 64 - 1))] &= ~(1L << s); }
    private boolean isSet(long s) { return (seen[(int) ((s >>> 6) & (SIZE / 64 - 1))] & (1L << s)) != 0; }
}
