package io.xaforward.transport;

import java.util.ArrayList;

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
    /** Sequence numbers of authentic datagrams received from this peer. */
    final ReplayWindow replayWindow = new ReplayWindow();

    long srttNanos;
    long rttVarNanos;
    boolean hasRtt;
    int backoff;
    long lastBackoffNanos;

    PeerState(int rank, int networkId, Peer address, int window) {
        this.rank = rank;
        this.networkId = networkId;
        this.address = address;
        this.inFlightQueue = new ChunkRing(2 * window);
        this.retransmitQueue = new ChunkRing(window);
    }

    /** RFC 6298 smoothing. */
    void rttSample(long sampleNanos) {
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
