package io.xaforward.transport;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A 16 MB message between two transports over real UDP sockets on the loopback interface, IPv4 and IPv6. */
class UdpLoopbackTransportTest {
    private static final int SIZE = 16 << 20;

    @ParameterizedTest(name = "{0}, {1} flow(s)")
    @CsvSource({"127.0.0.1, 1", "::1, 1", "127.0.0.1, 3"})
    void moves16MegabytesIntact(String host, int flows) throws Exception {
        InetAddress loopback = InetAddress.getByName(host);
        UdpDatagramPort port0 = new UdpDatagramPort(new InetSocketAddress(loopback, 0), flows);
        UdpDatagramPort port1 = new UdpDatagramPort(new InetSocketAddress(loopback, 0), flows);
        assertEquals(loopback, port0.localPeer().address().getAddress());
        AddressBook book = AddressBook.builder()
                .add(0, 100, port0.localPeer())
                .add(1, 101, port1.localPeer())
                .build();
        var tweak = (java.util.function.UnaryOperator<TransportConfig.Builder>) b -> b.windowChunks(96)
                .retransmitTimeouts(Duration.ofMillis(20), Duration.ofMillis(2), Duration.ofMillis(200));
        try (ReliableTransport t0 = new ReliableTransport(tweak.apply(TransportConfig.builder(0, 5, 77)).build(),
                book, port0).start();
             ReliableTransport t1 = new ReliableTransport(tweak.apply(TransportConfig.builder(1, 5, 77)).build(),
                     book, port1).start()) {
            Arena arena = Arena.ofAuto();
            MemorySegment source = arena.allocate(SIZE, 64);
            for (long i = 0; i < SIZE; i += 8) {
                source.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
            }
            MemorySegment dest = arena.allocate(SIZE, 64);
            MessageId id = new MessageId(5, 1, 0);
            CompletableFuture<Void> received = t1.expect(0, id, dest);
            long start = System.nanoTime();
            t0.send(1, id, source).get(60, TimeUnit.SECONDS);
            received.get(10, TimeUnit.SECONDS);
            double seconds = (System.nanoTime() - start) / 1e9;
            assertEquals(-1L, source.mismatch(dest));
            long chunks = (SIZE + 1399) / 1400;
            assertEquals(chunks, t0.stats().dataChunksSent() - t0.stats().retransmits());
            assertEquals(1, t1.stats().messagesReceived());
            assertEquals(0, t1.stats().crcFailures());
            assertTrue(t0.stats().acksReceived() > 0);
            // Chunks from every flow of rank 0 and ACKs from every flow of rank 1 are recognised as theirs.
            assertEquals(0, t1.stats().sourceAddressDrops());
            assertEquals(0, t0.stats().sourceAddressDrops());
            assertEquals(flows, port0.flows());
            System.out.printf("UDP %s: 16 MB in %.2f s (%.0f MB/s), %s%n", host, seconds, 16 / seconds, t0.stats());
        }
    }
}
