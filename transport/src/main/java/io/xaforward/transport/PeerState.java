package io.xaforward.transport;

import java.util.ArrayList;
import java.util.Arrays;

/**
 * Everything the transport keeps per remote rank: its messages in both directions, the in-flight window, the
 * retransmission queue, the round-trip estimate that sets the retransmission timeout and the congestion controller.
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

    /** The message whose chunks arrived before it was expected (receiver side; unexpectedBase -1: none). */
    int unexpectedStep;
    int unexpectedBucket;
    int unexpectedCount;
    int unexpectedBase = -1;
    /** Bit i of word w: chunk unexpectedBase + 64w + i was dropped. */
    final long[] unexpectedDropped = new long[AckPayload.MAX_SACK_WORDS];

    /** The loss-based window or the rate controller: how much may be in flight, and when the next chunk may go. */
    final CongestionController congestion;

    /** A peer under the loss-based window ({@link LossWindow}). */
    PeerState(int rank, int networkId, Peer address, int window, int replayWindowSize) {
        this(rank, networkId, address, window, replayWindowSize, new LossWindow(window));
    }

    PeerState(int rank, int networkId, Peer address, int window, int replayWindowSize,
              CongestionController congestion) {
        this.rank = rank;
        this.congestion = congestion;
        this.replayWindow = new ReplayWindow(replayWindowSize);
        this.networkId = networkId;
        this.address = address;
        this.inFlightQueue = new ChunkRing(2 * window);
        this.retransmitQueue = new ChunkRing(window);
    }

    /** Chunks that may be in flight now: the controller's window, at most the configured window. */
    int sendWindow(int configuredWindow) {
        return Math.min(configuredWindow, congestion.windowChunks());
    }

    /**
     * A chunk declared lost was acknowledged before it was sent again: its only copy arrived, so the loss (most
     * often a timeout during a scheduling stall of the receiver) was spurious. Undo what it cost, the timer's
     * backoff included; returns whether there was anything to undo.
     */
    boolean undoSpuriousReduction() {
        if (!congestion.undoSpuriousReduction()) {
            return false;
        }
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
