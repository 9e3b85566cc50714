package io.xaforward.transport;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Counters of one {@link ReliableTransport}. Only the event loop writes them (plain single-writer increments
 * published with opaque stores, no locked instructions on the hot path); any thread may read them.
 */
public final class TransportStats {
    enum Counter {
        PACKETS_SENT, BYTES_SENT, PACKETS_RECEIVED, BYTES_RECEIVED, DATA_CHUNKS_SENT, RETRANSMITS,
        ACKS_SENT, ACKS_RECEIVED, DUPLICATES_DROPPED, CRC_FAILURES, BAD_TOKEN_DROPS, MALFORMED_DROPS,
        MISDIRECTED_DROPS, UNEXPECTED_DROPS, PORT_SEND_FAILURES, SEND_TIMEOUTS, MESSAGES_SENT, MESSAGES_RECEIVED,
        AUTH_FAILURES, REPLAY_DROPS, INVALID_ACK_DROPS, SOURCE_ADDRESS_DROPS, TIMEOUT_LOSSES, SACK_LOSSES,
        TIMEOUT_EVENTS, CWND_REDUCTIONS, SPURIOUS_LOSSES, CWND_UNDOS, NACKS_SENT, NACKS_RECEIVED, NACK_LOSSES,
        RESTORED_CHUNKS, EARLY_CHUNKS_HELD, EARLY_CHUNKS_EXPIRED, RETRANSMITTED_BYTES
    }

    private static final VarHandle COUNTS = MethodHandles.arrayElementVarHandle(long[].class);
    private final long[] counts = new long[Counter.values().length];

    void add(Counter counter, long delta) {
        int i = counter.ordinal();
        COUNTS.setOpaque(counts, i, (long) COUNTS.getOpaque(counts, i) + delta);
    }

    void increment(Counter counter) {
        add(counter, 1);
    }

    private long get(Counter counter) {
        return (long) COUNTS.getOpaque(counts, counter.ordinal());
    }

    /** Datagrams handed to the port (data, retransmissions and ACKs). */
    public long packetsSent() { return get(Counter.PACKETS_SENT); }
    /** XAF bytes (header + payload) handed to the port. */
    public long bytesSent() { return get(Counter.BYTES_SENT); }
    public long packetsReceived() { return get(Counter.PACKETS_RECEIVED); }
    public long bytesReceived() { return get(Counter.BYTES_RECEIVED); }
    /** Data chunks sent, first transmissions and retransmissions. */
    public long dataChunksSent() { return get(Counter.DATA_CHUNKS_SENT); }
    public long retransmits() { return get(Counter.RETRANSMITS); }
    /** Payload bytes of the retransmitted data chunks (headers not counted): the gradient bytes sent twice. */
    public long retransmittedBytes() { return get(Counter.RETRANSMITTED_BYTES); }
    public long acksSent() { return get(Counter.ACKS_SENT); }
    public long acksReceived() { return get(Counter.ACKS_RECEIVED); }
    /** Data chunks that had already been received (their sink was not called again). */
    public long duplicatesDropped() { return get(Counter.DUPLICATES_DROPPED); }
    /** Packets whose payload did not match its CRC32C. */
    public long crcFailures() { return get(Counter.CRC_FAILURES); }
    /** Packets with another job's id or a wrong job token. */
    public long badTokenDrops() { return get(Counter.BAD_TOKEN_DROPS); }
    /** Packets that are not valid XAF (short, bad magic/version, chunk fields inconsistent with the message). */
    public long malformedDrops() { return get(Counter.MALFORMED_DROPS); }
    /** Packets addressed to another rank. */
    public long misdirectedDrops() { return get(Counter.MISDIRECTED_DROPS); }
    /** Data for a message nobody expects (yet) that could not be held (no room); the sender retransmits it later. */
    public long unexpectedDrops() { return get(Counter.UNEXPECTED_DROPS); }
    /** Data chunks held because they came before their message was expected (taken when it is; no resend). */
    public long earlyChunksHeld() { return get(Counter.EARLY_CHUNKS_HELD); }
    /** Held chunks dropped because their message was not expected within the ACK timeout. */
    public long earlyChunksExpired() { return get(Counter.EARLY_CHUNKS_EXPIRED); }
    /** Datagrams the port refused (full socket buffer or ring); recovered by retransmission. */
    public long portSendFailures() { return get(Counter.PORT_SEND_FAILURES); }
    public long sendTimeouts() { return get(Counter.SEND_TIMEOUTS); }
    /** Messages fully acknowledged by their receiver. */
    public long messagesSent() { return get(Counter.MESSAGES_SENT); }
    /** Messages fully received. */
    public long messagesReceived() { return get(Counter.MESSAGES_RECEIVED); }
    /** Datagrams whose tag did not verify (forged or keyed with another secret) or that lack this job's seal. */
    public long authFailures() { return get(Counter.AUTH_FAILURES); }
    /** Authentic datagrams seen before (or too old for the replay window): replays. */
    public long replayDrops() { return get(Counter.REPLAY_DROPS); }
    /** ACKs that claim chunks that were never sent, or a chunk count the message does not have. */
    public long invalidAckDrops() { return get(Counter.INVALID_ACK_DROPS); }

    /** Datagrams that claim a rank but came from another address than the address book's entry for it. */
    public long sourceAddressDrops() { return get(Counter.SOURCE_ADDRESS_DROPS); }
    /** Chunks declared lost because their retransmission timeout expired. */
    public long timeoutLosses() { return get(Counter.TIMEOUT_LOSSES); }
    /** Chunks declared lost because an ACK selectively acknowledged chunks sent after them (fast retransmit). */
    public long sackLosses() { return get(Counter.SACK_LOSSES); }
    /** Retransmission timeouts: passes in which at least one chunk to a peer expired. */
    public long timeoutEvents() { return get(Counter.TIMEOUT_EVENTS); }
    /** Congestion-window reductions (one per loss episode or timeout). */
    public long cwndReductions() { return get(Counter.CWND_REDUCTIONS); }
    /** Chunks declared lost whose first copy was acknowledged before they were resent (the loss was spurious). */
    public long spuriousLosses() { return get(Counter.SPURIOUS_LOSSES); }
    /** Window reductions undone because a spurious loss showed that nothing had been lost. */
    public long cwndUndos() { return get(Counter.CWND_UNDOS); }
    /** NACKs sent: a message was expected after some of its chunks had been dropped as unexpected. */
    public long nacksSent() { return get(Counter.NACKS_SENT); }
    public long nacksReceived() { return get(Counter.NACKS_RECEIVED); }
    /** Chunks resent because a NACK named them (dropped by a receiver not ready yet, not by the network). */
    public long nackLosses() { return get(Counter.NACK_LOSSES); }
    /** Chunks put back in flight unsent after a spurious loss showed their first copies to be on their way. */
    public long restoredChunks() { return get(Counter.RESTORED_CHUNKS); }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("TransportStats{");
        for (Counter c : Counter.values()) {
            if (c.ordinal() > 0) {
                sb.append(", ");
            }
            sb.append(c.name().toLowerCase()).append('=').append(get(c));
        }
        return sb.append('}').toString();
    }
}
