package io.xaforward.transport;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A receiver that stops reading for a while (a descheduled process, a GC pause) loses nothing: the sender's
 * retransmission timer fires, but it must not resend its whole window, most of which is merely waiting.
 */
class ReceiverStallTest {
    private static final int WINDOW = 256;

    @ParameterizedTest
    @EnumSource(CongestionControl.class)
    void aStalledReceiverCostsAFewRetransmissionsNotAWindow(CongestionControl control) throws Exception {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint e0 = network.newEndpoint();
        LoopbackNetwork.Endpoint e1 = network.newEndpoint();
        AddressBook book = AddressBook.builder().add(0, 1, e0.localPeer()).add(1, 2, e1.localPeer()).build();
        int size = 4 << 20;
        byte[] bytes = new byte[size];
        new Random(5).nextBytes(bytes);
        MemorySegment source = Arena.ofAuto().allocate(size);
        MemorySegment.copy(MemorySegment.ofArray(bytes), 0, source, 0, size);
        MemorySegment dest = Arena.ofAuto().allocate(size);
        // The sender runs on its own thread; the test drives the receiver and stops driving it for a while.
        try (ReliableTransport sender = new ReliableTransport(TransportConfig.builder(0, 42, 1).windowChunks(WINDOW).congestionControl(control)
                .retransmitTimeouts(Duration.ofMillis(10), Duration.ofMillis(5), Duration.ofMillis(200)).build(),
                book, e0).start();
             ReliableTransport receiver = new ReliableTransport(TransportConfig.builder(1, 42, 1)
                     .windowChunks(WINDOW).build(), book, e1)) {
            CompletableFuture<Void> received = receiver.expect(0, TransportPair.id(1, 1), dest);
            CompletableFuture<Void> sent = sender.send(1, TransportPair.id(1, 1), source);
            // Run until the sender's window has opened fully, so that a whole window is in flight at the stall.
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (receiver.stats().packetsReceived() < 4L * WINDOW && System.nanoTime() < deadline) {
                receiver.doWork();
            }
            long retransmitsBefore = sender.stats().retransmits();
            Thread.sleep(300); // about 30 minimum RTOs: the timer fires, backs off, fires again
            long timeoutsDuringStall = sender.stats().timeoutEvents();
            while (!received.isDone() && System.nanoTime() < deadline) {
                receiver.doWork();
            }
            received.get(1, TimeUnit.SECONDS);
            while (!sent.isDone() && System.nanoTime() < deadline) {
                receiver.doWork(); // keep acknowledging until the sender is done
            }
            sent.get(1, TimeUnit.SECONDS);
            assertEquals(-1L, source.mismatch(dest));
            assertTrue(timeoutsDuringStall > 0, "the stall outlasted the retransmission timeout");
            long stallRetransmits = sender.stats().retransmits() - retransmitsBefore;
            assertTrue(stallRetransmits <= WINDOW / 8, "a stall of the receiver made the sender resend "
                    + stallRetransmits + " chunks of its " + WINDOW + "-chunk window: " + sender.stats());
            assertTrue(receiver.stats().duplicatesDropped() <= WINDOW / 8,
                    "duplicates at the receiver: " + receiver.stats());
            assertTrue(sender.stats().cwndUndos() > 0, "the late ACKs showed the timeout to be spurious");
        }
    }
}
