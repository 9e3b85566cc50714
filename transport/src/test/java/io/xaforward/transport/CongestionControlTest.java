package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The loss-based congestion window ({@link LossWindow}) and the retransmission timeout of {@link PeerState}, step by step. */
class CongestionControlTest {
    private static final int WINDOW = 512;

    private static void acked(PeerState p, int chunks) {
        p.congestion.onAck(0, 0, chunks, -1, 0);
    }

    private static LossWindow window(PeerState p) {
        return (LossWindow) p.congestion;
    }

    private static PeerState peer() {
        return new PeerState(1, 2, new LoopbackNetwork.Address(1), WINDOW, ReplayWindow.MIN_SIZE);
    }

    @Test
    void slowStartDoublesPerWindowThenAdditiveIncreaseAddsOnePerWindow() {
        PeerState p = peer();
        assertEquals(LossWindow.INITIAL_CWND, p.sendWindow(WINDOW));
        acked(p, LossWindow.INITIAL_CWND); // one window acknowledged: doubled
        assertEquals(2 * LossWindow.INITIAL_CWND, p.sendWindow(WINDOW));
        window(p).ssthresh = 64;
        acked(p, 64); // a whole window in congestion avoidance: one more chunk
        assertEquals(65.0, window(p).cwnd, 0.02);
        acked(p, 1_000_000);
        assertEquals(WINDOW, p.sendWindow(WINDOW), "never beyond the configured window");
        assertEquals(100, p.sendWindow(100), "the configured window caps the congestion window");
    }

    @Test
    void lossHalvesTheWindowOncePerEpisode() {
        PeerState p = peer();
        acked(p, 1000);
        assertEquals(WINDOW, p.sendWindow(WINDOW));
        assertTrue(p.congestion.onLoss(100, 1_000));
        assertEquals(WINDOW / 2, p.sendWindow(WINDOW));
        // More chunks of the same flight (sent before the reduction) are lost: no second halving.
        assertFalse(p.congestion.onLoss(500, 2_000));
        assertFalse(p.congestion.onLoss(999, 3_000));
        assertEquals(WINDOW / 2, p.sendWindow(WINDOW));
        // A chunk sent after the reduction is lost: a new episode.
        assertTrue(p.congestion.onLoss(1_500, 4_000));
        assertEquals(WINDOW / 4, p.sendWindow(WINDOW));
    }

    @Test
    void timeoutCollapsesTheWindowAndASpuriousLossRestoresIt() {
        PeerState p = peer();
        acked(p, 1000);
        p.backoff = 3;
        assertTrue(p.congestion.onTimeout(1_000));
        assertEquals(LossWindow.MIN_CWND, p.sendWindow(WINDOW));
        assertEquals(WINDOW / 2, window(p).ssthresh);
        assertTrue(p.undoSpuriousReduction(), "the window before the timeout is remembered");
        assertEquals(WINDOW, p.sendWindow(WINDOW));
        assertEquals(0, p.backoff);
        assertFalse(p.undoSpuriousReduction(), "undone once");
    }

    @Test
    void rtoFollowsRfc6298WithAFloorAndBackoff() {
        PeerState p = peer();
        long ms = 1_000_000;
        assertEquals(30 * ms, p.rtoNanos(30 * ms, 5 * ms, 500 * ms), "initial RTO before any sample");
        p.rttSample(40 * ms); // srtt 40, rttvar 20
        assertEquals(120 * ms, p.rtoNanos(30 * ms, 5 * ms, 500 * ms));
        for (int i = 0; i < 50; i++) {
            p.rttSample(ms); // converges towards 1 ms
        }
        assertEquals(20 * ms, p.rtoNanos(30 * ms, 20 * ms, 500 * ms), "the floor holds");
        p.backoff = 2;
        assertEquals(80 * ms, p.rtoNanos(30 * ms, 20 * ms, 500 * ms), "each timeout doubles it");
        p.backoff = 10;
        assertEquals(500 * ms, p.rtoNanos(30 * ms, 20 * ms, 500 * ms), "up to the maximum");
    }
}
