package io.xaforward.transport;

import io.xaforward.protocol.MessageType;
import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The start-up exchange (docs/PROTOCOL.md "Start-up exchange"): a fresh challenge per exchange, answered
 * authenticated, so that nothing recorded in an earlier exchange (whatever its sequence number) keeps a restarted
 * rank from completing the next one, and no old or forged answer counts as a peer's presence.
 */
class StartupExchangeTest {
    private static final int JOB = 21, TOKEN = 0x2121;
    private static final JobSecret SECRET = JobSecret.of(filled(32, 9));
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private static byte[] filled(int n, int v) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) v);
        return b;
    }

    private final LoopbackNetwork net = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 3);
    private final List<LoopbackNetwork.Endpoint> ports = new ArrayList<>();
    private final AddressBook book;

    StartupExchangeTest() {
        AddressBook.Builder b = AddressBook.builder();
        for (int r = 0; r < 3; r++) {
            ports.add(net.newEndpoint());
            b.add(r, 0x0B000000 + r, ports.get(r).localPeer());
        }
        book = b.build();
    }

    /** A datagram an attacker on the path recorded: its bytes, who sent it and to whom. */
    private record Recorded(byte[] bytes, int from, Peer to) {}

    /** A port lent to one exchange that records what it sends. */
    private record Recording(LoopbackNetwork.Endpoint inner, int rank, List<Recorded> log) implements DatagramPort {
        @Override public int maxDatagramLength() { return inner.maxDatagramLength(); }
        @Override public boolean send(MemorySegment b, long off, int len, Peer to) {
            synchronized (log) { log.add(new Recorded(b.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE), rank, to)); }
            return inner.send(b, off, len, to);
        }
        @Override public int poll(DatagramHandler h, int limit) { return inner.poll(h, limit); }
        @Override public boolean receivedFrom(Peer p) { return inner.receivedFrom(p); }
        @Override public Peer localPeer() { return inner.localPeer(); }
        @Override public void close() { }
    }

    private StartupExchange exchange(int rank, int world, DatagramPort port) {
        return new StartupExchange(rank, world, JOB, TOKEN, WireSecurity.MAC, SECRET, book, port, RunNonce.randomBytes());
    }

    /** Runs {@code exchanges} at once, one thread each; returns their run nonces. */
    private static List<RunNonce> runAll(List<StartupExchange> exchanges) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(exchanges.size());
        try {
            List<Future<RunNonce>> f = new ArrayList<>();
            for (StartupExchange e : exchanges) f.add(pool.submit(() -> e.run(TIMEOUT)));
            List<RunNonce> nonces = new ArrayList<>();
            for (Future<RunNonce> x : f) nonces.add(x.get(60, TimeUnit.SECONDS));
            return nonces;
        } finally {
            pool.shutdownNow();
        }
    }

    private void inject(byte[] datagram, int from, Peer to) {
        MemorySegment frame = Arena.ofAuto().allocate(datagram.length);
        MemorySegment.copy(datagram, 0, frame, ValueLayout.JAVA_BYTE, 0, datagram.length);
        assertTrue(ports.get(from).send(frame, 0, datagram.length, to));
    }

    @Test
    void everyRankAgreesOnTheChallengesAndEveryExchangeIsNew() throws Exception {
        List<RunNonce> first = runAll(List.of(exchange(0, 3, ports.get(0)), exchange(1, 3, ports.get(1)),
                exchange(2, 3, ports.get(2))));
        assertEquals(List.of(first.get(0), first.get(0), first.get(0)), first, "one nonce for the whole run");
        List<StartupExchange> again = List.of(exchange(0, 3, ports.get(0)), exchange(1, 3, ports.get(1)),
                exchange(2, 3, ports.get(2)));
        List<RunNonce> second = runAll(again);
        assertEquals(List.of(second.get(0), second.get(0), second.get(0)), second);
        assertNotEquals(first.get(0), second.get(0), "a restarted job is a new run");
        for (int r = 0; r < 3; r++) {
            for (int p = 0; p < 3; p++) {
                if (p != r) assertTrue(again.get(r).confirmedMe(p), "rank " + p + " told rank " + r + " it confirmed"
                        + " it: on a lossless network nobody is left lingering");
            }
        }
    }

    /** Lost, duplicated, reordered and corrupted datagrams: resends and answers still bring every rank through. */
    @Test
    void aLossyNetworkDelaysButDoesNotBreakTheExchange() throws Exception {
        LoopbackNetwork lossy = new LoopbackNetwork(new LoopbackNetwork.Impairments(0.3, 0.1, 0.2, 0.05), 11);
        AddressBook.Builder b = AddressBook.builder();
        List<LoopbackNetwork.Endpoint> eps = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            eps.add(lossy.newEndpoint());
            b.add(r, 0x0C000000 + r, eps.get(r).localPeer());
        }
        AddressBook lossyBook = b.build();
        List<StartupExchange> all = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            all.add(new StartupExchange(r, 4, JOB, TOKEN, WireSecurity.MAC, SECRET, lossyBook, eps.get(r),
                    RunNonce.randomBytes()));
        }
        List<RunNonce> nonces = runAll(all);
        assertEquals(List.of(nonces.get(0), nonces.get(0), nonces.get(0), nonces.get(0)), nonces);
        assertTrue(lossy.lost() > 0, "the network did lose datagrams");
    }

    /**
     * The start-up key is the same in every exchange of a job, and mac is GMAC: a nonce (src, dst, seq) used in one
     * exchange must not come back in the next, or two tags under one nonce give the authentication key away. Each
     * exchange's counter starts at a fresh random salt, so the nonces of two exchanges between the same ranks are
     * disjoint (counting from 0 they were the same).
     */
    @Test
    void twoExchangesNeverSealUnderTheSameNonce() throws Exception {
        List<Recorded> first = new ArrayList<>(), second = new ArrayList<>();
        runAll(List.of(exchange(0, 2, new Recording(ports.get(0), 0, first)),
                exchange(1, 2, new Recording(ports.get(1), 1, first))));
        runAll(List.of(exchange(0, 2, new Recording(ports.get(0), 0, second)),
                exchange(1, 2, new Recording(ports.get(1), 1, second))));
        java.util.Set<String> nonces = new java.util.HashSet<>();
        for (Recorded r : first) assertTrue(nonces.add(nonce(r.bytes())), "a nonce repeated within an exchange");
        for (Recorded r : second) {
            assertFalse(nonces.contains(nonce(r.bytes())), "the second exchange reused a nonce of the first");
        }
        assertFalse(first.isEmpty() || second.isEmpty());
    }

    /** src_rank, dst_rank and the trailer's sequence number of a sealed start-up datagram: its GCM nonce. */
    private static String nonce(byte[] d) {
        XafHeader h = new XafHeader().wrap(MemorySegment.ofArray(d), 0);
        long seq = MemorySegment.ofArray(d).get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN),
                d.length - WireSeal.SEQUENCE_BYTES);
        return h.srcRank() + ">" + h.dstRank() + "#" + seq;
    }

    /**
     * What broke restarts: a start-up datagram of an earlier exchange with a high sequence number, replayed into a
     * restarted rank before its peer's first datagram, used to pin the replay window of the (per-job) start-up key
     * so that the real peer's datagrams looked old. Here every datagram of the earlier exchange, one sealed at the
     * top of the sequence range and one of the earlier transport-based exchange (DATA under the start-up key), is
     * waiting in both ranks' queues when they restart: the exchange still completes, on a new nonce, and the old
     * answers are refused.
     */
    @Test
    void replayedOldStartupDatagramsWithHighSequenceNumbersDoNotStopARestartedExchange() throws Exception {
        List<Recorded> log = new ArrayList<>();
        List<RunNonce> first = runAll(List.of(exchange(0, 2, new Recording(ports.get(0), 0, log)),
                exchange(1, 2, new Recording(ports.get(1), 1, log))));
        assertEquals(first.get(0), first.get(1));
        assertFalse(log.isEmpty());

        List<byte[]> high = new ArrayList<>();
        for (Recorded r : log) {
            high.add(resealed(r.bytes(), (1L << 62) - 1)); // the same hello at the top of the sequence range
        }
        high.add(startupKeyData(1, 0, (1L << 62) - 1));
        high.add(startupKeyData(0, 1, (1L << 62) - 1));
        for (Recorded r : log) inject(r.bytes(), r.from(), r.to());
        for (byte[] d : high) {
            int src = new XafHeader().wrap(MemorySegment.ofArray(d), 0).srcRank();
            inject(d, src, ports.get(1 - src).localPeer());
        }

        StartupExchange e0 = exchange(0, 2, ports.get(0)), e1 = exchange(1, 2, ports.get(1));
        List<RunNonce> second = runAll(List.of(e0, e1));
        assertEquals(second.get(0), second.get(1), "the restarted ranks agree");
        assertNotEquals(first.get(0), second.get(0), "on a new run nonce");
        assertTrue(e0.staleEchoes() + e1.staleEchoes() > 0, "the old answers were seen and refused");
        assertEquals(0, e0.authFailures() + e1.authFailures(), "everything replayed carried a valid tag");
    }

    /**
     * A restarted rank 1, with a fresh challenge, gets rank 0's answers of the earlier exchange (authentic, but
     * echoing rank 1's old challenge), an answer that echoes the new challenge under another secret, and a recorded
     * answer edited to echo the new challenge: none counts rank 0 as present. Rank 0's real answer does.
     */
    @Test
    void anOldOrForgedAnswerToANewChallengeIsRefused() throws Exception {
        List<Recorded> log = new ArrayList<>();
        runAll(List.of(exchange(0, 2, new Recording(ports.get(0), 0, log)),
                exchange(1, 2, new Recording(ports.get(1), 1, log))));
        List<byte[]> oldAnswers = log.stream().filter(r -> r.from() == 0).map(Recorded::bytes).toList();
        assertFalse(oldAnswers.isEmpty());

        StartupExchange restarted = exchange(1, 2, ports.get(1));
        for (byte[] d : oldAnswers) inject(d, 0, ports.get(1).localPeer());
        drain(restarted);
        assertFalse(restarted.confirmed(0), "an old answer does not answer a new challenge");
        assertTrue(restarted.staleEchoes() >= 1, "counted: " + restarted.staleEchoes());

        // The new challenge is public (it travels in the clear): a forger echoes it, but cannot seal it.
        byte[] forged = hello(0, 1, RunNonce.randomBytes(), restarted.challenge(), true,
                WireSeal.of(WireSecurity.MAC, JobSecret.of(filled(32, 10)), JOB, RunNonce.STARTUP, 2048), 7);
        inject(forged, 0, ports.get(1).localPeer());
        byte[] edited = oldAnswers.getLast().clone();
        System.arraycopy(restarted.challenge(), 0, edited, XafHeader.LENGTH + 8 + RunNonce.LENGTH, RunNonce.LENGTH);
        inject(edited, 0, ports.get(1).localPeer());
        long before = restarted.authFailures();
        drain(restarted);
        assertFalse(restarted.confirmed(0), "a forged answer does not answer it either");
        assertEquals(before + 2, restarted.authFailures(), "both forgeries fail authentication");

        // Rank 0, restarted too, answers for real: now rank 1 counts it as present.
        StartupExchange peer = exchange(0, 2, ports.get(0));
        List<RunNonce> nonces = runAll(List.of(peer, restarted));
        assertTrue(restarted.confirmed(0));
        assertEquals(nonces.get(0), nonces.get(1));
    }

    /**
     * The start-up key does not depend on the run's mode, so hellos recorded while the job ran under {@code encrypt}
     * still authenticate when it restarts under {@code mac}. Replayed into both ranks before and while they start,
     * they used to end the exchange ("a peer runs wire security encrypt") before any real hello came: their mode is
     * now acted on only once a hello echoes this exchange's challenge, which none of them does. The start
     * completes, and the replays are counted.
     */
    @Test
    void replayedHellosOfAnEarlierExchangeUnderTheOtherModeDoNotStopTheStart() throws Exception {
        List<Recorded> log = new ArrayList<>();
        runAll(List.of(
                new StartupExchange(0, 2, JOB, TOKEN, WireSecurity.ENCRYPT, SECRET, book,
                        new Recording(ports.get(0), 0, log), RunNonce.randomBytes()),
                new StartupExchange(1, 2, JOB, TOKEN, WireSecurity.ENCRYPT, SECRET, book,
                        new Recording(ports.get(1), 1, log), RunNonce.randomBytes())));
        assertFalse(log.isEmpty());
        // Also one crafted with the job's start-up key, as the earlier exchange could have sent it: other mode,
        // a random echo, CONFIRMED set.
        byte[] crafted = hello(1, 0, RunNonce.randomBytes(), RunNonce.randomBytes(), true,
                WireSeal.of(WireSecurity.MAC, SECRET, JOB, RunNonce.STARTUP, 2048), 5, WireSecurity.ENCRYPT);
        for (Recorded r : log) inject(r.bytes(), r.from(), r.to());
        inject(crafted, 1, ports.get(0).localPeer());

        StartupExchange e0 = exchange(0, 2, ports.get(0)), e1 = exchange(1, 2, ports.get(1));
        // Both ranks read the replays before either has heard its peer: the old code failed here, on the first one.
        drain(e0);
        drain(e1);
        assertEquals(0, e0.modeMismatches() + e1.modeMismatches(), "no replay counts as a peer of another mode");
        assertTrue(e0.unprovenModeHellos() >= 2 && e1.unprovenModeHellos() >= 1,
                "the replays were seen and ignored: " + e0.unprovenModeHellos() + ", " + e1.unprovenModeHellos());
        // And while the exchange runs: the same datagrams again, interleaved with the real ones.
        for (Recorded r : log) inject(r.bytes(), r.from(), r.to());
        List<RunNonce> nonces = runAll(List.of(e0, e1));
        assertEquals(nonces.get(0), nonces.get(1), "the start completed");
        assertEquals(0, e0.authFailures() + e1.authFailures(), "every replay carried a valid tag");
        assertEquals(0, e0.modeMismatches() + e1.modeMismatches());
    }

    @Test
    void aPeerWithAnotherWireSecurityModeFailsTheExchangeNamingIt() throws Exception {
        StartupExchange mac = exchange(0, 2, ports.get(0));
        StartupExchange enc = new StartupExchange(1, 2, JOB, TOKEN, WireSecurity.ENCRYPT, SECRET, book, ports.get(1),
                RunNonce.randomBytes());
        Exception e = assertThrows(Exception.class, () -> runAll(List.of(mac, enc)));
        Throwable t = e;
        while (t.getCause() != null) t = t.getCause();
        assertTrue(t.getMessage().contains("--wire-security"), t.getMessage());
        assertTrue(t.getMessage().contains("a peer runs wire security"), t.getMessage());
        // A real peer of another mode echoes the challenge (it answers a hello of any mode), so it is told apart
        // from a replay: the mismatch comes from a hello bound to this exchange.
        assertTrue(mac.modeMismatches() + enc.modeMismatches() >= 1, "counted as a mismatch, not as replays");
    }

    @Test
    void aPeerThatNeverAnswersIsNamedWithTheAuthenticationFailures() {
        StartupExchange lonely = exchange(0, 2, ports.get(0));
        inject(hello(1, 0, RunNonce.randomBytes(), new byte[16], false,
                WireSeal.of(WireSecurity.MAC, JobSecret.of(filled(32, 10)), JOB, RunNonce.STARTUP, 2048), 1), 1,
                ports.get(0).localPeer());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> lonely.run(Duration.ofMillis(500)));
        assertTrue(e.getMessage().contains("rank [1] did not answer"), e.getMessage());
        assertTrue(e.getMessage().contains("1 datagrams failed authentication"), e.getMessage());
    }

    /**
     * The last hellos of an exchange can reach a rank after its run's transport took the port over: dropped there
     * before the seal is checked, and not counted as authentication failures of the run (which would read as a peer
     * with another secret).
     */
    @Test
    void lateHellosReachingTheRunsTransportAreNoAuthenticationFailures() throws Exception {
        TransportConfig config = TransportConfig.builder(0, JOB, TOKEN).maxPayload(512)
                .wireSecurity(WireSecurity.MAC, SECRET, RunNonce.generate()).build();
        try (ReliableTransport run = new ReliableTransport(config, book, ports.get(0)).start()) {
            WireSeal startupKey = WireSeal.of(WireSecurity.MAC, SECRET, JOB, RunNonce.STARTUP, 2048);
            for (int i = 0; i < 3; i++) {
                inject(hello(1, 0, RunNonce.randomBytes(), new byte[16], false, startupKey, i), 1,
                        ports.get(0).localPeer());
            }
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (run.stats().packetsReceived() < 3 && System.nanoTime() < until) Thread.sleep(5);
            assertEquals(3, run.stats().malformedDrops(), "dropped as traffic the transport never sends");
            assertEquals(0, run.stats().authFailures());
        }
    }

    /** Lets {@code e} handle everything queued for it. */
    private static void drain(StartupExchange e) {
        while (e.poll() > 0) { }
    }

    /** A hello as {@link StartupExchange} writes it, sealed by {@code seal} with {@code sequence}. */
    private byte[] hello(int from, int to, byte[] challenge, byte[] echo, boolean confirmed, WireSeal seal, long sequence) {
        return hello(from, to, challenge, echo, confirmed, seal, sequence, WireSecurity.MAC);
    }

    /** As above, saying that the sender runs {@code mode}. */
    private byte[] hello(int from, int to, byte[] challenge, byte[] echo, boolean confirmed, WireSeal seal, long sequence,
                         WireSecurity mode) {
        int dataLength = StartupExchange.DATA_LENGTH;
        MemorySegment d = Arena.ofAuto().allocate(XafHeader.LENGTH + dataLength + WireSeal.TRAILER_BYTES);
        new XafHeader().wrap(d, 0).init().type(MessageType.CONTROL.code()).flags(seal.flags())
                .networkId(book.networkId(to)).jobId(JOB).jobToken(TOKEN).srcRank(from).dstRank(to).chunkCount(1)
                .payloadLength(dataLength + WireSeal.TRAILER_BYTES);
        long at = XafHeader.LENGTH;
        d.set(ValueLayout.JAVA_BYTE, at, (byte) StartupExchange.KIND_HELLO);
        d.set(ValueLayout.JAVA_BYTE, at + 1, (byte) (confirmed ? StartupExchange.FLAG_CONFIRMED : 0));
        d.set(ValueLayout.JAVA_BYTE, at + 2, (byte) StartupExchange.modeCode(mode));
        MemorySegment.copy(challenge, 0, d, ValueLayout.JAVA_BYTE, at + 8, 16);
        MemorySegment.copy(echo, 0, d, ValueLayout.JAVA_BYTE, at + 24, 16);
        seal.seal(d, dataLength, sequence);
        return d.toArray(ValueLayout.JAVA_BYTE);
    }

    /** The recorded hello {@code d}, sealed again under the start-up key with another sequence number. */
    private static byte[] resealed(byte[] d, long sequence) {
        MemorySegment s = Arena.ofAuto().allocate(d.length);
        MemorySegment.copy(d, 0, s, ValueLayout.JAVA_BYTE, 0, d.length);
        WireSeal.of(WireSecurity.MAC, SECRET, JOB, RunNonce.STARTUP, 2048)
                .seal(s, StartupExchange.DATA_LENGTH, sequence);
        return s.toArray(ValueLayout.JAVA_BYTE);
    }

    /** A DATA datagram under the start-up key, as the transport-based exchange before this one sent them. */
    private byte[] startupKeyData(int from, int to, long sequence) {
        int dataLength = 64;
        MemorySegment d = Arena.ofAuto().allocate(XafHeader.LENGTH + dataLength + WireSeal.TRAILER_BYTES);
        WireSeal seal = WireSeal.of(WireSecurity.MAC, SECRET, JOB, RunNonce.STARTUP, 2048);
        new XafHeader().wrap(d, 0).init().type(MessageType.DATA.code()).flags(seal.flags())
                .networkId(book.networkId(to)).jobId(JOB).jobToken(TOKEN).srcRank(from).dstRank(to).chunkCount(1)
                .payloadLength(dataLength + WireSeal.TRAILER_BYTES);
        seal.seal(d, dataLength, sequence);
        return d.toArray(ValueLayout.JAVA_BYTE);
    }
}
