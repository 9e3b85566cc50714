package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * One chunk of a small message is lost in the network: the chunks sent after it arrive, so the sender declares it
 * lost from their ACKs (RACK) and resends it without waiting for its retransmission timeout.
 */
class FastRetransmitTest {

    /** Drops the n-th datagram sent (counting from 1), passes everything else. */
    private static final class DropNth implements DatagramPort {
        private final DatagramPort inner;
        private final int n;
        private int sent;

        DropNth(DatagramPort inner, int n) {
            this.inner = inner;
            this.n = n;
        }

        @Override public int maxDatagramLength() { return inner.maxDatagramLength(); }
        @Override public boolean send(MemorySegment buffer, long offset, int length, Peer destination) {
            return ++sent == n || inner.send(buffer, offset, length, destination);
        }
        @Override public int poll(DatagramHandler handler, int limit) { return inner.poll(handler, limit); }
        @Override public Peer localPeer() { return inner.localPeer(); }
        @Override public void close() { inner.close(); }
    }

    @Test
    void aHoleBelowDeliveredChunksIsResentWithoutATimeout() throws Exception {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint e0 = network.newEndpoint();
        LoopbackNetwork.Endpoint e1 = network.newEndpoint();
        AddressBook book = AddressBook.builder().add(0, 1, e0.localPeer()).add(1, 2, e1.localPeer()).build();
        // RTOs far beyond the test's waits: only loss detection from ACKs can finish in time.
        var rto = new Duration[]{Duration.ofSeconds(20), Duration.ofSeconds(20), Duration.ofSeconds(30)};
        try (ReliableTransport sender = new ReliableTransport(TransportConfig.builder(0, 42, 1)
                .retransmitTimeouts(rto[0], rto[1], rto[2]).build(), book, new DropNth(e0, 2)).start();
             ReliableTransport receiver = new ReliableTransport(TransportConfig.builder(1, 42, 1).build(), book, e1)
                     .start()) {
            int size = 4 * 1400; // four chunks; the second one is lost
            byte[] bytes = new byte[size];
            new Random(7).nextBytes(bytes);
            MemorySegment source = Arena.ofAuto().allocate(size);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, source, 0, size);
            MemorySegment dest = Arena.ofAuto().allocate(size);
            CompletableFuture<Void> received = receiver.expect(0, TransportPair.id(1, 1), dest);
            CompletableFuture<Void> sent = sender.send(1, TransportPair.id(1, 1), source);
            received.get(10, TimeUnit.SECONDS);
            sent.get(10, TimeUnit.SECONDS);
            assertEquals(-1L, source.mismatch(dest));
            assertEquals(1, sender.stats().sackLosses(), "chunk 1 declared lost from the ACKs of chunks 2 and 3");
            assertEquals(1, sender.stats().retransmits());
            assertEquals(0, sender.stats().timeoutEvents());
        }
    }
}
