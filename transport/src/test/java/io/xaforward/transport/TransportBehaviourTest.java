package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TransportBehaviourTest {

    /** {@code size} random bytes from {@code seed}, off the heap (as the transport's callers hand it data). */
    static MemorySegment randomSegment(int size, long seed) {
        byte[] bytes = new byte[size];
        new Random(seed).nextBytes(bytes);
        MemorySegment s = Arena.ofAuto().allocate(size);
        MemorySegment.copy(MemorySegment.ofArray(bytes), 0, s, 0, size);
        return s;
    }

    @Test
    void chunksThatArriveBeforeExpectAreRecoveredByRetransmission() throws Exception {
        // Nothing held (earlyChunkBytes 0): early chunks are dropped, and come again.
        try (TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 1,
                b -> b.retransmitTimeouts(Duration.ofMillis(10), Duration.ofMillis(5), Duration.ofMillis(50)).earlyChunkBytes(0))) {
            MemorySegment source = randomSegment(20_000, 1);
            MemorySegment dest = Arena.ofAuto().allocate(20_000);
            CompletableFuture<Void> sent = pair.rank0.send(1, TransportPair.id(2, 2), source);
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (pair.rank1.stats().unexpectedDrops() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertTrue(pair.rank1.stats().unexpectedDrops() > 0, "data arrived before the expect");
            pair.rank1.expect(0, TransportPair.id(2, 2), dest).get(5, TimeUnit.SECONDS);
            sent.get(5, TimeUnit.SECONDS);
            assertEquals(-1L, source.mismatch(dest));
        }
    }

    @Test
    void lostFinalAckIsAnsweredFromTheCompletedMessageMemory() throws Exception {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint e0 = network.newEndpoint();
        // Everything rank 1 sends (its ACKs) is lost until the test heals the link.
        LossyDatagramPort e1 = new LossyDatagramPort(network.newEndpoint(),
                new LoopbackNetwork.Impairments(0.999999, 0, 0, 0), 1);
        AddressBook book = AddressBook.builder().add(0, 1, e0.localPeer()).add(1, 2, e1.localPeer()).build();
        Duration[] rto = {Duration.ofMillis(10), Duration.ofMillis(5), Duration.ofMillis(20)};
        try (ReliableTransport t0 = new ReliableTransport(TransportConfig.builder(0, 42, 1)
                .retransmitTimeouts(rto[0], rto[1], rto[2]).build(), book, e0).start();
             ReliableTransport t1 = new ReliableTransport(TransportConfig.builder(1, 42, 1).build(), book, e1).start()) {
            MemorySegment source = randomSegment(3000, 2);
            MemorySegment dest = Arena.ofAuto().allocate(3000);
            CompletableFuture<Void> received = t1.expect(0, TransportPair.id(4, 4), dest);
            CompletableFuture<Void> sent = t0.send(1, TransportPair.id(4, 4), source);
            received.get(5, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (t1.stats().duplicatesDropped() < 2 && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertTrue(t1.stats().duplicatesDropped() >= 2, "sender kept retransmitting into a finished message");
            assertTrue(!sent.isDone(), "no ACK got through yet");
            e1.impairments(LoopbackNetwork.Impairments.NONE);
            sent.get(5, TimeUnit.SECONDS);
            assertEquals(1, t0.stats().messagesSent());
            assertEquals(1, t1.stats().messagesReceived());
            assertEquals(-1L, source.mismatch(dest));
        }
    }

    @Test
    void receiveTimeoutNamesTheSilentSender() throws Exception {
        try (TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 1,
                b -> b.receiveTimeout(Duration.ofMillis(200)))) {
            CompletableFuture<Void> expected = pair.rank1.expect(0, TransportPair.id(9, 1), Arena.ofAuto().allocate(8));
            ExecutionException e = assertThrows(ExecutionException.class, () -> expected.get(5, TimeUnit.SECONDS));
            assertEquals("rank 0 sent no chunk of message (step 9, bucket 1) within 200 ms", e.getCause().getMessage());
        }
    }

    @Test
    void closeFailsPendingWork() {
        TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 1, b -> b);
        CompletableFuture<Void> expected = pair.rank1.expect(0, TransportPair.id(1, 1), Arena.ofAuto().allocate(8));
        pair.close();
        ExecutionException e = assertThrows(ExecutionException.class, () -> expected.get(5, TimeUnit.SECONDS));
        assertInstanceOf(IllegalStateException.class, e.getCause());
        assertThrows(IllegalStateException.class,
                () -> pair.rank0.send(1, TransportPair.id(1, 1), Arena.ofAuto().allocate(8)));
    }

    @Test
    void duplicateExpectIsRefused() {
        try (TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 1, b -> b)) {
            pair.rank1.expect(0, TransportPair.id(1, 1), Arena.ofAuto().allocate(8));
            CompletableFuture<Void> second = pair.rank1.expect(0, TransportPair.id(1, 1), Arena.ofAuto().allocate(8));
            ExecutionException e = assertThrows(ExecutionException.class, () -> second.get(5, TimeUnit.SECONDS));
            assertEquals("message (step 1, bucket 1) from rank 0 is already expected", e.getCause().getMessage());
        }
    }

    @Test
    void lossyUdpPortStillDeliversIntact() throws Exception {
        InetAddress loopback = InetAddress.getByName("127.0.0.1");
        var impair = new LoopbackNetwork.Impairments(0.10, 0.05, 0.05, 0.02);
        LossyDatagramPort port0 = new LossyDatagramPort(new UdpDatagramPort(new InetSocketAddress(loopback, 0)), impair, 1);
        LossyDatagramPort port1 = new LossyDatagramPort(new UdpDatagramPort(new InetSocketAddress(loopback, 0)), impair, 2);
        AddressBook book = AddressBook.builder().add(0, 1, port0.localPeer()).add(1, 2, port1.localPeer()).build();
        var rto = new Duration[]{Duration.ofMillis(10), Duration.ofMillis(5), Duration.ofMillis(100)};
        try (ReliableTransport t0 = new ReliableTransport(TransportConfig.builder(0, 8, 8)
                .retransmitTimeouts(rto[0], rto[1], rto[2]).build(), book, port0).start();
             ReliableTransport t1 = new ReliableTransport(TransportConfig.builder(1, 8, 8)
                     .retransmitTimeouts(rto[0], rto[1], rto[2]).build(), book, port1).start()) {
            MemorySegment a = randomSegment(1_000_000, 3);
            MemorySegment b = randomSegment(700_001, 4);
            MemorySegment intoA = Arena.ofAuto().allocate(a.byteSize());
            MemorySegment intoB = Arena.ofAuto().allocate(b.byteSize());
            MessageId id = new MessageId(8, 1, 1);
            var r1 = t1.expect(0, id, intoA);
            var r0 = t0.expect(1, id, intoB);
            var s0 = t0.send(1, id, a);
            var s1 = t1.send(0, id, b);
            CompletableFuture.allOf(r0, r1, s0, s1).get(30, TimeUnit.SECONDS);
            assertEquals(-1L, a.mismatch(intoA));
            assertEquals(-1L, b.mismatch(intoB));
            assertTrue(port0.dropped() > 0 && t0.stats().retransmits() > 0);
            // The kernel may drop a corrupted datagram before the transport sees it, never invent one.
            long crcFailures = t0.stats().crcFailures() + t1.stats().crcFailures();
            assertTrue(crcFailures > 0 && crcFailures <= port0.corrupted() + port1.corrupted(),
                    crcFailures + " CRC failures for " + (port0.corrupted() + port1.corrupted()) + " corruptions");
        }
    }
}
