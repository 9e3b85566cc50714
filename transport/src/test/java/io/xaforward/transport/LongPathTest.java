package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Cross-DC links are long: at 1 Gbit/s and a 20 ms round trip, 2.5 MB must be in flight to keep the link busy.
 * In simulated time ({@link DelayedNetwork}), the transport's window and congestion control must fill such a path,
 * and recover every loss exactly.
 */
class LongPathTest {
    private static final long RATE = 1_000_000_000L;
    private static final long ONE_WAY = 10_000_000L; // 10 ms each way: 20 ms round trip
    private static final long BDP_BYTES = RATE / 8 * 2 * ONE_WAY / 1_000_000_000L;

    private record Outcome(double seconds, MemorySegment received, TransportStats sender, DelayedNetwork network) {}

    private static Outcome transfer(long bytes, double lossRate, long seed) {
        var clock = new DelayedNetwork.SimulatedClock();
        var network = new DelayedNetwork(clock, RATE, ONE_WAY, BDP_BYTES, lossRate, seed);
        var e0 = network.newEndpoint();
        var e1 = network.newEndpoint();
        AddressBook book = AddressBook.builder().add(0, 1, e0.localPeer()).add(1, 2, e1.localPeer()).build();
        MemorySegment source = expected(bytes);
        MemorySegment dest = Arena.ofAuto().allocate(bytes);
        // A window larger than the path holds (1786 chunks of 1400 bytes), as a long-haul job would configure.
        TransportConfig.Builder config = TransportConfig.builder(0, 7, 9).windowChunks(4096).clock(clock);
        try (var t0 = new ReliableTransport(config.build(), book, e0);
             var t1 = new ReliableTransport(TransportConfig.builder(1, 7, 9).windowChunks(4096).clock(clock).build(),
                     book, e1)) {
            double seconds = network.transfer(t0, t1, new MessageId(7, 1, 0), source, dest, 100_000, 600_000_000_000L);
            return new Outcome(seconds, dest, t0.stats(), network);
        }
    }

    private static MemorySegment expected(long bytes) {
        MemorySegment s = Arena.ofAuto().allocate(bytes);
        for (long i = 0; i < bytes; i += 8) s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
        return s;
    }

    @Test
    void theWindowFillsALongFatPath() {
        long bytes = 96L << 20;
        Outcome o = transfer(bytes, 0, 1);
        double goodput = bytes * 8 / o.seconds();
        assertTrue(goodput >= 0.8 * RATE, String.format("goodput %.0f Mbit/s of %d over a 20 ms round trip (%s)",
                goodput / 1e6, RATE / 1_000_000, o.sender()));
        assertEquals(-1, expected(bytes).mismatch(o.received()), "every byte arrived, exactly once");
    }

    @Test
    void lossesOnALongPathAreRecoveredExactly() {
        long bytes = 16L << 20;
        Outcome o = transfer(bytes, 0.01, 42);
        assertTrue(o.network().lost > 50, "the network lost datagrams: " + o.network().lost);
        assertEquals(-1, expected(bytes).mismatch(o.received()), "every byte arrived, exactly once");
        assertTrue(o.sender().retransmits() > 0, "losses were resent: " + o.sender());
    }
}
