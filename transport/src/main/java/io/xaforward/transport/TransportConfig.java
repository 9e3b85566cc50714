package io.xaforward.transport;

import io.xaforward.protocol.EthernetHeader;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.XafHeader;

import java.time.Duration;
import java.util.Objects;

/**
 * Settings of one {@link ReliableTransport}. Defaults suit a 1500-byte MTU path: 1400-byte chunk payloads leave room
 * for the XAF header and IPv6/UDP outer headers. Build with {@link #builder(int, int, int)}.
 */
public final class TransportConfig {
    public static final int DEFAULT_MAX_PAYLOAD = 1400;
    /** Largest message a transport accepts by default: 1 GiB. */
    public static final long DEFAULT_MAX_MESSAGE_BYTES = 1L << 30;
    /**
     * Chunks in flight per destination rank for the ranks of a job ({@link #forJob}): an upper bound, the rate
     * controller keeps about two bandwidth-delay products in flight. 2048 chunks of 1400 bytes hold one
     * bandwidth-delay product of 200 Mbit/s over a 110 ms round trip, or 1 Gbit/s over 22 ms.
     */
    public static final int JOB_WINDOW_CHUNKS = 2048;
    /**
     * Memory for early chunks by default: 16 MiB, about six whole windows of {@link #JOB_WINDOW_CHUNKS} chunks at
     * 1500-byte frames (a sender's unacknowledged chunks to one receiver never exceed its window, and held chunks are
     * not acknowledged). Early chunks beyond it are dropped and named in a NACK, so the bound costs a resend, not data.
     */
    public static final long DEFAULT_EARLY_CHUNK_BYTES = 16L << 20;
    /**
     * Most chunks in flight per destination a transport accepts: a receiver's replay window must hold every sequence
     * number a sender can have in flight, and it has at most {@link ReplayWindow#MAX_SIZE} (with several flows the
     * transport refuses a smaller window still, {@link ReplayWindow#sizeFor}).
     */
    public static final int MAX_WINDOW_CHUNKS = ReplayWindow.MAX_SIZE / ReplayWindow.SEQUENCES_PER_WINDOW_CHUNK;
    /** How long a job's rank waits for acknowledgement progress before a send fails. */
    public static final Duration JOB_ACK_TIMEOUT = Duration.ofSeconds(60);

    private final int localRank;
    private final int jobId;
    private final int jobToken;
    private final int maxPayload;
    private final long maxMessageBytes;
    private final int windowChunks;
    private final Duration initialRto;
    private final Duration minRto;
    private final Duration maxRto;
    private final Duration ackTimeout;
    private final Duration receiveTimeout;
    private final CongestionControl congestionControl;
    private final boolean windowFitsFlows;
    private final long pacingRateBytesPerSecond;
    private final long pacingBurstBytes;
    private final WireSecurity wireSecurity;
    private final JobSecret secret;
    private final RunNonce runNonce;
    private final int ackEveryChunks;
    private final Duration ackDelay;
    private final long earlyChunkBytes;
    private final NanoClock clock;

    private TransportConfig(Builder b) {
        this.localRank = b.localRank;
        this.jobId = b.jobId;
        this.jobToken = b.jobToken;
        this.maxPayload = b.maxPayload;
        this.maxMessageBytes = b.maxMessageBytes;
        this.windowChunks = b.windowChunks;
        this.initialRto = b.initialRto;
        this.minRto = b.minRto;
        this.maxRto = b.maxRto;
        this.ackTimeout = b.ackTimeout;
        this.receiveTimeout = b.receiveTimeout;
        this.congestionControl = b.congestionControl;
        this.windowFitsFlows = b.windowFitsFlows;
        this.pacingRateBytesPerSecond = b.pacingRateBytesPerSecond;
        this.pacingBurstBytes = b.pacingBurstBytes;
        this.wireSecurity = b.wireSecurity;
        this.secret = b.secret;
        this.runNonce = b.runNonce;
        this.ackEveryChunks = b.ackEveryChunks;
        this.ackDelay = b.ackDelay;
        this.earlyChunkBytes = b.earlyChunkBytes;
        this.clock = b.clock;
    }

    public static Builder builder(int localRank, int jobId, int jobToken) {
        return new Builder(localRank, jobId, jobToken);
    }

    /**
     * The settings every rank of a job starts from, whichever process runs it: chunks of {@code maxPayload} bytes, a
     * {@value #JOB_WINDOW_CHUNKS}-chunk window, messages up to 1 GiB and the given acknowledgement timeout.
     */
    public static Builder forJob(int localRank, int jobId, int jobToken, int maxPayload, Duration ackTimeout) {
        return builder(localRank, jobId, jobToken)
                .maxPayload(maxPayload)
                .windowChunks(JOB_WINDOW_CHUNKS)
                .windowFitsFlows(true)
                .maxMessageBytes(DEFAULT_MAX_MESSAGE_BYTES)
                .ackTimeout(ackTimeout);
    }

    /**
     * Chunk payload of a job whose smallest MTU on any path is {@code pathMtu}, less {@code tunnelOverhead} bytes of
     * headers a tunnel adds on the way: what {@link #maxPayloadForAnyForm} leaves, but at most
     * {@value #DEFAULT_MAX_PAYLOAD} on standard (1500-byte) paths. Jumbo paths ({@code mtu: 9000} everywhere) give
     * chunks of 8904 bytes, six times fewer datagrams per message.
     */
    public static int jobChunkPayload(int pathMtu, int tunnelOverhead) {
        int payload = maxPayloadForAnyForm(pathMtu - tunnelOverhead);
        return pathMtu <= 1500 ? Math.min(payload, DEFAULT_MAX_PAYLOAD) : payload;
    }

    /**
     * The largest chunk payload that a path MTU leaves under the largest outer headers of any form (IPv6 + UDP, the
     * Ethernet header not counted) and the XAF header, in whole floats.
     */
    public static int maxPayloadForAnyForm(int pathMtu) {
        return maxPayloadForMtu(pathMtu, NetworkForm.IPV6.outerHeaderLength() - EthernetHeader.LENGTH) & ~3;
    }

    /**
     * The largest chunk payload for a path MTU: MTU minus outer headers (e.g. 48 for IPv6+UDP, 28 for IPv4+UDP,
     * 26 for Ethernet payload + ID header... pass what the form needs) minus the XAF header, rounded down to a
     * multiple of 4 so float chunks never split an element.
     */
    public static int maxPayloadForMtu(int pathMtu, int outerHeaderBytes) {
        int payload = ((pathMtu - outerHeaderBytes - XafHeader.LENGTH) / 4) * 4;
        if (payload < 4) {
            throw new IllegalArgumentException("path MTU " + pathMtu + " minus " + outerHeaderBytes
                    + " outer header bytes leaves no room for a payload");
        }
        return payload;
    }

    public int localRank() { return localRank; }
    public int jobId() { return jobId; }
    public int jobToken() { return jobToken; }
    /** Payload bytes per chunk (a multiple of 4). */
    public int maxPayload() { return maxPayload; }
    /** Message bytes per chunk: {@link #maxPayload()} less the authenticated modes' trailer (a multiple of 4). */
    public int chunkDataBytes() {
        return maxPayload - (wireSecurity.authenticated() ? WireSeal.TRAILER_BYTES : 0);
    }
    /** Largest message send/expect accept. */
    public long maxMessageBytes() { return maxMessageBytes; }
    /** Chunks in flight (sent, not yet acknowledged) per destination rank, at most {@link #MAX_WINDOW_CHUNKS}. */
    public int windowChunks() { return windowChunks; }
    /** Whether the transport shrinks {@link #windowChunks()} to what a receiver's replay window holds with many flows. */
    public boolean windowFitsFlows() { return windowFitsFlows; }
    /** How the transport sets each peer's sending rate and window. */
    public CongestionControl congestionControl() { return congestionControl; }
    public Duration initialRto() { return initialRto; }
    public Duration minRto() { return minRto; }
    public Duration maxRto() { return maxRto; }
    /** A send fails when it has had no acknowledgement progress for this long. */
    public Duration ackTimeout() { return ackTimeout; }
    /** An expect fails when no chunk arrived for this long; zero means wait forever. */
    public Duration receiveTimeout() { return receiveTimeout; }
    /** Token-bucket rate for everything this transport sends, in XAF bytes (header + payload) per second; 0 = unpaced. */
    public long pacingRateBytesPerSecond() { return pacingRateBytesPerSecond; }
    public long pacingBurstBytes() { return pacingBurstBytes; }
    /** How datagrams are protected end to end; {@link WireSecurity#CRC32C} unless a job secret was given. */
    public WireSecurity wireSecurity() { return wireSecurity; }
    /** The job secret of the authenticated modes, null for crc32c. */
    public JobSecret secret() { return secret; }
    /** The run's nonce of the authenticated modes (keys are derived from secret, job id and it), null for crc32c. */
    public RunNonce runNonce() { return runNonce; }
    /**
     * Delayed acknowledgement: a receiver acknowledges a message after this many new chunks, at once on a gap, a
     * duplicate or completion, and otherwise within {@link #ackDelay()}. 1 acknowledges every receive batch.
     */
    public int ackEveryChunks() { return ackEveryChunks; }
    /** Longest time a received chunk waits for its acknowledgement (delayed ACK timer). */
    public Duration ackDelay() { return ackDelay; }
    /**
     * Memory for chunks that arrive before their message is expected (a peer ahead of this rank), held until the
     * receive is posted instead of dropped and resent; allocated as it is needed. 0 drops them (a NACK names them
     * when the receive is posted).
     */
    public long earlyChunkBytes() { return earlyChunkBytes; }
    /** Where the transport reads the time (the system's monotonic clock unless a test injects another). */
    public NanoClock clock() { return clock; }

    public static final class Builder {
        private final int localRank;
        private final int jobId;
        private final int jobToken;
        private int maxPayload = DEFAULT_MAX_PAYLOAD;
        private long maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES;
        private int windowChunks = 256;
        private Duration initialRto = Duration.ofSeconds(1);
        private Duration minRto = Duration.ofMillis(5);
        private Duration maxRto = Duration.ofSeconds(4);
        private Duration ackTimeout = Duration.ofSeconds(10);
        private Duration receiveTimeout = Duration.ZERO;
        private long pacingRateBytesPerSecond;
        private long pacingBurstBytes;
        private CongestionControl congestionControl = CongestionControl.RATE;
        private boolean windowFitsFlows;
        private WireSecurity wireSecurity = WireSecurity.CRC32C;
        private JobSecret secret;
        private RunNonce runNonce;
        private int ackEveryChunks = 32;
        private Duration ackDelay = Duration.ofMillis(1);
        private long earlyChunkBytes = DEFAULT_EARLY_CHUNK_BYTES;
        private NanoClock clock = NanoClock.SYSTEM;

        private Builder(int localRank, int jobId, int jobToken) {
            if (localRank < 0 || localRank > 0xFFFF) {
                throw new IllegalArgumentException("rank " + localRank + " is outside [0, 65535]");
            }
            this.localRank = localRank;
            this.jobId = jobId;
            this.jobToken = jobToken;
        }

        public Builder maxPayload(int bytes) {
            if (bytes < 4 || bytes % 4 != 0 || bytes > XafHeader.MAX_PAYLOAD) {
                throw new IllegalArgumentException("maxPayload must be a positive multiple of 4 up to "
                        + XafHeader.MAX_PAYLOAD + ", was " + bytes);
            }
            this.maxPayload = bytes;
            return this;
        }

        public Builder maxMessageBytes(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("maxMessageBytes must not be negative, was " + bytes);
            }
            this.maxMessageBytes = bytes;
            return this;
        }

        public Builder windowChunks(int chunks) {
            if (chunks < 1 || chunks > MAX_WINDOW_CHUNKS) {
                throw new IllegalArgumentException("windowChunks must be 1 to " + MAX_WINDOW_CHUNKS
                        + " (what a receiver's replay window can hold), was " + chunks);
            }
            this.windowChunks = chunks;
            return this;
        }

        /**
         * With {@code true} the window is an upper bound: a port with many flows gets the largest window a receiver's
         * replay window can hold for them ({@link ReplayWindow#largestWindow}) instead of a refusal.
         */
        public Builder windowFitsFlows(boolean fits) {
            this.windowFitsFlows = fits;
            return this;
        }

        /** How each peer's sending rate and window are set (default: {@link CongestionControl#RATE}). */
        public Builder congestionControl(CongestionControl control) {
            this.congestionControl = Objects.requireNonNull(control, "congestionControl");
            return this;
        }

        public Builder retransmitTimeouts(Duration initial, Duration min, Duration max) {
            if (min.isNegative() || min.isZero() || min.compareTo(max) > 0
                    || initial.compareTo(min) < 0 || initial.compareTo(max) > 0) {
                throw new IllegalArgumentException("retransmit timeouts need 0 < min <= initial <= max, were "
                        + min + ", " + initial + ", " + max);
            }
            this.initialRto = initial;
            this.minRto = min;
            this.maxRto = max;
            return this;
        }

        public Builder ackTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("ackTimeout must be positive, was " + timeout);
            }
            this.ackTimeout = Objects.requireNonNull(timeout);
            return this;
        }

        public Builder receiveTimeout(Duration timeout) {
            if (timeout.isNegative()) {
                throw new IllegalArgumentException("receiveTimeout must not be negative, was " + timeout);
            }
            this.receiveTimeout = timeout;
            return this;
        }

        /** Paces all sends to {@code bytesPerSecond}; 0 turns pacing off. A burst of 0 picks 5 ms worth (at least 4 datagrams);
         * a larger burst rides out scheduling stalls of the sending thread at the cost of a bigger initial burst. */
        public Builder pacing(long bytesPerSecond, long burstBytes) {
            if (bytesPerSecond < 0 || burstBytes < 0) {
                throw new IllegalArgumentException("pacing rate and burst must not be negative");
            }
            this.pacingRateBytesPerSecond = bytesPerSecond;
            this.pacingBurstBytes = burstBytes;
            return this;
        }

        /**
         * Protects every datagram with {@code mode}; mac and encrypt need the job's {@code secret} and the run's
         * {@code runNonce} (crc32c ignores both): the wire keys are derived from secret, job id and run nonce, so
         * every run (a start or a restart) has keys of its own. Every rank of a run must use the same mode, secret
         * and run nonce.
         */
        public Builder wireSecurity(WireSecurity mode, JobSecret secret, RunNonce runNonce) {
            Objects.requireNonNull(mode, "mode");
            mode.requireKeys(secret, runNonce);
            this.wireSecurity = mode;
            this.secret = mode.authenticated() ? secret : null;
            this.runNonce = mode.authenticated() ? runNonce : null;
            return this;
        }

        /**
         * Delayed ACKs (as TCP's and QUIC's): acknowledge every {@code everyChunks} new chunks of a message, or after
         * {@code delay}; gaps, duplicates and completed messages are acknowledged at once. {@code everyChunks = 1}
         * acknowledges after every receive batch (no delay).
         */
        public Builder delayedAcks(int everyChunks, Duration delay) {
            if (everyChunks < 1 || everyChunks > 1024) {
                throw new IllegalArgumentException("ACK every " + everyChunks + " chunks: must be in [1, 1024]");
            }
            if (delay.isNegative()) {
                throw new IllegalArgumentException("ACK delay must not be negative, was " + delay);
            }
            this.ackEveryChunks = everyChunks;
            this.ackDelay = delay;
            return this;
        }

        /** See {@link TransportConfig#earlyChunkBytes()}; 0 holds none. */
        public Builder earlyChunkBytes(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("early chunk memory must not be negative, was " + bytes);
            }
            this.earlyChunkBytes = bytes;
            return this;
        }

        /** The time source of every timer, RTT sample and pacing decision (tests inject simulated time). */
        public Builder clock(NanoClock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        public TransportConfig build() {
            if (wireSecurity.authenticated() && maxPayload <= WireSeal.TRAILER_BYTES) {
                throw new IllegalArgumentException("maxPayload " + maxPayload + " leaves no room for data after the "
                        + WireSeal.TRAILER_BYTES + "-byte " + wireSecurity.configName() + " trailer");
            }
            return new TransportConfig(this);
        }
    }
}
