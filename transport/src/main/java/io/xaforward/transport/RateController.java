package io.xaforward.transport;

import java.util.Locale;

/**
 * Rate-based congestion control for one peer, after BBR (Cardwell et al., "BBR: Congestion-Based Congestion
 * Control", ACM Queue 2016, and draft-cardwell-iccrg-bbr): the sender models the path by its bottleneck bandwidth
 * (the largest delivery rate of the last {@value #BW_FILTER_ROUNDS} round trips) and its minimum round trip, paces
 * its chunks at a gain times that bandwidth and keeps at most {@value #CWND_GAIN} bandwidth-delay products in flight.
 *
 * <p>Why not the window of {@link PeerState} alone: between data centers a round trip is 5-100 ms and random loss
 * 0.001-0.1%. A window halved at every loss never grows back to the bandwidth-delay product of such a path (at 200
 * Mbit/s and 40 ms, 700 chunks) before the next random loss halves it again. Here a loss is a loss, not a sign of
 * congestion, unless the losses of a round trip exceed {@value #LOSS_THRESHOLD} of its deliveries (BBRv2's threshold):
 * then the bandwidth estimate backs off to {@value #LOSS_BACKOFF} of itself, so that flows sharing a congested queue
 * with loss-based TCP do not starve it.
 *
 * <p>Phases: STARTUP doubles the rate every round trip (gain 2/ln 2) until the delivery rate stops growing by 25% for
 * three rounds; DRAIN empties the queue that built; PROBE_BW cycles the gain 1.25, 0.75, then 1 for six rounds, so
 * that more bandwidth is found and the probe's queue drained; PROBE_RTT, after {@value #MIN_RTT_WINDOW_MILLIS} ms
 * without a new minimum, keeps {@value #PROBE_RTT_WINDOW_CHUNKS} chunks in flight for
 * {@value #PROBE_RTT_MILLIS} ms so that the minimum round trip is measured without the flows' own queue.
 *
 * <p>Delivery rate: the bytes acknowledged over at least one minimum round trip (and at least
 * {@value #MIN_SAMPLE_MICROS} us, so that ACKs bunched by a descheduled receiver do not read as a fast path). A
 * sample taken while the sender had nothing to send (app-limited: training sends in bursts) only counts when it
 * raises the estimate. Rounds end when a chunk sent after the round began is acknowledged, so an idle peer keeps its
 * estimate however long it is idle.
 *
 * <p>Event-loop thread only; allocates nothing after construction.
 */
final class RateController implements CongestionController {
    enum Mode { STARTUP, DRAIN, PROBE_BW, PROBE_RTT }

    static final double STARTUP_GAIN = 2.885; // 2 / ln 2: doubles the delivery rate every round trip
    static final double DRAIN_GAIN = 1 / STARTUP_GAIN;
    private static final double[] PROBE_BW_GAINS = {1.25, 0.75, 1, 1, 1, 1, 1, 1};
    static final double CWND_GAIN = 2;
    static final int BW_FILTER_ROUNDS = 10;
    static final long MIN_RTT_WINDOW_MILLIS = 10_000;
    static final long PROBE_RTT_MILLIS = 200;
    static final int PROBE_RTT_WINDOW_CHUNKS = 4;
    static final double LOSS_THRESHOLD = 0.02;
    /** Fewer losses in a round than this never count as congestion (a round of 50 chunks losing one is 2%). */
    static final int MIN_CONGESTION_LOSSES = 4;
    static final double LOSS_BACKOFF = 0.8;
    static final long MIN_SAMPLE_MICROS = 1_000;
    /** Paths with a shorter minimum round trip are not paced ({@link #pacingRate()}). */
    static final long PACED_MIN_RTT_MICROS = 1_000;
    /** Burst the pacer lets out at once after a pause: what one wake-up of the event loop sends. */
    static final long PACING_BURST_MICROS = 2_000;

    private final int chunkWireBytes;
    private final int minWindow;
    private final int maxWindow;
    /** The PROBE_BW phase a flow starts in: different per peer, so that flows sharing a link do not probe in step. */
    private final int firstCycleIndex;

    private Mode mode = Mode.STARTUP;
    private double pacingGain = STARTUP_GAIN;
    private double cwndGain = STARTUP_GAIN;
    private double window;

    private long deliveredBytes;
    private long sampleStartNanos;
    private long sampleStartDelivered;
    private boolean sampleAppLimited;
    private boolean appLimitedNow;

    private final long[] roundMaxRate = new long[BW_FILTER_ROUNDS];
    private long rounds;
    private long roundStartNanos;
    private boolean roundAppLimited = true;
    private long bottleneckRate;
    private long fullRate;
    private int roundsWithoutGrowth;
    private boolean pipeFilled;

    private long minRttNanos = Long.MAX_VALUE;
    private long minRttStampNanos;
    private long probeRttDoneNanos;

    private int cycleIndex;
    private long cycleStartNanos;

    private int roundLosses;
    private int roundDeliveries;
    private long congestionBackoffs;
    private boolean afterTimeout;

    private long nextSendNanos;

    /**
     * @param chunkWireBytes bytes a full chunk takes on the wire (header, payload, trailer)
     * @param initialWindow  chunks in flight before the first round trip is measured
     * @param minWindow      the window never goes below this many chunks outside PROBE_RTT (a receiver descheduled
     *                       for a few milliseconds must not stall a LAN path whose bandwidth-delay product is tiny)
     * @param maxWindow      the configured window: never more in flight
     */
    RateController(int chunkWireBytes, int initialWindow, int minWindow, int maxWindow, int seed) {
        this.chunkWireBytes = chunkWireBytes;
        this.maxWindow = maxWindow;
        this.minWindow = Math.min(minWindow, maxWindow);
        this.window = Math.clamp(initialWindow, this.minWindow, maxWindow);
        this.firstCycleIndex = 2 + Math.floorMod(seed, PROBE_BW_GAINS.length - 2);
    }

    // ---------------------------------------------------------------- what the sender asks

    /** Chunks that may be in flight now. */
    @Override
    public int windowChunks() {
        if (mode == Mode.PROBE_RTT || afterTimeout) {
            return Math.min(PROBE_RTT_WINDOW_CHUNKS, maxWindow);
        }
        return (int) window;
    }

    /**
     * The pacing rate in bytes per second; 0 (not paced) while no bandwidth has been measured, and on paths shorter
     * than {@value #PACED_MIN_RTT_MICROS} us: there a round is shorter than the event loop's wake-ups and the
     * scheduling stalls of a busy host, so delivery-rate samples are noise, and the window alone (at least
     * {@code minWindow} chunks, less than any switch buffers) keeps the queue short.
     */
    long pacingRate() {
        if (bottleneckRate == 0 || minRttNanos < PACED_MIN_RTT_MICROS * 1_000) {
            return 0;
        }
        return (long) (pacingGain * bottleneckRate);
    }

    /** Whether the pacer lets a chunk out at {@code now}. */
    @Override
    public boolean pacingAllows(long now) {
        long rate = pacingRate();
        return rate == 0 || now - (nextSendNanos - burstNanos(rate)) >= 0;
    }

    /** Nanoseconds until half a burst of pacing credit is back (0: may send now; Long.MAX_VALUE: not paced). */
    @Override
    public long nanosUntilPacingCredit(long now) {
        long rate = pacingRate();
        if (rate == 0) {
            return Long.MAX_VALUE;
        }
        return Math.max(0, nextSendNanos - burstNanos(rate) / 2 - now);
    }

    /** A datagram of {@code bytes} left for this peer at {@code now}. */
    @Override
    public void onSent(long now, int bytes) {
        long rate = pacingRate();
        if (rate == 0) {
            return;
        }
        nextSendNanos = Math.max(nextSendNanos, now - burstNanos(rate)) + bytes * 1_000_000_000L / rate;
    }

    private long burstNanos(long rate) {
        // At least four chunks: at low rates a burst of 2 ms would be under one datagram.
        return Math.max(PACING_BURST_MICROS * 1_000, 4L * chunkWireBytes * 1_000_000_000L / rate);
    }

    /** The sender had room in the window and nothing to send: the current delivery-rate sample is app-limited. */
    @Override
    public void markAppLimited() {
        appLimitedNow = true;
        sampleAppLimited = true;
    }

    // ---------------------------------------------------------------- what the ACKs say

    /**
     * New chunks were acknowledged at {@code now}: {@code bytes} in {@code chunks}; {@code rttSampleNanos} is the
     * round trip of the newest of them sent once (Karn), or negative if none; {@code inFlightChunks} remain.
     */
    @Override
    public void onAck(long now, long bytes, int chunks, long rttSampleNanos, int inFlightChunks) {
        afterTimeout = false;
        deliveredBytes += bytes;
        roundDeliveries += chunks;
        if (sampleStartNanos == 0) {
            startSample(now);
        }
        boolean roundEnded = false;
        if (rttSampleNanos >= 0) {
            updateMinRtt(now, rttSampleNanos);
            if (now - rttSampleNanos - roundStartNanos >= 0) {
                roundEnded = true; // a chunk sent after this round began is back
            }
        }
        long elapsed = now - sampleStartNanos;
        if (minRttNanos != Long.MAX_VALUE && elapsed >= Math.max(minRttNanos, MIN_SAMPLE_MICROS * 1_000)) {
            long rate = (deliveredBytes - sampleStartDelivered) * 1_000_000_000L / elapsed;
            offerRate(rate, sampleAppLimited);
            startSample(now);
        }
        if (roundEnded) {
            endRound(now);
        }
        advanceMode(now, inFlightChunks);
        updateWindow(chunks);
    }

    /**
     * A chunk sent to this peer was declared lost (SACK, NACK-free loss detection or timer): counted, never a cut by
     * itself; the round's loss rate decides whether it was congestion ({@link #endRound}).
     */
    @Override
    public boolean onLoss(long sentNanos, long nowNanos) {
        roundLosses++;
        return false;
    }

    /**
     * The retransmission timer fired: nothing is known to get through. Keep the path model (a receiver descheduled
     * for a moment does not change the path) but send only a few chunks until an ACK shows the peer alive.
     */
    @Override
    public boolean onTimeout(long nowNanos) {
        afterTimeout = true;
        return false;
    }

    /** The timeout was spurious (a chunk declared lost was acknowledged): back to the full window; whether it was on. */
    @Override
    public boolean undoSpuriousReduction() {
        boolean was = afterTimeout;
        afterTimeout = false;
        return was;
    }

    private void startSample(long now) {
        sampleStartNanos = now;
        sampleStartDelivered = deliveredBytes;
        sampleAppLimited = appLimitedNow;
        appLimitedNow = false;
    }

    private void updateMinRtt(long now, long sample) {
        boolean expired = minRttNanos != Long.MAX_VALUE && now - minRttStampNanos > MIN_RTT_WINDOW_MILLIS * 1_000_000;
        if (sample < minRttNanos || expired) {
            minRttNanos = Math.max(1, sample);
            minRttStampNanos = now;
            if (expired && pipeFilled && mode == Mode.PROBE_BW) {
                mode = Mode.PROBE_RTT;
                pacingGain = 1;
                probeRttDoneNanos = now + Math.max(PROBE_RTT_MILLIS * 1_000_000, minRttNanos);
            }
        }
    }

    private void offerRate(long rate, boolean appLimited) {
        int slot = (int) (rounds % BW_FILTER_ROUNDS);
        // An app-limited sample may raise a model, never start one: a few barrier messages delivered over a second
        // read as some bytes per second, and the next transfer would be paced at that.
        if (!appLimited || (bottleneckRate > 0 && rate > bottleneckRate)) {
            roundMaxRate[slot] = Math.max(roundMaxRate[slot], rate);
            bottleneckRate = Math.max(bottleneckRate, rate);
            if (!appLimited) {
                roundAppLimited = false;
            }
        }
    }

    private void endRound(long now) {
        if (roundLosses >= MIN_CONGESTION_LOSSES
                && roundLosses > LOSS_THRESHOLD * (roundLosses + roundDeliveries)) {
            // Losses beyond random ones: a queue overflows. Back off, as loss-based flows sharing it do.
            long backedOff = (long) (bottleneckRate * LOSS_BACKOFF);
            for (int i = 0; i < roundMaxRate.length; i++) {
                roundMaxRate[i] = Math.min(roundMaxRate[i], backedOff);
            }
            bottleneckRate = backedOff;
            congestionBackoffs++;
            if (mode == Mode.STARTUP) {
                pipeFilled = true;
                enterDrain();
            }
        }
        roundLosses = 0;
        roundDeliveries = 0;
        if (mode == Mode.STARTUP && !roundAppLimited) {
            if (bottleneckRate >= fullRate * 1.25) {
                fullRate = bottleneckRate;
                roundsWithoutGrowth = 0;
            } else if (++roundsWithoutGrowth >= 3) {
                pipeFilled = true;
                enterDrain();
            }
        }
        roundAppLimited = true;
        rounds++;
        roundStartNanos = now;
        int slot = (int) (rounds % BW_FILTER_ROUNDS);
        roundMaxRate[slot] = 0;
        long max = 0;
        for (long r : roundMaxRate) {
            max = Math.max(max, r);
        }
        bottleneckRate = max;
    }

    private void enterDrain() {
        mode = Mode.DRAIN;
        pacingGain = DRAIN_GAIN;
        cwndGain = STARTUP_GAIN;
    }

    private void advanceMode(long now, int inFlightChunks) {
        switch (mode) {
            case DRAIN -> {
                if ((long) inFlightChunks * chunkWireBytes <= bdpBytes()) {
                    enterProbeBw(now);
                }
            }
            case PROBE_BW -> {
                if (now - cycleStartNanos > minRttNanos) {
                    cycleIndex = (cycleIndex + 1) % PROBE_BW_GAINS.length;
                    cycleStartNanos = now;
                    pacingGain = PROBE_BW_GAINS[cycleIndex];
                }
            }
            case PROBE_RTT -> {
                if (now - probeRttDoneNanos >= 0) {
                    minRttStampNanos = now;
                    if (pipeFilled) {
                        enterProbeBw(now);
                    } else {
                        mode = Mode.STARTUP;
                        pacingGain = STARTUP_GAIN;
                        cwndGain = STARTUP_GAIN;
                    }
                }
            }
            case STARTUP -> { }
        }
    }

    private void enterProbeBw(long now) {
        mode = Mode.PROBE_BW;
        cwndGain = CWND_GAIN;
        cycleIndex = firstCycleIndex;
        cycleStartNanos = now;
        pacingGain = PROBE_BW_GAINS[cycleIndex];
    }

    private long bdpBytes() {
        if (bottleneckRate == 0 || minRttNanos == Long.MAX_VALUE) {
            return 0;
        }
        return bottleneckRate * minRttNanos / 1_000_000_000L;
    }

    /** BBR's window: grows by what was acknowledged toward cwnd_gain x BDP, and never past it once the pipe is full. */
    private void updateWindow(int ackedChunks) {
        long bdp = bdpBytes();
        if (bdp == 0) {
            window = Math.min(maxWindow, window + ackedChunks); // no model yet: slow start
            return;
        }
        double target = cwndGain * bdp / chunkWireBytes + 3; // + a few chunks for delayed and bunched ACKs
        if (pipeFilled) {
            window = Math.min(window + ackedChunks, target);
        } else if (window < target) {
            window += ackedChunks;
        }
        window = Math.clamp(window, minWindow, maxWindow);
    }

    // ---------------------------------------------------------------- diagnostics

    @Override
    public String summary() {
        return String.format(Locale.ROOT,
                "%s, bottleneck %.1f Mbit/s, pacing %.1f Mbit/s, min rtt %.2f ms, window %d, backoffs %d",
                mode.name().toLowerCase(Locale.ROOT), bottleneckRate * 8 / 1e6, pacingRate() * 8 / 1e6,
                minRttNanos() / 1e6, windowChunks(), congestionBackoffs);
    }

    Mode mode() { return mode; }
    long bottleneckRate() { return bottleneckRate; }
    long minRttNanos() { return minRttNanos == Long.MAX_VALUE ? 0 : minRttNanos; }
    long congestionBackoffs() { return congestionBackoffs; }
}
