package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Chunks that reach a receiver before it expects their message: held until the expect is posted (no resend at all);
 * when there is no room to hold them, dropped and named in a NACK when the expect is posted, so that the sender
 * resends them at once, not after its retransmission timeout; held too long, dropped and named in the NACK as well.
 */
class EarlyChunksTransportTest {
    /** A retransmission timeout far longer than the tests' waits: only holding or a NACK can deliver in time. */
    private static final Duration NEVER = Duration.ofSeconds(20);
    /** The sender's first flight: its initial congestion window, 32 chunks. */
    private static final int FLIGHT = 32;

    private static void await(java.util.function.LongSupplier counter, long atLeast) throws InterruptedException {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (counter.getAsLong() < atLeast && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
    }

    @Test
    void earlyChunksAreHeldAndDeliveredWithoutAnyResend() throws Exception {
        try (TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 1,
                b -> b.windowChunks(FLIGHT).retransmitTimeouts(NEVER, NEVER, NEVER.multipliedBy(2)))) {
            int size = 200_000;
            MemorySegment source = TransportBehaviourTest.randomSegment(size, 3);
            MemorySegment dest = Arena.ofAuto().allocate(size);
            CompletableFuture<Void> sent = pair.rank0.send(1, TransportPair.id(3, 1), source);
            await(() -> pair.rank1.stats().earlyChunksHeld(), FLIGHT);
            long held = pair.rank1.stats().earlyChunksHeld();
            assertEquals(FLIGHT, held, "the first flight arrived before the expect and was held");
            assertEquals(0, pair.rank1.stats().unexpectedDrops());
            pair.rank1.expect(0, TransportPair.id(3, 1), dest).get(10, TimeUnit.SECONDS);
            sent.get(10, TimeUnit.SECONDS);
            assertEquals(-1L, source.mismatch(dest));
            assertEquals(0, pair.rank0.stats().retransmits(), "nothing was sent twice");
            assertEquals(0, pair.rank1.stats().nacksSent());
            assertEquals(0, pair.rank1.stats().duplicatesDropped());
        }
    }

    @Test
    void withoutRoomEarlyChunksAreDroppedAndResentOnTheNackWithoutATimeout() throws Exception {
        // Room for 20 chunks of the first flight of 32: the other 12 are dropped and named in the NACK.
        try (TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 1,
                b -> b.windowChunks(FLIGHT).retransmitTimeouts(NEVER, NEVER, NEVER.multipliedBy(2))
                        .earlyChunkBytes(20L * TransportConfig.DEFAULT_MAX_PAYLOAD))) {
            int size = 200_000;
            MemorySegment source = TransportBehaviourTest.randomSegment(size, 4);
            MemorySegment dest = Arena.ofAuto().allocate(size);
            CompletableFuture<Void> sent = pair.rank0.send(1, TransportPair.id(3, 1), source);
            await(() -> pair.rank1.stats().earlyChunksHeld() + pair.rank1.stats().unexpectedDrops(), FLIGHT);
            long dropped = pair.rank1.stats().unexpectedDrops();
            assertEquals(20, pair.rank1.stats().earlyChunksHeld());
            assertEquals(FLIGHT - 20, dropped);
            pair.rank1.expect(0, TransportPair.id(3, 1), dest).get(10, TimeUnit.SECONDS);
            sent.get(10, TimeUnit.SECONDS);
            assertEquals(-1L, source.mismatch(dest));
            assertEquals(1, pair.rank1.stats().nacksSent());
            assertEquals(1, pair.rank0.stats().nacksReceived());
            assertEquals(dropped, pair.rank0.stats().nackLosses(), "the NACK named every dropped chunk");
            assertEquals(dropped, pair.rank0.stats().retransmits(), "only the dropped chunks were sent twice");
            assertEquals(0, pair.rank0.stats().timeoutEvents(), "recovered without a retransmission timeout");
            assertEquals(0, pair.rank1.stats().duplicatesDropped());
        }
    }

    @Test
    void noneHeldDropsEveryEarlyChunkAndTheNackRecoversThem() throws Exception {
        try (TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 1,
                b -> b.windowChunks(FLIGHT).retransmitTimeouts(NEVER, NEVER, NEVER.multipliedBy(2)).earlyChunkBytes(0))) {
            int size = 200_000;
            MemorySegment source = TransportBehaviourTest.randomSegment(size, 5);
            MemorySegment dest = Arena.ofAuto().allocate(size);
            CompletableFuture<Void> sent = pair.rank0.send(1, TransportPair.id(3, 1), source);
            await(() -> pair.rank1.stats().unexpectedDrops(), FLIGHT);
            long dropped = pair.rank1.stats().unexpectedDrops();
            assertEquals(FLIGHT, dropped, "the first flight arrived before the expect and was dropped");
            assertEquals(0, pair.rank1.stats().earlyChunksHeld());
            pair.rank1.expect(0, TransportPair.id(3, 1), dest).get(10, TimeUnit.SECONDS);
            sent.get(10, TimeUnit.SECONDS);
            assertEquals(-1L, source.mismatch(dest));
            assertEquals(1, pair.rank1.stats().nacksSent());
            assertEquals(dropped, pair.rank0.stats().nackLosses(), "the NACK named every dropped chunk");
            assertEquals(0, pair.rank0.stats().timeoutEvents(), "recovered without a retransmission timeout");
        }
    }

    @Test
    void chunksHeldLongerThanTheAckTimeoutAreDroppedAndNamedInTheNack() throws Exception {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint e0 = network.newEndpoint();
        LoopbackNetwork.Endpoint e1 = network.newEndpoint();
        AddressBook book = AddressBook.builder().add(0, 1, e0.localPeer()).add(1, 2, e1.localPeer()).build();
        // The sender waits 20 s for progress; the receiver holds early chunks for its own ACK timeout, 100 ms.
        try (ReliableTransport sender = new ReliableTransport(TransportConfig.builder(0, 42, 1).windowChunks(FLIGHT)
                .retransmitTimeouts(NEVER, NEVER, NEVER.multipliedBy(2)).ackTimeout(Duration.ofSeconds(30)).build(), book, e0).start();
             ReliableTransport receiver = new ReliableTransport(TransportConfig.builder(1, 42, 1).windowChunks(FLIGHT)
                     .ackTimeout(Duration.ofMillis(100)).build(), book, e1).start()) {
            int size = 200_000;
            MemorySegment source = TransportBehaviourTest.randomSegment(size, 6);
            MemorySegment dest = Arena.ofAuto().allocate(size);
            MessageId id = new MessageId(42, 3, 1);
            CompletableFuture<Void> sent = sender.send(1, id, source);
            await(() -> receiver.stats().earlyChunksExpired(), FLIGHT);
            assertEquals(FLIGHT, receiver.stats().earlyChunksHeld());
            assertEquals(FLIGHT, receiver.stats().earlyChunksExpired(), "every held chunk outlived the ACK timeout");
            receiver.expect(0, id, dest).get(10, TimeUnit.SECONDS);
            sent.get(10, TimeUnit.SECONDS);
            assertEquals(-1L, source.mismatch(dest));
            assertEquals(1, receiver.stats().nacksSent());
            assertEquals(FLIGHT, sender.stats().nackLosses(), "the NACK named every expired chunk");
            assertEquals(0, sender.stats().timeoutEvents());
        }
    }
}
