package io.xaforward.transport;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Drives two transports from this thread (caller-driven event loops) and measures what the thread allocates while
 * a 4 MB message (about 3000 data packets plus ACKs) crosses: only per-message objects may remain, nothing per packet.
 */
class HotPathAllocationTest {
    /** The run every transport and seal of this test belongs to. */
    private static final RunNonce RUN = RunNonce.generate();
    private static final int JOB = 42;

    @ParameterizedTest
    @EnumSource(value = WireSecurity.class, names = {"CRC32C", "MAC"})
    void steadyStateTransferAllocatesNothingPerPacket(WireSecurity mode) {
        JobSecret secret = JobSecret.of(new byte[32]);
        var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint e0 = network.newEndpoint();
        LoopbackNetwork.Endpoint e1 = network.newEndpoint();
        AddressBook book = AddressBook.builder().add(0, 1, e0.localPeer()).add(1, 2, e1.localPeer()).build();
        try (ReliableTransport t0 = new ReliableTransport(TransportConfig.builder(0, JOB, 1)
                .wireSecurity(mode, secret, RUN).build(), book, e0);
             ReliableTransport t1 = new ReliableTransport(TransportConfig.builder(1, JOB, 1)
                .wireSecurity(mode, secret, RUN).build(), book, e1)) {
            int size = 4 << 20;
            MemorySegment source = Arena.ofAuto().allocate(size);
            MemorySegment dest = Arena.ofAuto().allocate(size);
            for (int round = 0; round < 6; round++) { // warm-up: JIT, pools, ring growth
                transfer(t0, t1, source, dest, round);
            }
            long before = mx.getCurrentThreadAllocatedBytes();
            long packetsBefore = t0.stats().packetsSent() + t1.stats().packetsSent();
            transfer(t0, t1, source, dest, 100);
            long allocated = mx.getCurrentThreadAllocatedBytes() - before;
            long packets = t0.stats().packetsSent() + t1.stats().packetsSent() - packetsBefore;
            assertTrue(packets > 3000, "packets " + packets);
            assertTrue(allocated < 16_384, allocated + " bytes allocated for " + packets + " packets");
        }
    }

    private static void transfer(ReliableTransport t0, ReliableTransport t1, MemorySegment source,
                                 MemorySegment dest, int step) {
        MessageId id = new MessageId(42, step, 0);
        CompletableFuture<Void> received = t1.expect(0, id, dest);
        CompletableFuture<Void> sent = t0.send(1, id, source);
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!(received.isDone() && sent.isDone()) && System.nanoTime() < deadline) {
            t0.doWork();
            t1.doWork();
        }
        assertEquals(true, sent.isDone() && !sent.isCompletedExceptionally() && received.isDone());
    }
}
