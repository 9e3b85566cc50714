package io.xaforward.transport;

import java.util.Locale;

/**
 * TCP Reno's loss-based window (RFC 5681): slow start, additive increase, the window halved once per loss episode and
 * reset to {@value #MIN_CWND} chunks by a timeout, with reductions undone when the loss proves spurious (RFC 3522's
 * idea, as Linux does on F-RTO/DSACK evidence). {@link CongestionControl#WINDOW}.
 */
final class LossWindow implements CongestionController {
    /** Chunks in flight at the start, as TCP's initial window (RFC 6928 has 10 segments; a LAN path takes more). */
    static final int INITIAL_CWND = 32;
    /** The window never shrinks below this many chunks, so that SACK keeps detecting losses after a timeout. */
    static final int MIN_CWND = 2;

    private final int maxWindow;
    /** Congestion window in chunks (fractional: congestion avoidance adds 1/cwnd per acknowledged chunk). */
    double cwnd;
    /** Slow-start threshold in chunks. */
    double ssthresh;
    /** Losses of chunks sent before this instant belong to the loss episode that already reduced the window. */
    private long recoveryStartNanos;
    /** Window and threshold before the current reductions (0: nothing to undo). */
    private double undoCwnd;
    private double undoSsthresh;

    /** @param maxWindow the configured window: the congestion window never grows past it */
    LossWindow(int maxWindow) {
        this.maxWindow = maxWindow;
        this.cwnd = Math.min(maxWindow, INITIAL_CWND);
        this.ssthresh = maxWindow;
    }

    @Override
    public int windowChunks() {
        return (int) cwnd;
    }

    /** Slow start below ssthresh (one chunk per chunk acknowledged), else additive increase (one per window). */
    @Override
    public void onAck(long now, long bytes, int chunks, long rttSampleNanos, int inFlightChunks) {
        if (cwnd >= undoCwnd) {
            undoCwnd = 0; // grown back: nothing left to undo
        }
        for (int i = 0; i < chunks && cwnd < maxWindow; i++) {
            cwnd += cwnd < ssthresh ? 1 : 1 / cwnd;
        }
        cwnd = Math.min(cwnd, maxWindow);
    }

    /**
     * Halves the window once per loss episode (multiplicative decrease), i.e. only for losses of chunks sent after
     * the previous reduction.
     */
    @Override
    public boolean onLoss(long sentNanos, long nowNanos) {
        if (sentNanos < recoveryStartNanos) {
            return false;
        }
        rememberForUndo();
        ssthresh = Math.max(MIN_CWND, cwnd / 2);
        cwnd = ssthresh;
        recoveryStartNanos = nowNanos;
        return true;
    }

    /**
     * Nothing is known to be getting through, so start again from the minimum window (as TCP does). On these paths a
     * timeout is more often a receiver that was briefly descheduled than a congested link; then the late ACKs of the
     * first copies undo the reduction ({@link #undoSpuriousReduction}).
     */
    @Override
    public boolean onTimeout(long nowNanos) {
        rememberForUndo();
        ssthresh = Math.max(MIN_CWND, cwnd / 2);
        cwnd = MIN_CWND;
        recoveryStartNanos = nowNanos;
        return true;
    }

    private void rememberForUndo() {
        if (undoCwnd == 0) {
            undoCwnd = cwnd;
            undoSsthresh = ssthresh;
        }
    }

    /** Restores the window the spurious loss cost. */
    @Override
    public boolean undoSpuriousReduction() {
        if (undoCwnd == 0) {
            return false;
        }
        cwnd = Math.max(cwnd, undoCwnd);
        ssthresh = Math.max(ssthresh, undoSsthresh);
        undoCwnd = 0;
        return true;
    }

    @Override
    public String summary() {
        return String.format(Locale.ROOT, "cwnd %.1f, ssthresh %.1f", cwnd, ssthresh);
    }
}
