package io.xaforward.transport;

import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BadInputTest {

    @Test
    void oversizedMessageIsRejectedWithBothSizes() {
        try (TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 1, b -> b.maxMessageBytes(1000))) {
            MemorySegment big = Arena.ofAuto().allocate(1001);
            IllegalArgumentException send = assertThrows(IllegalArgumentException.class,
                    () -> pair.rank0.send(1, TransportPair.id(1, 1), big));
            assertEquals("message of 1001 bytes exceeds the configured limit of 1000 bytes", send.getMessage());
            IllegalArgumentException expect = assertThrows(IllegalArgumentException.class,
                    () -> pair.rank0.expect(1, TransportPair.id(1, 1), big));
            assertEquals(send.getMessage(), expect.getMessage());
        }
    }

    @Test
    void unknownRankAndForeignJobAreRejected() {
        try (TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 1, b -> b)) {
            MemorySegment data = Arena.ofAuto().allocate(8);
            assertEquals("rank 9 is not in the address book", assertThrows(IllegalArgumentException.class,
                    () -> pair.rank0.send(9, TransportPair.id(1, 1), data)).getMessage());
            assertEquals("message (step 1, bucket 1) belongs to job 3 but this transport serves job 42",
                    assertThrows(IllegalArgumentException.class,
                            () -> pair.rank0.send(1, new MessageId(3, 1, 1), data)).getMessage());
        }
    }

    @Test
    void silentRankTimesOutNamingTheRank() throws Exception {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint mine = network.newEndpoint();
        LoopbackNetwork.Endpoint silent = network.newEndpoint(); // nobody ever polls it
        AddressBook book = AddressBook.builder().add(0, 1, mine.localPeer()).add(3, 4, silent.localPeer()).build();
        TransportConfig config = TransportConfig.builder(0, 42, 1)
                .retransmitTimeouts(Duration.ofMillis(10), Duration.ofMillis(5), Duration.ofMillis(50))
                .ackTimeout(Duration.ofMillis(400))
                .build();
        try (ReliableTransport transport = new ReliableTransport(config, book, mine).start()) {
            long start = System.nanoTime();
            CompletableFuture<Void> send = transport.send(3, new MessageId(42, 7, 2), Arena.ofAuto().allocate(5000));
            ExecutionException e = assertThrows(ExecutionException.class, () -> send.get(5, TimeUnit.SECONDS));
            double seconds = (System.nanoTime() - start) / 1e9;
            TransportTimeoutException timeout = assertInstanceOf(TransportTimeoutException.class, e.getCause());
            assertEquals("rank 3 did not acknowledge message (step 7, bucket 2) within 400 ms", timeout.getMessage());
            assertEquals(3, timeout.rank());
            // not before the acknowledgement timeout; how long after it depends on the machine's load (get's 5 s bound)
            assertTrue(seconds >= 0.4, "gave up after " + seconds + " s, before the 400 ms timeout");
            assertTrue(transport.stats().retransmits() > 0, "it retried before giving up");
            assertEquals(1, transport.stats().sendTimeouts());
        }
    }

    @Test
    void wrongJobTokenIsDroppedAndCounted() throws Exception {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint e0 = network.newEndpoint();
        LoopbackNetwork.Endpoint e1 = network.newEndpoint();
        AddressBook book = AddressBook.builder().add(0, 1, e0.localPeer()).add(1, 2, e1.localPeer()).build();
        TransportConfig intruderConfig = TransportConfig.builder(0, 42, 0xBAD)
                .ackTimeout(Duration.ofMillis(300)).build();
        try (ReliableTransport intruder = new ReliableTransport(intruderConfig, book, e0).start();
             ReliableTransport victim = new ReliableTransport(TransportConfig.builder(1, 42, 0x600D).build(),
                     book, e1).start()) {
            MemorySegment dest = Arena.ofAuto().allocate(3000);
            CompletableFuture<Void> expected = victim.expect(0, TransportPair.id(1, 1), dest);
            CompletableFuture<Void> sent = intruder.send(1, TransportPair.id(1, 1), Arena.ofAuto().allocate(3000));
            ExecutionException e = assertThrows(ExecutionException.class, () -> sent.get(5, TimeUnit.SECONDS));
            assertInstanceOf(TransportTimeoutException.class, e.getCause());
            assertFalse(expected.isDone(), "nothing from the wrong job may be delivered");
            assertTrue(victim.stats().badTokenDrops() >= 3, victim.stats()::toString);
            assertEquals(0, victim.stats().acksSent());
        }
    }

    @Test
    void foreignJobIdAndGarbageAreCountedNotDelivered() throws Exception {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint raw = network.newEndpoint();
        LoopbackNetwork.Endpoint e1 = network.newEndpoint();
        AddressBook book = AddressBook.builder().add(0, 1, raw.localPeer()).add(1, 2, e1.localPeer()).build();
        try (ReliableTransport victim = new ReliableTransport(TransportConfig.builder(1, 42, 7).build(), book, e1)) {
            MemorySegment frame = Arena.ofAuto().allocate(XafHeader.LENGTH + 8);
            new XafHeader().wrap(frame, 0).init().type(1).jobId(41).jobToken(7).srcRank(0).dstRank(1)
                    .chunkCount(1).payloadLength(8);
            raw.send(frame, 0, (int) frame.byteSize(), e1.localPeer());
            raw.send(frame, 0, 20, e1.localPeer()); // truncated
            new XafHeader().wrap(frame, 0).jobId(42).dstRank(5);
            raw.send(frame, 0, (int) frame.byteSize(), e1.localPeer()); // addressed to another rank
            new XafHeader().wrap(frame, 0).dstRank(1).flags(XafHeader.FLAG_HEADER_CHECKED);
            raw.send(frame, 0, (int) frame.byteSize(), e1.localPeer()); // right job, but CRC field is 0
            for (int i = 0; i < 10 && victim.stats().packetsReceived() < 4; i++) {
                victim.doWork(); // caller-driven event loop
            }
            TransportStats s = victim.stats();
            assertEquals(4, s.packetsReceived());
            assertEquals(1, s.badTokenDrops());
            assertEquals(1, s.malformedDrops());
            assertEquals(1, s.misdirectedDrops());
            assertEquals(1, s.crcFailures());
        }
    }
}
