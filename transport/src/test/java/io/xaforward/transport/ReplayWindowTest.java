package io.xaforward.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The replay window is sized from the sender's window and flows (docs/TRANSPORT.md, "Wire security"): genuine
 * datagrams reordered across flows are never counted as replays, repeats still are, and configurations whose
 * reordering the largest window could not hold are refused.
 */
class ReplayWindowTest {

    @Test
    void theLargestWindowOfEachFlowCountFitsItsReplayWindow() {
        assertEquals(TransportConfig.MAX_WINDOW_CHUNKS, ReplayWindow.largestWindow(1));
        assertEquals(512, ReplayWindow.largestWindow(64));
        for (int flows = 1; flows <= 64; flows++) {
            assertTrue(ReplayWindow.sizeFor(ReplayWindow.largestWindow(flows), flows) <= ReplayWindow.MAX_SIZE);
        }
    }

    @Test
    void sizeFollowsWindowAndFlowsAsAPowerOfTwo() {
        assertEquals(ReplayWindow.MIN_SIZE, ReplayWindow.sizeFor(1, 1));
        assertEquals(ReplayWindow.MIN_SIZE, ReplayWindow.sizeFor(512, 1));
        assertEquals(4096, ReplayWindow.sizeFor(512, 4));
        assertEquals(16384, ReplayWindow.sizeFor(TransportConfig.JOB_WINDOW_CHUNKS, 4));
        assertEquals(4096, ReplayWindow.sizeFor(1025, 1), "2050 rounds up to 4096");
        assertEquals(ReplayWindow.MAX_SIZE, ReplayWindow.sizeFor(TransportConfig.MAX_WINDOW_CHUNKS, 1));
    }

    @Test
    void configurationsTheWindowCannotHoldAreRefused() {
        assertThrows(IllegalArgumentException.class,
                () -> TransportConfig.builder(0, 1, 1).windowChunks(TransportConfig.MAX_WINDOW_CHUNKS + 1));
        TransportConfig.builder(0, 1, 1).windowChunks(TransportConfig.MAX_WINDOW_CHUNKS).build();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ReplayWindow.sizeFor(TransportConfig.MAX_WINDOW_CHUNKS, 2));
        assertTrue(e.getMessage().contains("at most " + TransportConfig.MAX_WINDOW_CHUNKS / 2 + " chunks"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new ReplayWindow(3000), "not a power of two");
    }

    /**
     * The transport sizes the window from its configuration and its port's flows, and refuses (before sending
     * anything) a window that the flows would reorder beyond the largest replay window.
     */
    @Test
    void theTransportRefusesAWindowItsFlowsWouldReorderTooFar() {
        LoopbackNetwork net = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint a = net.newEndpoint(), b = net.newEndpoint();
        AddressBook book = AddressBook.builder().add(0, 10, a.localPeer()).add(1, 11, b.localPeer()).build();
        JobSecret secret = JobSecret.of(new byte[32]);
        TransportConfig max = TransportConfig.builder(0, 1, 1).windowChunks(TransportConfig.MAX_WINDOW_CHUNKS)
                .wireSecurity(WireSecurity.MAC, secret, RunNonce.generate()).build();
        new ReliableTransport(max, book, new Flows(a, 1)).close();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new ReliableTransport(max, book, new Flows(b, 2)));
        assertTrue(e.getMessage().contains("replay window"), e.getMessage());
    }

    /**
     * A sender at the largest window its flows allow spreads consecutive sequence numbers over the flows (datagram
     * i on flow i mod flows) with twice the window in flight (its chunks and its acknowledgements of the peer's);
     * the receiver gets every other flow first and the first flow last, the furthest reordering possible. Every
     * datagram is accepted once, and a repeat of any is refused.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 4, 16, 64})
    void reorderingAcrossFlowsAtTheLargestWindowIsNeverAReplay(int flows) {
        int window = TransportConfig.MAX_WINDOW_CHUNKS / flows;
        int inFlight = ReplayWindow.SEQUENCES_PER_WINDOW_CHUNK * window * flows;
        ReplayWindow w = new ReplayWindow(ReplayWindow.sizeFor(window, flows));
        long salt = (1L << 62) - 3L * inFlight; // near the top of the salt range: no special case at small numbers
        for (int round = 0; round < 3; round++) {
            long base = salt + (long) round * inFlight;
            for (int flow = flows - 1; flow >= 0; flow--) {
                for (long i = flow; i < inFlight; i += flows) {
                    assertTrue(w.accept(base + i), "genuine datagram " + i + " of round " + round + " on flow " + flow);
                }
            }
            for (long i = 0; i < inFlight; i += 997) {
                assertFalse(w.accept(base + i), "a repeat of " + i + " is a replay");
            }
        }
        assertFalse(w.accept(salt), "a datagram from two rounds ago: older than the window, refused");
    }

    /** A port that reports {@code flows} flows, as a UDP port sending from several source ports does. */
    private record Flows(LoopbackNetwork.Endpoint inner, int flows) implements DatagramPort {
        @Override public int maxDatagramLength() { return inner.maxDatagramLength(); }
        @Override public boolean send(MemorySegment b, long off, int len, Peer to) { return inner.send(b, off, len, to); }
        @Override public int poll(DatagramHandler h, int limit) { return inner.poll(h, limit); }
        @Override public Peer localPeer() { return inner.localPeer(); }
        @Override public void close() { inner.close(); }
    }
}
