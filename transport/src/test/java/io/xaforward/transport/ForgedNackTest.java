package io.xaforward.transport;

import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A NACK forged by someone who can reach the transport's port, in every wire mode: with a MAC it is refused as
 * unauthentic; in crc32c mode (no key) it is acted on once, for at most a window of chunks, and repeats are refused,
 * so a forger cannot turn one datagram into an unbounded stream of resends.
 */
class ForgedNackTest {
    /** The run every transport and seal of this test belongs to. */
    private static final RunNonce RUN = RunNonce.generate();
    private static final int JOB = 42;
    private static final int TOKEN = 0x5EC12E7;
    private static final int PAYLOAD = 256;
    private static final int WINDOW = 64;
    private static final int FORGERIES = 5;

    private static JobSecret key(int v) {
        byte[] b = new byte[32];
        Arrays.fill(b, (byte) v);
        return JobSecret.of(b);
    }

    @ParameterizedTest
    @EnumSource(WireSecurity.class)
    void aForgedNackResendsAtMostOneWindowOnceAndNotAtAllWithAMac(WireSecurity mode) throws Exception {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint victimEnd = network.newEndpoint();
        LoopbackNetwork.Endpoint forger = network.newEndpoint(); // rank 1's address: it never acknowledges
        AddressBook book = AddressBook.builder().add(0, 10, victimEnd.localPeer()).add(1, 11, forger.localPeer()).build();
        // Retransmission timeouts far beyond the test: every resend counted here comes from a NACK.
        TransportConfig config = TransportConfig.builder(0, JOB, TOKEN).maxPayload(PAYLOAD).windowChunks(WINDOW)
                .retransmitTimeouts(Duration.ofSeconds(20), Duration.ofSeconds(20), Duration.ofSeconds(30))
                .ackTimeout(Duration.ofSeconds(30)).wireSecurity(mode, mode.authenticated() ? key(7) : null, RUN).build();
        try (ReliableTransport victim = new ReliableTransport(config, book, victimEnd).start()) {
            WireSeal real = WireSeal.of(mode, mode.authenticated() ? key(7) : null, JOB, RUN, 2048);
            int chunks = 200;
            victim.send(1, new MessageId(JOB, 3, 4), Arena.ofAuto().allocate((long) chunks * (PAYLOAD - real.trailerLength())));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (victim.stats().packetsSent() == 0 && System.nanoTime() < deadline) Thread.sleep(5);
            Thread.sleep(100);
            int out = (int) victim.stats().packetsSent(); // the first congestion window, never acknowledged
            assertTrue(out > 1 && out <= WINDOW, "chunks out: " + out);

            // The forger knows job, token and addresses (all visible on the wire), not the secret.
            WireSeal forged = WireSeal.of(mode, mode.authenticated() ? key(9) : null, JOB, RUN, 2048);
            MemorySegment nack = Arena.ofAuto().allocate(AckPayload.length(1));
            AckPayload.writeFixed(nack, 0, 0, chunks, 0, 1);
            AckPayload.writeSackWord(nack, 0, 0, out == 64 ? -1L : (1L << out) - 1); // "every chunk sent was dropped"
            for (int i = 0; i < FORGERIES; i++) {
                inject(forger, victimEnd, forged, nack, i + 1);
                Thread.sleep(50); // time to resend, so that a repeat would find the chunks in flight again
            }
            // The event loop counts each forgery when it gets to it: on a loaded machine that can be after the last
            // 50 ms sleep, so wait (bounded) until all of them were seen before comparing counts.
            awaitCounted(() -> victim.stats().authFailures() + victim.stats().invalidAckDrops()
                    + (victim.stats().nackLosses() > 0 ? 1 : 0), FORGERIES);
            if (mode.authenticated()) {
                assertEquals(FORGERIES, victim.stats().authFailures());
                assertEquals(0, victim.stats().nackLosses(), "an unauthentic NACK resends nothing");
            } else {
                assertEquals(out, victim.stats().nackLosses(), "the named chunks resent, once");
                assertEquals(FORGERIES - 1, victim.stats().invalidAckDrops(), "repeats refused and counted");
            }
            assertEquals(out + victim.stats().nackLosses(), victim.stats().packetsSent());
        }
    }

    private static void awaitCounted(java.util.function.LongSupplier seen, long expected) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (seen.getAsLong() < expected && System.nanoTime() < deadline) Thread.sleep(5);
    }

    private static void inject(LoopbackNetwork.Endpoint from, LoopbackNetwork.Endpoint to, WireSeal seal,
                               MemorySegment data, long seq) {
        int dataLength = (int) data.byteSize();
        MemorySegment frame = Arena.ofAuto().allocate(XafHeader.LENGTH + dataLength + WireSeal.TRAILER_BYTES);
        MemorySegment.copy(data, 0, frame, XafHeader.LENGTH, dataLength);
        new XafHeader().wrap(frame, 0).init().type(3).flags(seal.flags()).networkId(10).jobId(JOB).jobToken(TOKEN)
                .srcRank(1).dstRank(0).step(3).bucketId(4).chunkIndex(0).chunkCount(200)
                .payloadLength(dataLength + seal.trailerLength());
        seal.seal(frame, dataLength, seq);
        from.send(frame, 0, XafHeader.LENGTH + dataLength + seal.trailerLength(), to.localPeer());
    }
}
