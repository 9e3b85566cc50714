package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Chunks that reach a receiver before it expects their message are dropped; when the expect is posted the receiver
 * names them in a NACK, and the sender resends them at once, not after its retransmission timeout.
 */
class EarlyChunksNackTest {

    @Test
    void droppedEarlyChunksAreResentOnTheNackWithoutATimeout() throws Exception {
        // A retransmission timeout far longer than the test's waits: only the NACK can recover the chunks in time.
        try (TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 1,
                b -> b.windowChunks(64).retransmitTimeouts(Duration.ofSeconds(20), Duration.ofSeconds(20),
                        Duration.ofSeconds(30)))) {
            int size = 200_000;
            byte[] bytes = new byte[size];
            new Random(3).nextBytes(bytes);
            MemorySegment source = Arena.ofAuto().allocate(size);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, source, 0, size);
            MemorySegment dest = Arena.ofAuto().allocate(size);
            CompletableFuture<Void> sent = pair.rank0.send(1, TransportPair.id(3, 1), source);
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (pair.rank1.stats().unexpectedDrops() < 32 && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            long dropped = pair.rank1.stats().unexpectedDrops();
            assertTrue(dropped >= 32, "the first window arrived before the expect and was dropped");
            pair.rank1.expect(0, TransportPair.id(3, 1), dest).get(10, TimeUnit.SECONDS);
            sent.get(10, TimeUnit.SECONDS);
            assertEquals(-1L, source.mismatch(dest));
            assertEquals(1, pair.rank1.stats().nacksSent());
            assertEquals(1, pair.rank0.stats().nacksReceived());
            assertEquals(dropped, pair.rank0.stats().nackLosses(), "the NACK named every dropped chunk");
            assertEquals(0, pair.rank0.stats().timeoutEvents(), "recovered without a retransmission timeout");
            assertEquals(0, pair.rank1.stats().duplicatesDropped());
        }
    }
}
