package io.xaforward.transport;

import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Per-run wire keys (docs/PROTOCOL.md "Wire security"): each run of a job (a start or a restart) derives its keys
 * from (job secret, job id, run nonce), so datagrams recorded in one run are refused in the next, and AES-GCM nonces
 * come from a random salt and a counter, never from a clock.
 */
class RunKeysTest {
    private static final int JOB = 42;
    private static final int TOKEN = 0x5EC12E7;
    private static final int PAYLOAD = 256;
    private static final JobSecret SECRET = JobSecret.of(filled(32, 7));
    private static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private static byte[] filled(int n, int v) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) v);
        return b;
    }

    /** A port that keeps a copy of every datagram it sends: what an attacker on the path records. */
    private static final class RecordingPort implements DatagramPort {
        final LoopbackNetwork.Endpoint inner;
        final List<byte[]> sent = new ArrayList<>();

        RecordingPort(LoopbackNetwork.Endpoint inner) {
            this.inner = inner;
        }

        @Override public int maxDatagramLength() { return inner.maxDatagramLength(); }

        @Override
        public boolean send(MemorySegment buffer, long offset, int length, Peer destination) {
            synchronized (sent) {
                sent.add(buffer.asSlice(offset, length).toArray(ValueLayout.JAVA_BYTE));
            }
            return inner.send(buffer, offset, length, destination);
        }

        @Override public int poll(DatagramHandler handler, int limit) { return inner.poll(handler, limit); }
        @Override public boolean receivedFrom(Peer peer) { return inner.receivedFrom(peer); }
        @Override public Peer localPeer() { return inner.localPeer(); }
        @Override public void close() { inner.close(); }

        List<byte[]> sent() {
            synchronized (sent) {
                return new ArrayList<>(sent);
            }
        }
    }

    private static TransportConfig config(int rank, WireSecurity mode, RunNonce run, NanoClock clock) {
        return TransportConfig.builder(rank, JOB, TOKEN).maxPayload(PAYLOAD).wireSecurity(mode, SECRET, run)
                .ackTimeout(Duration.ofSeconds(10)).clock(clock).build();
    }

    private static AddressBook book(LoopbackNetwork.Endpoint e0, LoopbackNetwork.Endpoint e1) {
        return AddressBook.builder().add(0, 10, e0.localPeer()).add(1, 11, e1.localPeer()).build();
    }

    private static MemorySegment pattern(int bytes, int seed) {
        MemorySegment s = Arena.ofAuto().allocate(bytes);
        for (int i = 0; i < bytes; i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed));
        return s;
    }

    /** Run 1: rank 1 sends message (step 5, bucket 0) to rank 0; returns rank 1's DATA datagrams as recorded. */
    private static List<byte[]> recordRun(WireSecurity mode, RunNonce run, MemorySegment message) throws Exception {
        LoopbackNetwork net = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint e0 = net.newEndpoint();
        LoopbackNetwork.Endpoint e1 = net.newEndpoint();
        RecordingPort recorder = new RecordingPort(e1);
        try (ReliableTransport r0 = new ReliableTransport(config(0, mode, run, NanoClock.SYSTEM), book(e0, e1), e0).start();
             ReliableTransport r1 = new ReliableTransport(config(1, mode, run, NanoClock.SYSTEM), book(e0, e1), recorder).start()) {
            MemorySegment got = Arena.ofAuto().allocate(message.byteSize());
            CompletableFuture<Void> in = r0.expect(1, new MessageId(JOB, 5, 0), got);
            r1.send(0, new MessageId(JOB, 5, 0), message).get(10, TimeUnit.SECONDS);
            in.get(10, TimeUnit.SECONDS);
            assertEquals(-1, got.mismatch(message), "run 1 delivers the message");
        }
        List<byte[]> data = new ArrayList<>();
        for (byte[] d : recorder.sent()) {
            if (d[XafHeader.TYPE_OFFSET] == io.xaforward.protocol.MessageType.DATA.code()) data.add(d);
        }
        assertFalse(data.isEmpty());
        return data;
    }

    /**
     * Run 2 of the job (a restart, at the same addresses): rank 0 expects the same message id again (resumed steps
     * reuse their ids) and the recorded datagrams of run 1 arrive first, replayed from rank 1's address. Returns
     * rank 0's stats and whether anything was delivered.
     */
    private static TransportStats replayInto(WireSecurity mode, RunNonce run2, List<byte[]> recorded, long messageBytes)
            throws Exception {
        LoopbackNetwork net = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 2);
        LoopbackNetwork.Endpoint e0 = net.newEndpoint();
        LoopbackNetwork.Endpoint attacker = net.newEndpoint(); // rank 1's address, before rank 1 is back
        try (ReliableTransport r0 = new ReliableTransport(config(0, mode, run2, NanoClock.SYSTEM), book(e0, attacker), e0).start()) {
            MemorySegment got = Arena.ofAuto().allocate(messageBytes);
            CompletableFuture<Void> in = r0.expect(1, new MessageId(JOB, 5, 0), got);
            MemorySegment frame = Arena.ofAuto().allocate(4096);
            for (byte[] d : recorded) {
                MemorySegment.copy(d, 0, frame, ValueLayout.JAVA_BYTE, 0, d.length);
                attacker.send(frame, 0, d.length, e0.localPeer());
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (r0.stats().packetsReceived() < recorded.size() && System.nanoTime() < deadline) Thread.sleep(5);
            Thread.sleep(100);
            lastDelivered = in.isDone() && !in.isCompletedExceptionally();
            lastUntouched = got.mismatch(Arena.ofAuto().allocate(messageBytes)) == -1;
            return r0.stats();
        }
    }

    private static boolean lastDelivered;
    private static boolean lastUntouched;

    @ParameterizedTest
    @EnumSource(value = WireSecurity.class, names = {"MAC", "ENCRYPT"})
    void datagramsOfAnEarlierRunAreRefusedAfterARestart(WireSecurity mode) throws Exception {
        MemorySegment message = pattern(3 * PAYLOAD, 1);
        RunNonce run1 = RunNonce.generate();
        List<byte[]> recorded = recordRun(mode, run1, message);

        TransportStats stats = replayInto(mode, RunNonce.generate(), recorded, message.byteSize());
        assertEquals(recorded.size(), stats.packetsReceived());
        assertEquals(recorded.size(), stats.authFailures(), "every replayed datagram fails authentication, counted");
        assertEquals(0, stats.messagesReceived());
        assertFalse(lastDelivered, "the replayed message must not be delivered");
        assertTrue(lastUntouched, "no replayed byte reaches the receive buffer");

        // The control: keys that do not change between runs (a restart under the same keys, as before run nonces)
        // accept the very same recording. This is what the run nonce prevents.
        TransportStats sameKeys = replayInto(mode, run1, recorded, message.byteSize());
        assertEquals(0, sameKeys.authFailures());
        assertTrue(lastDelivered, "under unchanged keys the recording is accepted");
    }

    /**
     * Two runs with the same secret and even the same run nonce (the worst case: keys that repeat), the second with
     * its clock set back far before the first's, and both runs' transports made within one millisecond of wall-clock
     * time: every (src, dst, sequence) triple, the AES-GCM nonce, is still new. Sequence numbers start at a random
     * salt; a start read from any clock (the transport's or the wall clock) would repeat here.
     */
    @Test
    void gcmNoncesNeverRepeatAcrossRunsWithTheClockSetBack() throws Exception {
        RunNonce run = RunNonce.generate();
        long base = System.nanoTime();
        NanoClock ahead = () -> System.nanoTime() - base + 1_000_000_000_000L; // run 1's clock at ~1000 s
        NanoClock setBack = () -> System.nanoTime() - base;                     // run 2's: set back to ~0 s
        for (int attempt = 0; ; attempt++) {
            long before = System.currentTimeMillis();
            Run run1 = new Run(run, ahead);
            Run run2 = new Run(run, setBack);
            boolean sameMillisecond = System.currentTimeMillis() == before;
            if (!sameMillisecond && attempt < 50) {
                run1.close();
                run2.close();
                continue;
            }
            Set<String> first = run1.exchange();
            Set<String> second = run2.exchange();
            assertTrue(first.size() > 10 && second.size() > 10, first.size() + " and " + second.size() + " nonces");
            Set<String> both = new HashSet<>(first);
            both.retainAll(second);
            assertEquals(Set.of(), both, "AES-GCM nonces used in both runs");
            return;
        }
    }

    /** Two encrypt transports of one run on their own network, each recording what it sends. */
    private static final class Run implements AutoCloseable {
        final RecordingPort p0, p1;
        final ReliableTransport r0, r1;

        Run(RunNonce run, NanoClock clock) {
            LoopbackNetwork net = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 3);
            LoopbackNetwork.Endpoint e0 = net.newEndpoint();
            LoopbackNetwork.Endpoint e1 = net.newEndpoint();
            p0 = new RecordingPort(e0);
            p1 = new RecordingPort(e1);
            r0 = new ReliableTransport(config(0, WireSecurity.ENCRYPT, run, clock), book(e0, e1), p0);
            r1 = new ReliableTransport(config(1, WireSecurity.ENCRYPT, run, clock), book(e0, e1), p1);
        }

        /** Exchanges a few messages both ways; returns every (src, dst, seq) nonce both ranks sealed. */
        Set<String> exchange() throws Exception {
            try (this) {
                r0.start();
                r1.start();
                for (int step = 0; step < 4; step++) {
                    MemorySegment m = pattern(5 * PAYLOAD, step);
                    CompletableFuture<Void> a = r0.expect(1, new MessageId(JOB, step, 0), Arena.ofAuto().allocate(m.byteSize()));
                    CompletableFuture<Void> b = r1.expect(0, new MessageId(JOB, step, 0), Arena.ofAuto().allocate(m.byteSize()));
                    r0.send(1, new MessageId(JOB, step, 0), m);
                    r1.send(0, new MessageId(JOB, step, 0), m);
                    CompletableFuture.allOf(a, b).get(10, TimeUnit.SECONDS);
                }
            }
            Set<String> nonces = new HashSet<>();
            List<byte[]> all = new ArrayList<>(p0.sent());
            all.addAll(p1.sent());
            for (byte[] d : all) {
                MemorySegment s = MemorySegment.ofArray(d);
                XafHeader h = new XafHeader().wrap(s, 0);
                long seq = s.get(BE_LONG, d.length - WireSeal.SEQUENCE_BYTES);
                assertTrue(seq >= 0, "sequence numbers stay below 2^63");
                assertTrue(nonces.add(h.srcRank() + ">" + h.dstRank() + "#" + seq), "a nonce repeated within one run");
            }
            return nonces;
        }

        @Override
        public void close() {
            r0.close();
            r1.close();
        }
    }

    /** The keys depend on every input: another run nonce, job id or secret opens nothing of this run. */
    @ParameterizedTest
    @EnumSource(value = WireSecurity.class, names = {"MAC", "ENCRYPT"})
    void keysAreBoundToSecretJobAndRun(WireSecurity mode) {
        RunNonce run = RunNonce.generate();
        WireSeal sender = WireSeal.of(mode, SECRET, JOB, run, 2048);
        assertEquals(WireSeal.OPENED, open(WireSeal.of(mode, SECRET, JOB, run, 2048), sender));
        assertEquals(WireSeal.AUTH_FAILED, open(WireSeal.of(mode, SECRET, JOB, RunNonce.generate(), 2048), sender));
        assertEquals(WireSeal.AUTH_FAILED, open(WireSeal.of(mode, SECRET, JOB + 1, run, 2048), sender));
        assertEquals(WireSeal.AUTH_FAILED, open(WireSeal.of(mode, JobSecret.of(filled(32, 8)), JOB, run, 2048), sender));
        assertNotEquals(run, RunNonce.generate());
    }

    private static long sequence = 77;

    private static int open(WireSeal receiver, WireSeal sender) {
        MemorySegment d = Arena.ofAuto().allocate(2048);
        MemorySegment.copy(pattern(64, 3), 0, d, XafHeader.LENGTH, 64);
        new XafHeader().wrap(d, 0).init().type(1).flags(sender.flags()).networkId(10).jobId(JOB).jobToken(TOKEN)
                .srcRank(1).dstRank(0).step(1).bucketId(0).chunkIndex(0).chunkCount(1)
                .payloadLength(64 + sender.trailerLength());
        sender.seal(d, 64, sequence++); // GCM refuses to encrypt twice under one nonce
        return receiver.open(d, 0, 64 + sender.trailerLength());
    }

    @Test
    void runNonceOfContributionsDependsOnEachAndOnTheJob() {
        byte[] a = RunNonce.randomBytes(), b = RunNonce.randomBytes();
        RunNonce n = RunNonce.combine(JOB, List.of(a, b));
        assertEquals(n, RunNonce.combine(JOB, List.of(a.clone(), b.clone())));
        assertNotEquals(n, RunNonce.combine(JOB, List.of(a, RunNonce.randomBytes())));
        assertNotEquals(n, RunNonce.combine(JOB, List.of(b, a)));
        assertNotEquals(n, RunNonce.combine(JOB + 1, List.of(a, b)));
        assertEquals(n, RunNonce.parse(n.hex()));
    }
}
