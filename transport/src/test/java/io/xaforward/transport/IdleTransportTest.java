package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/**
 * An idle transport on a UDP port sleeps in the port instead of polling it, and wakes for arrivals, submissions and
 * close. Workers share cores with training, so CPU burnt while waiting is taken from the compute.
 */
class IdleTransportTest {

    @Test
    void awaitReceiveReturnsOnArrivalAndOnWakeup() throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        try (UdpDatagramPort a = new UdpDatagramPort(new InetSocketAddress(lo, 0));
             UdpDatagramPort b = new UdpDatagramPort(new InetSocketAddress(lo, 0))) {
            assertTrue(b.canAwaitReceive());
            // Nothing pending: the wait runs to its timeout.
            long start = System.nanoTime();
            b.awaitReceive(TimeUnit.MILLISECONDS.toNanos(200));
            assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(150), "returned before its timeout");

            // A datagram arriving during a 20-second wait ends it.
            CompletableFuture<Long> waited = CompletableFuture.supplyAsync(() -> {
                long t0 = System.nanoTime();
                b.awaitReceive(TimeUnit.SECONDS.toNanos(20));
                return System.nanoTime() - t0;
            });
            Thread.sleep(100);
            MemorySegment datagram = Arena.ofAuto().allocate(64);
            assertTrue(a.send(datagram, 0, 64, b.localPeer()));
            a.flush();
            assertTrue(waited.get(10, TimeUnit.SECONDS) < TimeUnit.SECONDS.toNanos(10), "arrival did not end the wait");
            int[] got = {0};
            assertEquals(1, b.poll((segment, offset, length) -> got[0] = length, 8));
            assertEquals(64, got[0]);

            // wakeup() from another thread ends a wait; a wakeup before the wait makes the next wait return at once.
            assertWakeupEndsAWait(b);
            b.wakeup();
            start = System.nanoTime();
            b.awaitReceive(TimeUnit.SECONDS.toNanos(20));
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10), "an earlier wakeup was lost");
        }
    }

    @Test
    void idleTransportSleepsAndStillAnswersAtOnce() throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        UdpDatagramPort port0 = new UdpDatagramPort(new InetSocketAddress(lo, 0));
        UdpDatagramPort port1 = new UdpDatagramPort(new InetSocketAddress(lo, 0));
        AddressBook book = AddressBook.builder().add(0, 100, port0.localPeer()).add(1, 101, port1.localPeer()).build();
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        try (ReliableTransport t0 = new ReliableTransport(TransportConfig.builder(0, 5, 77).build(), book, port0).start();
             ReliableTransport t1 = new ReliableTransport(TransportConfig.builder(1, 5, 77).build(), book, port1).start()) {
            MemorySegment source = Arena.ofAuto().allocate(1 << 20, 64);
            for (long i = 0; i < source.byteSize(); i += 8) source.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 31 + 7);
            MemorySegment dest = Arena.ofAuto().allocate(1 << 20, 64);
            for (int step = 0; step < 5; step++) {
                // Idle: both event loops must sleep, not poll. Polling with short parks cost a third of a CPU.
                Thread.sleep(300);
                long[] before = loopCpuNanos(threads);
                Thread.sleep(1000);
                long[] after = loopCpuNanos(threads);
                for (int rank = 0; rank < 2; rank++) {
                    long used = after[rank] - before[rank];
                    assertTrue(used < TimeUnit.MILLISECONDS.toNanos(50),
                            "idle event loop of rank " + rank + " used " + used / 1_000_000 + " ms of CPU in 1 s");
                }
                // A message submitted to a sleeping transport is sent and received whole.
                MessageId id = new MessageId(5, step, 0);
                dest.fill((byte) 0);
                CompletableFuture<Void> received = t1.expect(0, id, dest);
                t0.send(1, id, source).get(30, TimeUnit.SECONDS);
                received.get(30, TimeUnit.SECONDS);
                assertEquals(-1L, source.mismatch(dest), "step " + step);
            }
        }
    }

    /** wakeup() from another thread ends a 20-second awaitReceive of {@code port} well before its timeout. */
    static void assertWakeupEndsAWait(DatagramPort port) throws Exception {
        CompletableFuture<Long> woken = CompletableFuture.supplyAsync(() -> {
            long t0 = System.nanoTime();
            port.awaitReceive(TimeUnit.SECONDS.toNanos(20));
            return System.nanoTime() - t0;
        });
        Thread.sleep(100);
        port.wakeup();
        assertTrue(woken.get(10, TimeUnit.SECONDS) < TimeUnit.SECONDS.toNanos(10), "wakeup did not end the wait");
    }

    /** CPU time of the two event-loop threads, by rank. */
    static long[] loopCpuNanos(ThreadMXBean threads) {
        long[] cpu = new long[2];
        int found = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            for (int rank = 0; rank < 2; rank++) {
                if (t.getName().equals("xaf-transport-rank-" + rank)) {
                    cpu[rank] = threads.getThreadCpuTime(t.threadId());
                    found++;
                }
            }
        }
        assertTrue(found >= 2, "event-loop threads not found");
        return cpu;
    }
}
