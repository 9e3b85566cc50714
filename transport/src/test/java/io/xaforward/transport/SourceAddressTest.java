package io.xaforward.transport;

import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A datagram that claims a rank must come from the address book's address for that rank. Here even an insider who
 * holds the job secret, and so can seal a datagram that verifies, cannot inject data as rank 1 from another UDP
 * port: the transport drops it before it opens the seal, counts it, and the real message from rank 1 completes.
 */
class SourceAddressTest {
    /** The run every transport and seal of this test belongs to. */
    private static final RunNonce RUN = RunNonce.generate();
    private static final int JOB = 42, TOKEN = 0x5EC12E7, PAYLOAD = 256;
    private static final JobSecret SECRET = JobSecret.of(filled(32, 7));

    private static byte[] filled(int n, int v) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) v);
        return b;
    }

    private static MemorySegment pattern(int bytes, int seed) {
        MemorySegment s = Arena.ofAuto().allocate(bytes);
        for (int i = 0; i < bytes; i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed));
        return s;
    }

    /** One DATA chunk from rank 1 to rank 0 carrying {@code data} as the whole message (step 3, bucket 4), sealed. */
    private static MemorySegment sealedChunk(WireSeal seal, MemorySegment data, long sequence) {
        int dataLength = (int) data.byteSize();
        MemorySegment frame = Arena.ofAuto().allocate(XafHeader.LENGTH + dataLength + WireSeal.TRAILER_BYTES);
        MemorySegment.copy(data, 0, frame, XafHeader.LENGTH, dataLength);
        new XafHeader().wrap(frame, 0).init().type(1).flags(seal.flags()).networkId(10).jobId(JOB).jobToken(TOKEN)
                .srcRank(1).dstRank(0).step(3).bucketId(4).chunkIndex(0).chunkCount(1)
                .payloadLength(dataLength + seal.trailerLength());
        seal.seal(frame, dataLength, sequence);
        return frame.asSlice(0, XafHeader.LENGTH + dataLength + seal.trailerLength());
    }

    private static TransportConfig config(int rank) {
        return TransportConfig.builder(rank, JOB, TOKEN).maxPayload(PAYLOAD).wireSecurity(WireSecurity.MAC, SECRET, RUN)
                .ackTimeout(Duration.ofMillis(200)).build();
    }

    @Test
    void aSealedDatagramFromAnotherAddressClaimingAValidRankIsDroppedAndCounted() throws Exception {
        InetSocketAddress loopback = new InetSocketAddress("127.0.0.1", 0);
        try (UdpDatagramPort p0 = new UdpDatagramPort(loopback);
             UdpDatagramPort p1 = new UdpDatagramPort(loopback);
             UdpDatagramPort intruder = new UdpDatagramPort(loopback)) {
            AddressBook book = AddressBook.builder().add(0, 10, p0.localPeer()).add(1, 11, p1.localPeer()).build();
            try (ReliableTransport t0 = new ReliableTransport(config(0), book, p0).start();
                 ReliableTransport t1 = new ReliableTransport(config(1), book, p1).start()) {
                MemorySegment received = Arena.ofAuto().allocate(PAYLOAD);
                CompletableFuture<Void> expected = t0.expect(1, new MessageId(JOB, 3, 4), received);

                MemorySegment forged = sealedChunk(WireSeal.of(WireSecurity.MAC, SECRET, JOB, RUN, 2048), pattern(PAYLOAD, 99), 1);
                // the seal is genuine: a receiver with the job secret opens it
                assertEquals(WireSeal.OPENED, WireSeal.of(WireSecurity.MAC, SECRET, JOB, RUN, 2048)
                        .open(copy(forged), 0, (int) forged.byteSize() - XafHeader.LENGTH));
                intruder.send(forged, 0, (int) forged.byteSize(), p0.localPeer());
                intruder.flush();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (t0.stats().sourceAddressDrops() < 1 && System.nanoTime() < deadline) Thread.sleep(5);
                assertEquals(1, t0.stats().sourceAddressDrops(), t0.stats()::toString);
                assertEquals(0, t0.stats().authFailures(), "stopped by the address check, not by the seal");
                assertFalse(expected.isDone(), "nothing from the wrong address is delivered");
                assertEquals(0, t0.stats().acksSent());

                MemorySegment real = pattern(PAYLOAD, 1);
                t1.send(0, new MessageId(JOB, 3, 4), real).get(10, TimeUnit.SECONDS);
                expected.get(10, TimeUnit.SECONDS);
                assertEquals(-1, received.mismatch(real), "rank 0 holds rank 1's real data");
                assertEquals(1, t0.stats().sourceAddressDrops());
                assertEquals(0, t1.stats().sourceAddressDrops(), t1.stats()::toString);
            }
        }
    }

    private static MemorySegment copy(MemorySegment s) {
        MemorySegment c = Arena.ofAuto().allocate(s.byteSize());
        c.copyFrom(s);
        return c;
    }

    @Test
    void theInMemoryNetworkChecksTheSenderToo() {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint e0 = network.newEndpoint(), e1 = network.newEndpoint(), other = network.newEndpoint();
        AddressBook book = AddressBook.builder().add(0, 10, e0.localPeer()).add(1, 11, e1.localPeer()).build();
        try (ReliableTransport t0 = new ReliableTransport(config(0), book, e0)) {
            MemorySegment forged = sealedChunk(WireSeal.of(WireSecurity.MAC, SECRET, JOB, RUN, 2048), pattern(PAYLOAD, 5), 1);
            other.send(forged, 0, (int) forged.byteSize(), e0.localPeer());
            e1.send(forged, 0, (int) forged.byteSize(), e0.localPeer());
            for (int i = 0; i < 10 && t0.stats().packetsReceived() < 2; i++) t0.doWork();
            assertEquals(2, t0.stats().packetsReceived());
            assertEquals(1, t0.stats().sourceAddressDrops(), t0.stats()::toString);
            assertEquals(0, t0.stats().authFailures(), "the copy from rank 1's own address passes the address check");
        }
    }
}
