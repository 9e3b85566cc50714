package io.xaforward.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two transports that this thread drives (caller-driven event loops, not started) moving 4 MB messages (about 3000
 * data packets plus ACKs each), and what the thread allocates while one crosses once everything is warm: only
 * per-message objects may remain, nothing per packet.
 */
final class SteadyStateTransfer {
    private SteadyStateTransfer() {
    }

    /** Six warm-up transfers t0 -> t1 (JIT, pools, ring growth), then one measured: over 3000 packets, under 16 KiB. */
    static void assertAllocatesNothingPerPacket(ReliableTransport t0, ReliableTransport t1, int job) {
        var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        int size = 4 << 20;
        MemorySegment source = Arena.ofAuto().allocate(size);
        MemorySegment dest = Arena.ofAuto().allocate(size);
        for (int round = 0; round < 6; round++) {
            transfer(t0, t1, source, dest, job, round);
        }
        long before = mx.getCurrentThreadAllocatedBytes();
        long packetsBefore = t0.stats().packetsSent() + t1.stats().packetsSent();
        transfer(t0, t1, source, dest, job, 100);
        long allocated = mx.getCurrentThreadAllocatedBytes() - before;
        long packets = t0.stats().packetsSent() + t1.stats().packetsSent() - packetsBefore;
        assertTrue(packets > 3000, "packets " + packets);
        assertTrue(allocated < 16_384, allocated + " bytes allocated for " + packets + " packets");
    }

    private static void transfer(ReliableTransport t0, ReliableTransport t1, MemorySegment source, MemorySegment dest,
                                 int job, int step) {
        MessageId id = new MessageId(job, step, 0);
        CompletableFuture<Void> received = t1.expect(0, id, dest);
        CompletableFuture<Void> sent = t0.send(1, id, source);
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!(received.isDone() && sent.isDone()) && System.nanoTime() < deadline) {
            t0.doWork();
            t1.doWork();
        }
        assertTrue(sent.isDone() && !sent.isCompletedExceptionally() && received.isDone(),
                "transfer " + step + " did not complete within 20 s");
    }
}
