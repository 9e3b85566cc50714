package io.xaforward.transport;

import io.xaforward.protocol.FrameParser;
import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.ParsedFrame;
import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An attacker who knows the job id and token (they travel in clear) sits on the network as a raw endpoint and
 * forges or replays datagrams; the transport must never let them complete a send, write into a receive, lock a
 * message's geometry, or reuse a finished message id.
 */
class WireSecurityTest {
    /** The run every transport and seal of this test belongs to. */
    private static final RunNonce RUN = RunNonce.generate();
    private static final int JOB = 42;
    private static final int TOKEN = 0x5EC12E7;
    private static final JobSecret SECRET = JobSecret.of(filled(32, 7));
    private static final JobSecret ATTACKER_GUESS = JobSecret.of(filled(32, 9));

    /** An authenticated mode refuses to run without its keys, wherever it is configured. */
    @Test
    void keys() {
        WireSecurity.CRC32C.requireKeys(null, null);
        for (WireSecurity m : new WireSecurity[]{WireSecurity.MAC, WireSecurity.ENCRYPT}) {
            m.requireKeys(SECRET, RUN);
            var noSecret = assertThrows(IllegalArgumentException.class, () -> m.requireKeys(null, RUN));
            assertEquals("wire security " + m.configName() + " needs the job secret", noSecret.getMessage());
            var noRun = assertThrows(IllegalArgumentException.class,
                    () -> WireSeal.of(m, SECRET, JOB, null, 1500));
            assertEquals("wire security " + m.configName() + " needs the run nonce", noRun.getMessage());
            assertThrows(IllegalArgumentException.class,
                    () -> TransportConfig.builder(0, JOB, 7).wireSecurity(m, null, RUN));
        }
    }
    private static final int PAYLOAD = 256;

    private static byte[] filled(int n, int v) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) v);
        return b;
    }

    /** Rank 0 is a transport under test, rank 1 a raw endpoint the attacker (or the test) drives by hand. */
    private static final class Rig implements AutoCloseable {
        final LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        final LoopbackNetwork.Endpoint transportEnd = network.newEndpoint();
        final LoopbackNetwork.Endpoint raw = network.newEndpoint();
        final ReliableTransport transport;

        Rig(WireSecurity mode) {
            AddressBook book = AddressBook.builder().add(0, 10, transportEnd.localPeer()).add(1, 11, raw.localPeer())
                    .build();
            transport = new ReliableTransport(TransportConfig.builder(0, JOB, TOKEN).maxPayload(PAYLOAD)
                    .wireSecurity(mode, SECRET, RUN).ackTimeout(Duration.ofSeconds(5)).build(), book, transportEnd).start();
        }

        /**
         * Sends a datagram from rank 1 to rank 0 sealed by {@code seal} (the attacker's idea of the job's seal);
         * returns it as sent.
         */
        MemorySegment inject(WireSeal seal, int type, int step, int bucket, int index, int count, MemorySegment data,
                             long seq) {
            MemorySegment frame = Arena.ofAuto().allocate(XafHeader.LENGTH + data.byteSize() + WireSeal.TRAILER_BYTES);
            MemorySegment.copy(data, 0, frame, XafHeader.LENGTH, data.byteSize());
            header(frame, seal, type, step, bucket, index, count, (int) data.byteSize());
            seal.seal(frame, (int) data.byteSize(), seq);
            raw.send(frame, 0, XafHeader.LENGTH + (int) data.byteSize() + seal.trailerLength(),
                    transportEnd.localPeer());
            return frame;
        }

        /** Sends a captured datagram again, byte for byte. */
        void replay(MemorySegment captured) {
            raw.send(captured, 0, (int) captured.byteSize(), transportEnd.localPeer());
        }

        @Override
        public void close() {
            transport.close();
            raw.close();
        }
    }

    static void header(MemorySegment frame, WireSeal seal, int type, int step, int bucket, int index, int count,
                       int dataLength) {
        new XafHeader().wrap(frame, 0).init().type(type).flags(seal.flags()).networkId(10).jobId(JOB)
                .jobToken(TOKEN).srcRank(1).dstRank(0).step(step).bucketId(bucket).chunkIndex(index)
                .chunkCount(count).payloadLength(dataLength + seal.trailerLength());
    }

    static MemorySegment ackPayload(int cumulative, int count) {
        MemorySegment ack = Arena.ofAuto().allocate(AckPayload.FIXED_LENGTH);
        AckPayload.writeFixed(ack, 0, cumulative, count, count, 0);
        return ack;
    }

    static MemorySegment pattern(int bytes, int seed) {
        MemorySegment s = Arena.ofAuto().allocate(bytes);
        for (int i = 0; i < bytes; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed));
        }
        return s;
    }

    private static void awaitCount(java.util.function.LongSupplier counter, long atLeast) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (counter.getAsLong() < atLeast && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
    }

    @Test
    void forgedAckWithTheRightTokenCannotCompleteASendInCrcMode() throws Exception {
        try (Rig rig = new Rig(WireSecurity.CRC32C)) {
            int chunks = 1000; // more than the 256-chunk window: most chunks are not sent yet
            CompletableFuture<Void> send = rig.transport.send(1, new MessageId(JOB, 3, 4),
                    pattern(chunks * PAYLOAD, 1));
            Thread.sleep(50);
            rig.inject(WireSeal.of(WireSecurity.CRC32C, null, JOB, RUN, 2048), 2, 3, 4, chunks, chunks,
                    ackPayload(chunks, chunks), 0);
            awaitCount(() -> rig.transport.stats().invalidAckDrops(), 1);
            assertEquals(1, rig.transport.stats().invalidAckDrops(), "an ACK of chunks never sent is refused");
            assertThrows(TimeoutException.class, () -> send.get(300, TimeUnit.MILLISECONDS));
        }
    }

    @Test
    void forgedAckWithoutTheSecretIsRefusedInMacMode() throws Exception {
        try (Rig rig = new Rig(WireSecurity.MAC)) {
            CompletableFuture<Void> send = rig.transport.send(1, new MessageId(JOB, 3, 4), pattern(PAYLOAD, 1));
            Thread.sleep(50); // the one chunk went out: an ACK of it would be plausible, but not authentic
            rig.inject(WireSeal.of(WireSecurity.MAC, ATTACKER_GUESS, JOB, RUN, 2048), 2, 3, 4, 1, 1, ackPayload(1, 1), 1);
            rig.inject(WireSeal.of(WireSecurity.CRC32C, null, JOB, RUN, 2048), 2, 3, 4, 1, 1, ackPayload(1, 1), 1);
            awaitCount(() -> rig.transport.stats().authFailures(), 2);
            assertEquals(2, rig.transport.stats().authFailures());
            assertThrows(TimeoutException.class, () -> send.get(300, TimeUnit.MILLISECONDS));
        }
    }

    @ParameterizedTest
    @EnumSource(value = WireSecurity.class, names = {"MAC", "ENCRYPT"})
    void forgedDataChunkIsNotDelivered(WireSecurity mode) throws Exception {
        try (Rig rig = new Rig(mode)) {
            int dataBytes = PAYLOAD - WireSeal.TRAILER_BYTES;
            MemorySegment dest = Arena.ofAuto().allocate(dataBytes);
            CompletableFuture<Void> expect = rig.transport.expect(1, new MessageId(JOB, 5, 0), dest);
            Thread.sleep(20);
            MemorySegment evil = pattern(dataBytes, 66);
            rig.inject(WireSeal.of(mode, ATTACKER_GUESS, JOB, RUN, 2048), 1, 5, 0, 0, 1, evil, 1);
            awaitCount(() -> rig.transport.stats().authFailures(), 1);
            assertEquals(1, rig.transport.stats().authFailures());
            assertFalse(expect.isDone(), "the forged chunk completed the receive");
            MemorySegment real = pattern(dataBytes, 3);
            rig.inject(WireSeal.of(mode, SECRET, JOB, RUN, 2048), 1, 5, 0, 0, 1, real, 1);
            expect.get(5, TimeUnit.SECONDS);
            assertArrayEquals(real.toArray(ValueLayout.JAVA_BYTE), dest.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void forgedFirstChunkCannotLockTheGeometry() throws Exception {
        // crc32c mode, the weakest: the forged chunk has a valid CRC and the right token.
        try (TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 1, b -> b.maxPayload(PAYLOAD))) {
            MemorySegment data = pattern(3 * PAYLOAD, 5);
            MemorySegment dest = Arena.ofAuto().allocate(data.byteSize());
            MessageId id = TransportPair.id(8, 1);
            CompletableFuture<Void> expect = pair.rank1.expect(0, id, dest);
            Thread.sleep(20);
            // A "first chunk" claiming 6 chunks of 128 bytes: a geometry under which no real chunk would fit.
            // sent from rank 0's own address (a spoofed source), so that the address check lets it through
            LoopbackNetwork.Endpoint attacker = pair.endpoint0;
            WireSeal seal = WireSeal.of(WireSecurity.CRC32C, null, JOB, RUN, 2048);
            MemorySegment frame = Arena.ofAuto().allocate(XafHeader.LENGTH + 128);
            new XafHeader().wrap(frame, 0).init().type(1).flags(seal.flags()).networkId(0x0A000001)
                    .jobId(TransportPair.JOB).jobToken(TransportPair.TOKEN).srcRank(0).dstRank(1).step(8)
                    .bucketId(1).chunkIndex(0).chunkCount(6).payloadLength(128);
            seal.seal(frame, 128, 0);
            attacker.send(frame, 0, (int) frame.byteSize(), addressOf(pair, 1));
            awaitCount(() -> pair.rank1.stats().malformedDrops(), 1);
            assertEquals(1, pair.rank1.stats().malformedDrops());
            pair.rank0.send(1, id, data).get(5, TimeUnit.SECONDS);
            expect.get(5, TimeUnit.SECONDS);
            assertArrayEquals(data.toArray(ValueLayout.JAVA_BYTE), dest.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    private static Peer addressOf(TransportPair pair, int rank) {
        return new LoopbackNetwork.Address(rank); // endpoints 0 and 1 were created for ranks 0 and 1
    }

    @Test
    void reusingAMessageIdIsAnError() throws Exception {
        try (TransportPair pair = new TransportPair(LoopbackNetwork.Impairments.NONE, 1,
                b -> b.wireSecurity(WireSecurity.MAC, SECRET, RUN))) {
            MessageId id = TransportPair.id(1, 1);
            MemorySegment dest = Arena.ofAuto().allocate(4000);
            CompletableFuture<Void> first = pair.rank1.expect(0, id, dest);
            pair.rank0.send(1, id, pattern(4000, 1)).get(5, TimeUnit.SECONDS);
            first.get(5, TimeUnit.SECONDS);
            ExecutionException send = assertThrows(ExecutionException.class,
                    () -> pair.rank0.send(1, id, pattern(4000, 2)).get(5, TimeUnit.SECONDS));
            assertInstanceOf(IllegalStateException.class, send.getCause());
            assertEquals("message (step 1, bucket 1) was already sent to rank 1: message ids must not be reused",
                    send.getCause().getMessage());
            ExecutionException expect = assertThrows(ExecutionException.class,
                    () -> pair.rank1.expect(0, id, dest).get(5, TimeUnit.SECONDS));
            assertEquals("message (step 1, bucket 1) was already received from rank 0: message ids must not be "
                    + "reused", expect.getCause().getMessage());
            assertArrayEquals(pattern(4000, 1).toArray(ValueLayout.JAVA_BYTE), dest.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void replayedAuthenticDatagramIsDropped() throws Exception {
        try (Rig rig = new Rig(WireSecurity.MAC)) {
            int dataBytes = PAYLOAD - WireSeal.TRAILER_BYTES;
            MemorySegment dest = Arena.ofAuto().allocate(2 * dataBytes);
            CompletableFuture<Void> expect = rig.transport.expect(1, new MessageId(JOB, 9, 0), dest);
            Thread.sleep(20);
            WireSeal genuine = WireSeal.of(WireSecurity.MAC, SECRET, JOB, RUN, 2048);
            MemorySegment chunk0 = pattern(dataBytes, 1);
            MemorySegment captured = rig.inject(genuine, 1, 9, 0, 0, 2, chunk0, 100);
            rig.replay(captured); // the same datagram again, as captured
            awaitCount(() -> rig.transport.stats().replayDrops(), 1);
            assertEquals(1, rig.transport.stats().replayDrops());
            assertEquals(0, rig.transport.stats().duplicatesDropped(), "the replay never reached the receive logic");
            rig.inject(genuine, 1, 9, 0, 1, 2, pattern(dataBytes, 2), 101);
            expect.get(5, TimeUnit.SECONDS);
        }
    }

    /**
     * PROTOCOL.md's definitions, computed here straight from javax.crypto and HKDF by hand: mac's tag is AES-256-GMAC
     * (GCM with no plaintext) under K_mac over H || data || seq; encrypt's payload is AES-256-GCM under K_enc with H
     * as associated data. Both nonces are src_rank || dst_rank || seq. Holds for either library.
     */
    @ParameterizedTest
    @EnumSource(AeadEngine.Library.class)
    void wireBytesAreTheSpecifiedGcm(AeadEngine.Library library) throws Exception {
        for (WireSecurity mode : new WireSecurity[] {WireSecurity.MAC, WireSecurity.ENCRYPT}) {
            long seq = 0x0102030405060708L;
            byte[] plain = pattern(64, 4).toArray(ValueLayout.JAVA_BYTE);
            MemorySegment d = Arena.ofAuto().allocate(2048);
            try (WireSeal seal = WireSeal.of(mode, SECRET, JOB, RUN, 2048, library)) {
                MemorySegment.copy(plain, 0, d, ValueLayout.JAVA_BYTE, XafHeader.LENGTH, 64);
                header(d, seal, 1, 77, 3, 5, 9, 64);
                seal.seal(d, 64, seq);
            }
            byte[] bytes = d.toArray(ValueLayout.JAVA_BYTE);
            // K = HKDF-SHA256(salt = run nonce, IKM = secret, info = label || job (u32 BE), 32): one block,
            // PRK = HMAC(run nonce, secret), K = HMAC(PRK, info || 0x01).
            String label = mode == WireSecurity.MAC ? "xaf wire v3 aes-256-gmac" : "xaf wire v2 aes-256-gcm";
            javax.crypto.Mac kdf = javax.crypto.Mac.getInstance("HmacSHA256");
            kdf.init(new javax.crypto.spec.SecretKeySpec(RUN.bytes(), "HmacSHA256"));
            byte[] prk = kdf.doFinal(SECRET.bytes());
            kdf.init(new javax.crypto.spec.SecretKeySpec(prk, "HmacSHA256"));
            kdf.update(label.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            kdf.update(new byte[] {0, 0, 0, (byte) JOB, 1});
            byte[] key = kdf.doFinal();
            byte[] nonce = new byte[12];
            System.arraycopy(bytes, XafHeader.SRC_RANK_OFFSET, nonce, 0, 4);
            System.arraycopy(bytes, XafHeader.LENGTH + 64 + WireSeal.TAG_BYTES, nonce, 4, 8);
            assertEquals(seq, java.nio.ByteBuffer.wrap(nonce, 4, 8).getLong(), "seq follows the tag");
            javax.crypto.Cipher gcm = javax.crypto.Cipher.getInstance("AES/GCM/NoPadding");
            gcm.init(javax.crypto.Cipher.ENCRYPT_MODE, new javax.crypto.spec.SecretKeySpec(key, "AES"),
                    new javax.crypto.spec.GCMParameterSpec(128, nonce));
            byte[] h = Arrays.copyOf(bytes, XafHeader.CHECKED_HEADER_LENGTH);
            h[XafHeader.HOP_LIMIT_OFFSET] = 0;
            gcm.updateAAD(h);
            byte[] expected;
            if (mode == WireSecurity.MAC) {
                gcm.updateAAD(plain);
                gcm.updateAAD(bytes, XafHeader.LENGTH + 64 + WireSeal.TAG_BYTES, WireSeal.SEQUENCE_BYTES);
                byte[] tag = gcm.doFinal();
                expected = new byte[64 + WireSeal.TAG_BYTES];
                System.arraycopy(plain, 0, expected, 0, 64);
                System.arraycopy(tag, 0, expected, 64, WireSeal.TAG_BYTES);
            } else {
                expected = gcm.doFinal(plain);
            }
            assertArrayEquals(expected, Arrays.copyOfRange(bytes, XafHeader.LENGTH,
                    XafHeader.LENGTH + 64 + WireSeal.TAG_BYTES), mode + ": PROTOCOL.md's definition");
        }
    }

    @Test
    void replayWindowAcceptsReorderingButNotRepeats() {
        ReplayWindow w = new ReplayWindow();
        assertTrue(w.accept(1000));
        assertTrue(w.accept(1002));
        assertTrue(w.accept(1001));
        assertFalse(w.accept(1001));
        assertFalse(w.accept(1002));
        assertTrue(w.accept(1000 + ReplayWindow.MIN_SIZE + 5));
        assertFalse(w.accept(1003), "older than the window");
        assertTrue(w.accept(1000 + ReplayWindow.MIN_SIZE));
    }

    /** Every single-bit flip in the checked part of the header, in every mode, is caught by the receiver's seal. */
    @ParameterizedTest
    @EnumSource(WireSecurity.class)
    void everyHeaderBitFlipIsDetected(WireSecurity mode) {
        WireSeal sender = WireSeal.of(mode, SECRET, JOB, RUN, 2048);
        WireSeal receiver = WireSeal.of(mode, SECRET, JOB, RUN, 2048);
        MemorySegment datagram = sealedDatagram(sender);
        int payloadLength = 64 + sender.trailerLength();
        assertEquals(WireSeal.OPENED, receiver.open(datagram, 0, payloadLength));
        for (int bit = 0; bit < 8 * XafHeader.CHECKED_HEADER_LENGTH; bit++) {
            if (bit / 8 == XafHeader.HOP_LIMIT_OFFSET) {
                continue; // gateways decrement it
            }
            MemorySegment flipped = sealedDatagram(sender);
            flip(flipped, 0, bit);
            assertNotEquals(WireSeal.OPENED, receiver.open(flipped, 0, payloadLength), "bit " + bit);
        }
        MemorySegment hop = sealedDatagram(sender);
        hop.set(ValueLayout.JAVA_BYTE, XafHeader.HOP_LIMIT_OFFSET, (byte) 3);
        assertEquals(WireSeal.OPENED, receiver.open(hop, 0, payloadLength), "hop_limit is not covered");
    }

    /** The same inside a full frame of each network form, the ID form (no checksum of its own) included. */
    @ParameterizedTest
    @EnumSource(NetworkForm.class)
    void headerBitFlipInsideEachNetworkFormIsDetected(NetworkForm form) {
        WireSeal sender = WireSeal.of(WireSecurity.CRC32C, null, JOB, RUN, 2048);
        WireSeal receiver = WireSeal.of(WireSecurity.CRC32C, null, JOB, RUN, 2048);
        for (int field : new int[] {XafHeader.CHUNK_INDEX_OFFSET, XafHeader.STEP_OFFSET, XafHeader.BUCKET_ID_OFFSET,
                XafHeader.SRC_RANK_OFFSET, XafHeader.NETWORK_ID_OFFSET}) {
            int xaf = form.outerHeaderLength();
            MemorySegment frame = Arena.ofAuto().allocate(xaf + 2048);
            MemorySegment.copy(sealedDatagram(sender), 0, frame, xaf, XafHeader.LENGTH + 64);
            flip(frame, xaf, 8 * field + 7); // a gateway (or its memory) flips a bit, then builds the outer headers
            int length = new FrameWriter().encapsulate(frame, form, addressing(form));
            ParsedFrame parsed = new FrameParser().parse(frame, length);
            assertTrue(parsed.isXaf(), "the frame still parses: " + parsed);
            assertEquals(WireSeal.CRC_MISMATCH, receiver.open(frame, parsed.xafOffset(), parsed.payloadLength()),
                    form + " field at " + field);
        }
    }

    private static OuterAddressing addressing(NetworkForm form) {
        OuterAddressing a = new OuterAddressing().srcMac(0x020000000001L).dstMac(0x020000000002L)
                .srcPort(XafHeader.UDP_PORT).dstPort(XafHeader.UDP_PORT).srcId(1).dstId(2);
        return switch (form) {
            case IPV4 -> a.srcIpv4(0x0A000001).dstIpv4(0x0A000002);
            case IPV6 -> a.srcIp(filled(16, 1)).dstIp(filled(16, 2));
            default -> a;
        };
    }

    private static long nextSequence = 1;

    /** A fresh sequence number per datagram: AES-GCM refuses to encrypt twice under one nonce. */
    private static MemorySegment sealedDatagram(WireSeal seal) {
        long seq = nextSequence++;
        MemorySegment d = Arena.ofAuto().allocate(2048);
        MemorySegment.copy(pattern(64, 4), 0, d, XafHeader.LENGTH, 64);
        header(d, seal, 1, 77, 3, 5, 9, 64);
        seal.seal(d, 64, seq);
        return d;
    }

    private static void flip(MemorySegment s, long base, int bit) {
        long at = base + bit / 8;
        s.set(ValueLayout.JAVA_BYTE, at, (byte) (s.get(ValueLayout.JAVA_BYTE, at) ^ (1 << (bit % 8))));
    }
}
