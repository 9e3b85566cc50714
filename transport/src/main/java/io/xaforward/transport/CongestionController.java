package io.xaforward.transport;

/**
 * How much one peer may have in flight and when its next chunk may leave: the sender asks, the ACKs and the loss
 * detector tell. Two answers: the loss-based window ({@link LossWindow}, TCP Reno's) and the rate-based controller
 * ({@link RateController}, BBR's), chosen by {@link CongestionControl}.
 *
 * <p>Event-loop thread only; implementations allocate nothing after construction.
 */
sealed interface CongestionController permits LossWindow, RateController {

    /** Chunks that may be in flight now (the caller caps it at the configured window). */
    int windowChunks();

    /** Whether the pacer lets a chunk out at {@code now}; true for an unpaced controller. */
    default boolean pacingAllows(long now) {
        return true;
    }

    /** Nanoseconds until the pacer lets a chunk out again (0: now); Long.MAX_VALUE when it does not pace. */
    default long nanosUntilPacingCredit(long now) {
        return Long.MAX_VALUE;
    }

    /** A datagram of {@code bytes} left for this peer at {@code now}. */
    default void onSent(long now, int bytes) { }

    /** The sender had room in the window and nothing to send. */
    default void markAppLimited() { }

    /**
     * New chunks were acknowledged at {@code now}: {@code bytes} in {@code chunks}; {@code rttSampleNanos} is the
     * round trip of the newest of them sent once (Karn), or negative if none; {@code inFlightChunks} remain.
     */
    void onAck(long now, long bytes, int chunks, long rttSampleNanos, int inFlightChunks);

    /** The chunk sent at {@code sentNanos} was declared lost at {@code nowNanos}; returns whether the window was cut. */
    boolean onLoss(long sentNanos, long nowNanos);

    /** The retransmission timer fired at {@code nowNanos}; returns whether the window was cut. */
    boolean onTimeout(long nowNanos);

    /** A chunk declared lost was acknowledged before its resend: undo what the loss cost; whether there was any. */
    boolean undoSpuriousReduction();

    /** The controller's state for a diagnostics line ("cwnd 64.0, ssthresh 32.0"). */
    String summary();
}
