package io.xaforward.transport;

import java.util.Arrays;

/**
 * Sliding-window replay check over the 64-bit sequence numbers of one sender (IPsec style): a sequence number is
 * accepted once, if it is newer than the newest seen or at most {@link #size()} - 1 older and not seen yet. Only
 * authenticated datagrams may be recorded, or a forger could slide the window. Allocation-free.
 *
 * <p>The window must reach further back than genuine reordering can: a datagram overtaken by {@code size()} later
 * ones of the same sender would be dropped as a replay. {@link #sizeFor} derives the size from what a sender may
 * have in flight towards one receiver (docs/TRANSPORT.md, "Wire security").
 */
final class ReplayWindow {
    /** The smallest window, and the one of a transport with a small in-flight window. */
    static final int MIN_SIZE = 1024;
    /** The largest window: 8 KiB of bits per peer. */
    static final int MAX_SIZE = 1 << 16;
    /**
     * How many times the data window a sender's sequence numbers towards one peer can run ahead of a datagram
     * still in flight: its data chunks (at most the window) plus the ACKs and NACKs it sends the same peer for
     * that peer's own chunks (at most one per chunk, the peer's window being the same), so 2; the window then
     * rounds up to a power of two.
     */
    static final int SEQUENCES_PER_WINDOW_CHUNK = 2;

    private final long[] seen;
    private final int size;
    private long newest;
    private boolean started;

    /** A window of the minimum size. */
    ReplayWindow() {
        this(MIN_SIZE);
    }

    /** @param size a power of two in [{@link #MIN_SIZE}, {@link #MAX_SIZE}] */
    ReplayWindow(int size) {
        if (size < MIN_SIZE || size > MAX_SIZE || Integer.bitCount(size) != 1) {
            throw new IllegalArgumentException("a replay window is a power of two from " + MIN_SIZE + " to "
                    + MAX_SIZE + ", was " + size);
        }
        this.size = size;
        this.seen = new long[size / 64];
    }

    /**
     * The window that holds every sequence number a sender with {@code windowChunks} chunks in flight over {@code
     * flows} flows can reorder: {@link #SEQUENCES_PER_WINDOW_CHUNK} × window × flows, rounded up to a power of two,
     * at least {@link #MIN_SIZE}. Flows are counted although one sequence space spans them all, as margin: the
     * flows reach the receiver through separate queues and cores, which is where reordering comes from.
     *
     * @throws IllegalArgumentException when that exceeds {@link #MAX_SIZE}: such a configuration would count
     *                                  genuine datagrams as replays, so it is refused
     */
    /** The largest window (chunks in flight per peer) a receiver can check for replays when peers send over {@code flows}. */
    static int largestWindow(int flows) {
        return MAX_SIZE / (SEQUENCES_PER_WINDOW_CHUNK * Math.max(1, flows));
    }

    static int sizeFor(int windowChunks, int flows) {
        if (windowChunks < 1 || flows < 1) {
            throw new IllegalArgumentException("window " + windowChunks + " and flows " + flows + " must be positive");
        }
        long needed = (long) SEQUENCES_PER_WINDOW_CHUNK * windowChunks * flows;
        if (needed > MAX_SIZE) {
            throw new IllegalArgumentException("a window of " + windowChunks + " chunks over " + flows + " flows needs a"
                    + " replay window of " + needed + " sequence numbers, more than the " + MAX_SIZE + " a receiver"
                    + " keeps; use at most " + MAX_SIZE / ((long) SEQUENCES_PER_WINDOW_CHUNK * flows)
                    + " chunks with " + flows + " flows");
        }
        return Math.max(MIN_SIZE, Integer.highestOneBit((int) needed - 1) << 1);
    }

    int size() {
        return size;
    }

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
            if (advance >= size) {
                Arrays.fill(seen, 0L);
            } else {
                for (long s = newest + 1; s <= sequence; s++) {
                    clear(s);
                }
            }
            newest = sequence;
            set(sequence);
            return true;
        }
        if (newest - sequence >= size || isSet(sequence)) {
            return false;
        }
        set(sequence);
        return true;
    }

    private int word(long s) { return (int) ((s >>> 6) & (seen.length - 1)); }
    private void set(long s) { seen[word(s)] |= 1L << s; }
    private void clear(long s) { seen[word(s)] &= ~(1L << s); }
    private boolean isSet(long s) { return (seen[word(s)] & (1L << s)) != 0; }
}
