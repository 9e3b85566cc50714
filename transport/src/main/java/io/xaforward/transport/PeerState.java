package io.xaforward.transport;

import java.util.ArrayList;
import java.util.Arrays;

/**
 * Everything the transport keeps per remote rank: its messages in both directions, the in-flight window, the
 * retransmission queue and the round-trip estimate that sets the retransmission timeout.
 */
final class PeerState {
    final int rank;
    final int networkId;
    final Peer address;
    final ArrayList<OutboundMessage> outbound = new ArrayList<>();
    final ArrayList<InboundMessage> inbound = new ArrayList<>();
    final ChunkRing inFlightQueue;
    final ChunkRing retransmitQueue;
    int inFlight;
    /** Sequence number of the next datagram sent to this peer (authenticated modes). */
    long txSequence;
    /** Sequence numbers of authentic datagrams received from this peer ({@link ReplayWindow#sizeFor} wide). */
    final ReplayWindow replayWindow;

    long srttNanos;
    long rttVarNanos;
    boolean hasRtt;
    int backoff;
    long lastBackoffNanos;
    /** Largest round-trip sample seen (diagnostics). */
    long maxRttNanos;
    /** When an ACK last acknowledged a new chunk of this peer: the retransmission timer runs from here. */
    long ackProgressNanos;
    /** Send time of the most recently sent chunk known delivered (never retransmitted, so unambiguous). */
    long newestDeliveredSentNanos;
    /** Round trip of that chunk: a chunk sent before it is lost once outstanding this long plus the reordering window. */
    long newestDeliveredRttNanos;

    /** Congestion window in chunks (fractional: congestion avoidance adds 1/cwnd per acknowledged chunk). */
    double cwnd;
    /** Slow-start threshold in chunks. */
    double ssthresh;
    /** Losses of chunks sent before this instant belong to the loss episode that already reduced the window. */
    long recoveryStartNanos;
    /** The message whose chunks arrived before it was expected (receiver side; unexpectedBase -1: none). */
    int unexpectedStep;
    int unexpectedBucket;
    int unexpectedCount;
    int unexpectedBase = -1;
    /** Bit i of word w: chunk unexpectedBase + 64w + i was dropped. */
    final long[] unexpectedDropped = new long[AckPayload.MAX_SACK_WORDS];

    /** Window and threshold before the current reductions (0: nothing to undo). */
    double undoCwnd;
    double undoSsthresh;

    /** The rate-based controller that replaces the window's loss response, or null for the loss-based window alone. */
    final RateController rate;

    PeerState(int rank, int networkId, Peer address, int window, int replayWindowSize) {
        this(rank, networkId, address, window, replayWindowSize, null);
    }

    PeerState(int rank, int networkId, Peer address, int window, int replayWindowSize, RateController rate) {
        this.rank = rank;
        this.rate = rate;
        this.replayWindow = new ReplayWindow(replayWindowSize);
        this.networkId = networkId;
        this.address = address;
        this.inFlightQueue = new ChunkRing(2 * window);
        this.retransmitQueue = new ChunkRing(window);
        this.cwnd = Math.min(window, INITIAL_CWND);
        this.ssthresh = window;
    }

    /** Chunks in flight at the start, as TCP's initial window (RFC 6928 has 10 segments; a LAN path takes more). */
    static final int INITIAL_CWND = 32;
    /** The window never shrinks below this many chunks, so that SACK keeps detecting losses after a timeout. */
    static final int MIN_CWND = 2;

    /** Chunks that may be in flight now: the congestion window, at most the configured window. */
    int sendWindow(int configuredWindow) {
        if (rate != null) {
            return Math.min(configuredWindow, rate.windowChunks());
        }
        return (int) Math.min(configuredWindow, cwnd);
    }

    /** Slow start below ssthresh (one chunk per chunk acknowledged), else additive increase (one per window). */
    void onAcked(int chunks, int configuredWindow) {
        if (rate != null) {
            return; // the rate controller sizes its window from its own ACK accounting (Sender#onAck)
        }
        if (cwnd >= undoCwnd) {
            undoCwnd = 0; // grown back: nothing left to undo
        }
        for (int i = 0; i < chunks && cwnd < configuredWindow; i++) {
            cwnd += cwnd < ssthresh ? 1 : 1 / cwnd;
        }
        cwnd = Math.min(cwnd, configuredWindow);
    }

    /**
     * A chunk sent at {@code sentNanos} was lost: halve the window once per loss episode (multiplicative decrease),
     * i.e. only for losses of chunks sent after the previous reduction. Returns whether the window was reduced.
     */
    boolean onLoss(long sentNanos, long nowNanos) {
        if (rate != null) {
            rate.onLoss(); // counted; the controller decides from the round's loss rate whether it was congestion
            return false;
        }
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
     * The retransmission timer expired: nothing is known to be getting through, so start again from the minimum
     * window (as TCP does). On these paths a timeout is more often a receiver that was briefly descheduled than a
     * congested link; then the late ACKs of the first copies undo the reduction ({@link #undoSpuriousReduction}).
     */
    void onTimeout(long nowNanos) {
        if (rate != null) {
            rate.onTimeout();
            return;
        }
        rememberForUndo();
        ssthresh = Math.max(MIN_CWND, cwnd / 2);
        cwnd = MIN_CWND;
        recoveryStartNanos = nowNanos;
    }

    private void rememberForUndo() {
        if (undoCwnd == 0) {
            undoCwnd = cwnd;
            undoSsthresh = ssthresh;
        }
    }

    /**
     * A chunk declared lost was acknowledged before it was sent again: its only copy arrived, so the loss (most
     * often a timeout during a scheduling stall of the receiver) was spurious. Restore the window it cost (as
     * Linux undoes a reduction on F-RTO/DSACK evidence); returns whether there was anything to undo.
     */
    boolean undoSpuriousReduction() {
        if (rate != null) {
            if (!rate.undoTimeout()) {
                return false;
            }
            backoff = 0;
            return true;
        }
        if (undoCwnd == 0) {
            return false;
        }
        cwnd = Math.max(cwnd, undoCwnd);
        ssthresh = Math.max(ssthresh, undoSsthresh);
        undoCwnd = 0;
        backoff = 0;
        return true;
    }

    /**
     * Remembers a chunk dropped because its message was not expected yet. One message per peer (the latest one);
     * chunks beyond the bitmap's 1024-chunk reach are left to the retransmission timer.
     */
    void rememberUnexpected(int step, int bucket, int count, int index) {
        if (unexpectedBase < 0 || step != unexpectedStep || bucket != unexpectedBucket || count != unexpectedCount) {
            forgetUnexpected();
            unexpectedStep = step;
            unexpectedBucket = bucket;
            unexpectedCount = count;
            unexpectedBase = index;
        }
        int offset = index - unexpectedBase;
        if (offset >= 0 && offset < 64 * unexpectedDropped.length) {
            unexpectedDropped[offset >>> 6] |= 1L << (offset & 63);
        }
    }

    boolean unexpectedMatches(int step, int bucket, int count) {
        return unexpectedBase >= 0 && step == unexpectedStep && bucket == unexpectedBucket && count == unexpectedCount;
    }

    void forgetUnexpected() {
        unexpectedBase = -1;
        Arrays.fill(unexpectedDropped, 0);
    }

    /** How much longer than the newest delivered chunk's round trip a chunk sent before it may take: srtt/4. */
    long reorderingWindowNanos() {
        return hasRtt ? srttNanos / 4 : 0;
    }

    /** RFC 6298 smoothing. */
    void rttSample(long sampleNanos) {
        maxRttNanos = Math.max(maxRttNanos, sampleNanos);
        if (!hasRtt) {
            srttNanos = sampleNanos;
            rttVarNanos = sampleNanos / 2;
            hasRtt = true;
        } else {
            rttVarNanos = (3 * rttVarNanos + Math.abs(srttNanos - sampleNanos)) / 4;
            srttNanos = (7 * srttNanos + sampleNanos) / 8;
        }
    }

    long rtoNanos(long initial, long min, long max) {
        long base = hasRtt ? srttNanos + Math.max(4 * rttVarNanos, min / 2) : initial;
        base = Math.clamp(base, min, max);
        return Math.min(max, base << Math.min(backoff, 10));
    }
}
