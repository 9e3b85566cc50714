package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** With a pacing rate R the transport delivers close to R: not much less (idle gaps) and not more (no burst). */
class PacingTest {
    private static final long RATE = 6_000_000; // bytes per second

    @Test
    void goodputStaysNearTheConfiguredRate() throws Exception {
        try (TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 5,
                // A 40 ms bucket: this shared machine deschedules the sender for milliseconds at a time. It can add at
                // most 240 kB (2.7 %) above R to the measurement, so the upper bound still catches a pacer that leaks.
                b -> b.pacing(RATE, RATE / 25).windowChunks(512))) {
            // Warm up (JIT, pools) with a short paced message so the measurement sees the steady state.
            MemorySegment warmUp = Arena.ofAuto().allocate(600_000);
            CompletableFuture<Void> warm = pair.rank1.expect(0, TransportPair.id(0, 0), Arena.ofAuto().allocate(600_000));
            pair.rank0.send(1, TransportPair.id(0, 0), warmUp);
            warm.get(30, TimeUnit.SECONDS);

            int size = 9_000_000; // ~1.5 s at R
            MemorySegment source = Arena.ofAuto().allocate(size);
            MemorySegment dest = Arena.ofAuto().allocate(size);
            CompletableFuture<Void> received = pair.rank1.expect(0, TransportPair.id(1, 0), dest);
            long start = System.nanoTime();
            pair.rank0.send(1, TransportPair.id(1, 0), source);
            received.get(30, TimeUnit.SECONDS);
            double seconds = (System.nanoTime() - start) / 1e9;
            double goodput = size / seconds;
            System.out.printf("pacing: configured %d B/s, goodput %.0f B/s (%.3f R) %s%n", RATE, goodput,
                    goodput / RATE, pair.rank0.stats());
            assertTrue(goodput >= 0.8 * RATE && goodput <= 1.05 * RATE,
                    "goodput " + goodput + " B/s outside [0.8, 1.05] x " + RATE);
        }
    }
}
