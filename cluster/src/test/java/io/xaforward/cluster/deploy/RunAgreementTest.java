package io.xaforward.cluster.deploy;

import io.xaforward.collective.CollectiveGroup;
import io.xaforward.transport.AddressBook;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.LoopbackNetwork;
import io.xaforward.transport.MessageId;
import io.xaforward.transport.ReliableTransport;
import io.xaforward.transport.RunNonce;
import io.xaforward.transport.TransportConfig;
import io.xaforward.transport.WireSecurity;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The start-up exchange of independently started workers: every rank of a run ends with the same run nonce, every
 * run (all ranks restarted, as {@code xaf launch --max-restarts} does) with a new one, and the port serves the
 * run's transport afterwards, under keys that refuse the earlier run's datagrams.
 */
class RunAgreementTest {
    private static final int JOB = 7, TOKEN = 0x77, WORLD = 3;
    private static final JobSecret SECRET = JobSecret.of(filled(32, 5));

    private static byte[] filled(int n, int v) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) v);
        return b;
    }

    private final LoopbackNetwork net = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
    private final List<LoopbackNetwork.Endpoint> ports = new ArrayList<>();
    private final AddressBook book;

    RunAgreementTest() {
        AddressBook.Builder b = AddressBook.builder();
        for (int r = 0; r < WORLD; r++) {
            ports.add(net.newEndpoint());
            b.add(r, 0x0A000000 + r, ports.get(r).localPeer());
        }
        book = b.build();
    }

    private static TransportConfig.Builder config(int rank) {
        return TransportConfig.builder(rank, JOB, TOKEN).maxPayload(512).ackTimeout(Duration.ofSeconds(10));
    }

    private static CollectiveGroup group(int rank) {
        return new CollectiveGroup(rank, WORLD, new int[] {0, 0, 1});
    }

    /** One run's start-up exchange on every rank at once, each with {@code secretOf(rank)}. */
    private List<RunNonce> agreeAll(java.util.function.IntFunction<JobSecret> secretOf) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(WORLD);
        try {
            List<Future<RunNonce>> f = new ArrayList<>();
            for (int r = 0; r < WORLD; r++) {
                int rank = r;
                f.add(pool.submit(() -> RunAgreement.agree(group(rank), () -> config(rank), WireSecurity.MAC,
                        secretOf.apply(rank), book, ports.get(rank), Duration.ofSeconds(3))));
            }
            List<RunNonce> nonces = new ArrayList<>();
            for (Future<RunNonce> x : f) nonces.add(x.get(30, TimeUnit.SECONDS));
            return nonces;
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void everyRankOfARunAgreesAndEveryRunIsNew() throws Exception {
        List<RunNonce> run1 = agreeAll(r -> SECRET);
        assertEquals(List.of(run1.get(0), run1.get(0), run1.get(0)), run1, "one nonce for the whole run");
        assertNotEquals(RunNonce.STARTUP, run1.get(0));

        // Run 1 trains a little: rank 1 sends a message to rank 0 under the run's keys, over the same ports.
        List<byte[]> recorded = new ArrayList<>();
        try (ReliableTransport r0 = new ReliableTransport(config(0).wireSecurity(WireSecurity.MAC, SECRET, run1.get(0))
                     .build(), book, new Borrow(ports.get(0), null)).start();
             ReliableTransport r1 = new ReliableTransport(config(1).wireSecurity(WireSecurity.MAC, SECRET, run1.get(1))
                     .build(), book, new Borrow(ports.get(1), recorded)).start()) {
            MemorySegment m = Arena.ofAuto().allocate(2000);
            for (int i = 0; i < 2000; i++) m.set(ValueLayout.JAVA_BYTE, i, (byte) i);
            MemorySegment got = Arena.ofAuto().allocate(2000);
            CompletableFuture<Void> in = r0.expect(1, new MessageId(JOB, 4, 0), got);
            r1.send(0, new MessageId(JOB, 4, 0), m).get(10, TimeUnit.SECONDS);
            in.get(10, TimeUnit.SECONDS);
            assertEquals(-1, got.mismatch(m));
        }

        // A rank fails; every rank restarts (xaf launch --max-restarts) and the exchange runs again: a new nonce.
        List<RunNonce> run2 = agreeAll(r -> SECRET);
        assertEquals(List.of(run2.get(0), run2.get(0), run2.get(0)), run2);
        assertNotEquals(run1.get(0), run2.get(0), "a restarted job is a new run");

        // Run 1's datagrams, replayed from rank 1's address into run 2's rank 0, are refused and counted.
        try (ReliableTransport r0 = new ReliableTransport(config(0).wireSecurity(WireSecurity.MAC, SECRET, run2.get(0))
                .build(), book, ports.get(0)).start()) {
            MemorySegment got = Arena.ofAuto().allocate(2000);
            CompletableFuture<Void> in = r0.expect(1, new MessageId(JOB, 4, 0), got);
            MemorySegment frame = Arena.ofAuto().allocate(4096);
            for (byte[] d : recorded) {
                MemorySegment.copy(d, 0, frame, ValueLayout.JAVA_BYTE, 0, d.length);
                ports.get(1).send(frame, 0, d.length, ports.get(0).localPeer());
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (r0.stats().authFailures() < recorded.size() && System.nanoTime() < deadline) Thread.sleep(5);
            assertTrue(recorded.size() > 0);
            assertEquals(recorded.size(), r0.stats().authFailures(), "every datagram of run 1 fails authentication");
            assertTrue(!in.isDone(), "nothing of run 1 is delivered in run 2");
        }
    }

    /**
     * A datagram of an earlier start-up exchange, sealed under the start-up key (the same in every run of the job)
     * with a sequence number at the top of the range, waits in every rank's queue when the job restarts: the old
     * exchange let it pin the start-up replay window, so every real datagram looked old and every restart timed out.
     * The challenge-based exchange ignores it and completes on a new nonce.
     */
    @Test
    void aReplayedStartupDatagramWithAHighSequenceNumberDoesNotStopARestart() throws Exception {
        List<RunNonce> run1 = agreeAll(r -> SECRET);
        for (int from = 0; from < WORLD; from++) {
            for (int to = 0; to < WORLD; to++) {
                if (from == to) continue;
                for (io.xaforward.protocol.MessageType type : List.of(io.xaforward.protocol.MessageType.DATA,
                        io.xaforward.protocol.MessageType.ACK, io.xaforward.protocol.MessageType.CONTROL)) {
                    MemorySegment d = startupKeyDatagram(type, from, to, (1L << 62) - 1);
                    ports.get(from).send(d, 0, (int) d.byteSize(), ports.get(to).localPeer());
                }
            }
        }
        List<RunNonce> run2 = agreeAll(r -> SECRET);
        assertEquals(List.of(run2.get(0), run2.get(0), run2.get(0)), run2, "the restarted ranks agree");
        assertNotEquals(run1.get(0), run2.get(0));
    }

    /** A datagram of {@code type} sealed under the start-up key with {@code sequence}, as a real exchange may send. */
    private static MemorySegment startupKeyDatagram(io.xaforward.protocol.MessageType type, int from, int to, long sequence) {
        int data = 48;
        io.xaforward.transport.WireSeal seal = io.xaforward.transport.WireSeal.of(WireSecurity.MAC, SECRET, JOB,
                RunNonce.STARTUP, 2048);
        MemorySegment d = Arena.ofAuto().allocate(io.xaforward.protocol.XafHeader.LENGTH + data
                + io.xaforward.transport.WireSeal.TRAILER_BYTES);
        new io.xaforward.protocol.XafHeader().wrap(d, 0).init().type(type.code()).flags(seal.flags())
                .networkId(0x0A000000 + to).jobId(JOB).jobToken(TOKEN).srcRank(from).dstRank(to)
                .step(0x7FFF_0100).chunkCount(1).payloadLength(data + io.xaforward.transport.WireSeal.TRAILER_BYTES);
        seal.seal(d, data, sequence);
        return d;
    }

    @Test
    void aRankWithAnotherSecretFailsTheExchangeNamingAuthentication() throws Exception {
        JobSecret other = JobSecret.of(filled(32, 6));
        Exception e = assertThrows(Exception.class, () -> agreeAll(r -> r == 2 ? other : SECRET));
        Throwable t = e;
        while (t.getCause() != null && !String.valueOf(t.getMessage()).contains("authentication")) t = t.getCause();
        assertTrue(String.valueOf(t.getMessage()).contains("failed authentication"), String.valueOf(t.getMessage()));
    }

    /** A port lent to one transport (closing it leaves the endpoint open), recording what it sends when asked. */
    private record Borrow(LoopbackNetwork.Endpoint port, List<byte[]> sent) implements io.xaforward.transport.DatagramPort {
        @Override public int maxDatagramLength() { return port.maxDatagramLength(); }
        @Override public boolean send(MemorySegment b, long off, int len, io.xaforward.transport.Peer to) {
            if (sent != null) synchronized (sent) { sent.add(b.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE)); }
            return port.send(b, off, len, to);
        }
        @Override public int poll(io.xaforward.transport.DatagramHandler h, int limit) { return port.poll(h, limit); }
        @Override public boolean receivedFrom(io.xaforward.transport.Peer p) { return port.receivedFrom(p); }
        @Override public io.xaforward.transport.Peer localPeer() { return port.localPeer(); }
        @Override public void close() { }
    }
}
