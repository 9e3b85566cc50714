package io.xaforward.transport;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Many messages in both directions at once over a network that loses, duplicates, reorders and corrupts datagrams:
 * every message must arrive byte-identical, with each chunk handed to the sink exactly once.
 */
class LossyNetworkReliabilityTest {
    private static final int[] SIZES = {0, 1, 1399, 1400, 1401, 4096, 65_537, 250_000, 333_333};

    /** Records every (message, offset) it sees and fails on a repeat, then copies. */
    private static final class ExactlyOnceSink implements ChunkSink {
        final Set<Long> seen = ConcurrentHashMap.newKeySet();
        final AtomicLong calls = new AtomicLong();
        final int message;
        volatile String violation;

        ExactlyOnceSink(int message) {
            this.message = message;
        }

        @Override
        public void accept(MemorySegment dest, long destOffset, MemorySegment payload, long payloadOffset, int length) {
            calls.incrementAndGet();
            if (!seen.add(destOffset)) {
                violation = "message " + message + " chunk at offset " + destOffset + " delivered twice";
            }
            ChunkSink.COPY.accept(dest, destOffset, payload, payloadOffset, length);
        }
    }

    @ParameterizedTest(name = "loss {0}")
    @ValueSource(doubles = {0.0, 0.05, 0.20})
    void everyMessageArrivesExactlyOnceAndIntact(double loss) throws Exception {
        var impairments = new LoopbackNetwork.Impairments(loss, 0.05, 0.10, 0.01);
        try (TransportPair pair = new TransportPair(impairments, 1234 + (long) (loss * 100),
                b -> b.windowChunks(64).retransmitTimeouts(Duration.ofMillis(5), Duration.ofMillis(1),
                        Duration.ofMillis(100)))) {
            Random random = new Random(99);
            List<CompletableFuture<Void>> sends = new ArrayList<>();
            List<CompletableFuture<Void>> receives = new ArrayList<>();
            List<MemorySegment[]> pairs = new ArrayList<>();
            List<ExactlyOnceSink> sinks = new ArrayList<>();
            for (int i = 0; i < SIZES.length * 2; i++) {
                boolean fromZero = i % 2 == 0;
                ReliableTransport sender = fromZero ? pair.rank0 : pair.rank1;
                ReliableTransport receiver = fromZero ? pair.rank1 : pair.rank0;
                int size = SIZES[i / 2];
                byte[] bytes = new byte[size];
                random.nextBytes(bytes);
                MemorySegment source = Arena.ofAuto().allocate(Math.max(1, size)).asSlice(0, size);
                MemorySegment.copy(MemorySegment.ofArray(bytes), 0, source, 0, size);
                MemorySegment dest = Arena.ofAuto().allocate(Math.max(1, size)).asSlice(0, size);
                ExactlyOnceSink sink = new ExactlyOnceSink(i);
                MessageId id = TransportPair.id(7, i);
                receives.add(receiver.expect(fromZero ? 0 : 1, id, dest, sink));
                sends.add(sender.send(fromZero ? 1 : 0, id, source));
                pairs.add(new MemorySegment[]{source, dest});
                sinks.add(sink);
            }
            CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
            CompletableFuture.allOf(receives.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);

            for (int i = 0; i < pairs.size(); i++) {
                MemorySegment source = pairs.get(i)[0];
                MemorySegment dest = pairs.get(i)[1];
                if (sinks.get(i).violation != null) {
                    fail(sinks.get(i).violation);
                }
                long chunks = Math.max(1, (source.byteSize() + 1399) / 1400);
                assertEquals(chunks, sinks.get(i).calls.get(), "sink calls for message " + i);
                assertEquals(-1L, source.mismatch(dest), "message " + i + " differs");
            }
            TransportStats s0 = pair.rank0.stats();
            TransportStats s1 = pair.rank1.stats();
            assertEquals(SIZES.length, s0.messagesSent());
            assertEquals(SIZES.length, s1.messagesSent());
            assertEquals(SIZES.length, s0.messagesReceived());
            assertEquals(SIZES.length, s1.messagesReceived());
            // Corruption hits only payload bytes, so every corrupted frame must be caught by the CRC (the last
            // ones may still be queued when the futures complete: give the loops a moment to drain them).
            long drainDeadline = System.nanoTime() + 2_000_000_000L;
            while (s0.crcFailures() + s1.crcFailures() < pair.network.corrupted() && System.nanoTime() < drainDeadline) {
                Thread.sleep(1);
            }
            assertEquals(pair.network.corrupted(), s0.crcFailures() + s1.crcFailures(), () -> s0 + " / " + s1);
            assertTrue(pair.network.duplicated() > 0 && s0.duplicatesDropped() + s1.duplicatesDropped() > 0,
                    () -> s0 + " / " + s1);
            if (loss > 0) {
                assertTrue(pair.network.lost() > 0);
                assertTrue(s0.retransmits() > 0 && s1.retransmits() > 0, () -> s0 + " / " + s1);
                // Every resent chunk carries 1..1400 payload bytes: the byte count follows the chunk count.
                for (TransportStats s : List.of(s0, s1)) {
                    assertTrue(s.retransmittedBytes() >= s.retransmits() && s.retransmittedBytes() <= 1400 * s.retransmits(),
                            () -> s.retransmittedBytes() + " bytes in " + s.retransmits() + " retransmissions");
                }
            }
            assertEquals(0, s0.malformedDrops() + s1.malformedDrops() + s0.badTokenDrops() + s1.badTokenDrops());
        }
    }
}
