package io.xaforward.transport;

import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.HexFormat;
import java.util.zip.CRC32C;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The two AES-GCM libraries behind {@link WireSeal}: OpenSSL's libcrypto (through FFM) and the JDK (the fallback)
 * put the same bytes on the wire, each opens what the other sealed, both match a published test vector, and both
 * refuse tampered datagrams.
 */
class WireSealEnginesTest {
    private static final RunNonce RUN = RunNonce.generate();
    private static final JobSecret SECRET = JobSecret.generate();
    private static final int JOB = 42;
    /** A jumbo frame's datagram: the largest the transport seals. */
    private static final int MAX_DATAGRAM = 9000 - 40 - 8;
    private static final int MAX_DATA = MAX_DATAGRAM - XafHeader.LENGTH - WireSeal.TRAILER_BYTES;
    private static final int[] LENGTHS = {0, 1, 15, 16, 17, 255, 1327, 1328, 4099, MAX_DATA};
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /** libcrypto.so.3 ships with every Debian system: here the default must be OpenSSL, not the fallback. */
    @Test
    void openSslIsSelectedWhereLibcryptoLoads() {
        assertNull(OpenSslAead.unavailableReason());
        assertEquals(AeadEngine.Library.OPENSSL, AeadEngine.Library.SELECTED);
        try (WireSeal seal = WireSeal.of(WireSecurity.MAC, SECRET, JOB, RUN, 2048)) {
            assertEquals(AeadEngine.Library.OPENSSL, seal.library());
        }
    }

    @Test
    void withoutLibcryptoAutoFallsBackToTheJdkAndOpensslRefusesClearly() {
        String reason = "libcrypto.so.3 could not be loaded or bound (no such file)";
        assertEquals(AeadEngine.Library.JDK, AeadEngine.Library.select("auto", reason));
        assertEquals(AeadEngine.Library.JDK, AeadEngine.Library.select("jdk", null));
        assertEquals(AeadEngine.Library.OPENSSL, AeadEngine.Library.select("auto", null));
        var refused = assertThrows(IllegalStateException.class, () -> AeadEngine.Library.select("openssl", reason));
        assertEquals("-Dxaf.wire.crypto=openssl, but " + reason, refused.getMessage());
        assertThrows(IllegalArgumentException.class, () -> AeadEngine.Library.select("boringssl", null));
    }

    /** Byte for byte the same datagram from either library, and each opens the other's, at every length. */
    @ParameterizedTest
    @EnumSource(value = WireSecurity.class, names = {"MAC", "ENCRYPT"})
    void bothLibrariesPutTheSameBytesOnTheWireAndOpenEachOther(WireSecurity mode) {
        try (WireSeal openSsl = seal(mode, AeadEngine.Library.OPENSSL);
             WireSeal jdk = seal(mode, AeadEngine.Library.JDK);
             WireSeal openSslReceiver = seal(mode, AeadEngine.Library.OPENSSL);
             WireSeal jdkReceiver = seal(mode, AeadEngine.Library.JDK)) {
            long seq = WireSeal.initialSequence(new java.util.Random(7));
            for (int length : LENGTHS) {
                seq++;
                MemorySegment a = datagram(openSsl, length, seq);
                MemorySegment b = datagram(jdk, length, seq);
                openSsl.seal(a, length, seq);
                jdk.seal(b, length, seq);
                int datagramLength = XafHeader.LENGTH + length + WireSeal.TRAILER_BYTES;
                assertArrayEquals(b.asSlice(0, datagramLength).toArray(ValueLayout.JAVA_BYTE),
                        a.asSlice(0, datagramLength).toArray(ValueLayout.JAVA_BYTE), mode + " length " + length);
                if (mode == WireSecurity.ENCRYPT && length > 0) {
                    assertFalse(a.asSlice(XafHeader.LENGTH, length).mismatch(data(length)) == -1,
                            "encrypt leaves no plaintext on the wire");
                }
                assertOpens(jdkReceiver, a, length, seq);
                assertOpens(openSslReceiver, b, length, seq);
            }
        }
    }

    /** A datagram in heap memory (no port holds one, but the API takes any segment) seals and opens alike. */
    @ParameterizedTest
    @EnumSource(value = WireSecurity.class, names = {"MAC", "ENCRYPT"})
    void heapSegmentsGiveTheSameBytes(WireSecurity mode) {
        try (WireSeal openSsl = seal(mode, AeadEngine.Library.OPENSSL);
             WireSeal jdk = seal(mode, AeadEngine.Library.JDK)) {
            int length = 1327;
            MemorySegment nativeDatagram = datagram(openSsl, length, 5);
            MemorySegment heap = MemorySegment.ofArray(nativeDatagram.toArray(ValueLayout.JAVA_BYTE));
            openSsl.seal(heap, length, 5);
            jdk.seal(nativeDatagram, length, 5);
            assertEquals(-1, heap.mismatch(nativeDatagram));
            assertOpens(openSsl, heap, length, 5);
        }
    }

    /**
     * The Galois/Counter Mode paper's (McGrew and Viega) test cases 13, 14 and 16, the 256-bit-key ones NIST's
     * validation suite also carries: ciphertext and tag, then the decryption, on both libraries.
     */
    @ParameterizedTest
    @EnumSource(AeadEngine.Library.class)
    void publishedAes256GcmVectors(AeadEngine.Library library) {
        knownAnswer(library, "0000000000000000000000000000000000000000000000000000000000000000",
                "000000000000000000000000", "", "", "", "530f8afbc74536b9a963b4f1c4cb738b");
        knownAnswer(library, "0000000000000000000000000000000000000000000000000000000000000000",
                "000000000000000000000000", "", "00000000000000000000000000000000",
                "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919");
        knownAnswer(library, "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
                "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2",
                "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                        + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
                "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                        + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
                "76fc6ece0f4e1768cddf8853bb2d551b");
    }

    private static void knownAnswer(AeadEngine.Library library, String key, String iv, String aad, String plain,
                                    String cipher, String tag) {
        HexFormat hex = HexFormat.of();
        byte[] p = hex.parseHex(plain);
        byte[] n = hex.parseHex(iv);
        int ranks = java.nio.ByteBuffer.wrap(n).getInt(0);
        long sequence = java.nio.ByteBuffer.wrap(n).getLong(4);
        MemorySegment text = Arena.ofAuto().allocate(p.length + AeadEngine.TAG_BYTES);
        MemorySegment.copy(p, 0, text, ValueLayout.JAVA_BYTE, 0, p.length);
        try (AeadEngine engine = AeadEngine.create(library, hex.parseHex(key), 64)) {
            engine.encrypt(hex.parseHex(aad), ranks, sequence, text, 0, p.length);
            assertEquals(cipher + tag, hex.formatHex(text.toArray(ValueLayout.JAVA_BYTE)), library + " seals");
            assertTrue(engine.decrypt(hex.parseHex(aad), ranks, sequence, text, 0, p.length), library + " opens");
            assertEquals(plain, hex.formatHex(text.asSlice(0, p.length).toArray(ValueLayout.JAVA_BYTE)));
        }
    }

    /**
     * An attacker without the key flips a bit in the covered header, the data, the tag or the sequence number and
     * fixes up the CRC (which has no key): the tag check refuses every one, on both libraries.
     */
    @ParameterizedTest
    @EnumSource(AeadEngine.Library.class)
    void tamperingWithHeaderDataTagOrSequenceFailsAuthentication(AeadEngine.Library library) {
        for (WireSecurity mode : new WireSecurity[] {WireSecurity.MAC, WireSecurity.ENCRYPT}) {
            try (WireSeal sender = seal(mode, library); WireSeal receiver = seal(mode, library)) {
                int length = 1327;
                long dataAt = XafHeader.LENGTH;
                long tagAt = dataAt + length;
                long seqAt = tagAt + WireSeal.TAG_BYTES;
                long[] targets = {XafHeader.STEP_OFFSET, XafHeader.SRC_RANK_OFFSET, XafHeader.PAYLOAD_LEN_OFFSET - 1,
                        dataAt, dataAt + length / 2, tagAt - 1, tagAt, tagAt + 15, seqAt, seqAt + 7};
                long seq = 1000;
                for (long at : targets) {
                    for (int bit : new int[] {0, 7}) {
                        seq++;
                        MemorySegment d = datagram(sender, length, seq);
                        sender.seal(d, length, seq);
                        d.set(ValueLayout.JAVA_BYTE, at, (byte) (d.get(ValueLayout.JAVA_BYTE, at) ^ (1 << bit)));
                        fixCrc(d, length + WireSeal.TRAILER_BYTES);
                        assertEquals(WireSeal.AUTH_FAILED, receiver.open(d, 0, length + WireSeal.TRAILER_BYTES),
                                library + " " + mode + " byte " + at + " bit " + bit);
                    }
                }
                seq++;
                MemorySegment untouched = datagram(sender, length, seq);
                sender.seal(untouched, length, seq);
                assertOpens(receiver, untouched, length, seq); // a rejected datagram leaves the receiver usable
            }
        }
    }

    /** A datagram longer than the seal's limit is refused before any byte is read: TOO_LONG on both libraries. */
    @ParameterizedTest
    @EnumSource(AeadEngine.Library.class)
    void tooLongIsRefused(AeadEngine.Library library) {
        for (WireSecurity mode : WireSecurity.values()) {
            try (WireSeal small = WireSeal.of(mode, SECRET, JOB, RUN, 1500, library)) {
                MemorySegment d = Arena.ofAuto().allocate(2048);
                WireSecurityTest.header(d, small, 1, 1, 0, 0, 1, 2048 - XafHeader.LENGTH - small.trailerLength());
                assertEquals(WireSeal.TOO_LONG, small.open(d, 0, 2048 - XafHeader.LENGTH), mode.configName());
                assertEquals(WireSeal.TOO_LONG, small.open(d, 0, 1500 - XafHeader.LENGTH + 1), "one byte over");
                assertThrows(IllegalArgumentException.class, () -> small.seal(d, 1500, 1), "seal refuses too");
            }
        }
    }

    /** A closed seal fails in Java, never in libcrypto on freed memory; closing twice is harmless. */
    @Test
    void aClosedSealFailsCleanly() {
        WireSeal seal = seal(WireSecurity.ENCRYPT, AeadEngine.Library.OPENSSL);
        MemorySegment d = datagram(seal, 100, 1);
        seal.seal(d, 100, 1);
        seal.close();
        seal.close();
        MemorySegment e = datagram(seal, 100, 2);
        assertThrows(IllegalStateException.class, () -> seal.seal(e, 100, 2));
    }

    /** A failing EVP call is reported with OpenSSL's own error text (ERR_get_error, ERR_error_string_n). */
    @Test
    void aFailedOpenSslCallCarriesOpenSslsErrorText() throws Throwable {
        MemorySegment ctx = (MemorySegment) OpenSslAead.Lib.CTX_NEW.invokeExact();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment gcm = (MemorySegment) OpenSslAead.Lib.AES_256_GCM.invokeExact();
            MemorySegment key = arena.allocate(AeadEngine.KEY_BYTES);
            MemorySegment none = MemorySegment.NULL;
            OpenSslAead.check((int) OpenSslAead.Lib.ENCRYPT_INIT.invokeExact(ctx, gcm, none, key, none), "init");
            // Handing an expected tag to a context keyed for encryption is refused by OpenSSL's GCM provider.
            MemorySegment tag = arena.allocate(AeadEngine.TAG_BYTES);
            int result = (int) OpenSslAead.Lib.CTRL.invokeExact(ctx.address(), OpenSslAead.EVP_CTRL_AEAD_SET_TAG,
                    AeadEngine.TAG_BYTES, tag.address());
            var failure = assertThrows(IllegalStateException.class,
                    () -> OpenSslAead.check(result, "EVP_CIPHER_CTX_ctrl (set tag)"));
            assertTrue(failure.getMessage().matches("EVP_CIPHER_CTX_ctrl \\(set tag\\) returned 0: error:[0-9A-F]{8}:.+"),
                    failure.getMessage());
            assertEquals("no OpenSSL error queued", OpenSslAead.errors(), "reading the queue empties it");
        } finally {
            OpenSslAead.Lib.CTX_FREE.invokeExact(ctx);
        }
    }

    private static WireSeal seal(WireSecurity mode, AeadEngine.Library library) {
        return WireSeal.of(mode, SECRET, JOB, RUN, MAX_DATAGRAM, library);
    }

    private static MemorySegment data(int length) {
        MemorySegment s = Arena.ofAuto().allocate(Math.max(1, length));
        for (int i = 0; i < length; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 131 + 3));
        }
        return s.asSlice(0, length);
    }

    /** A datagram of {@code length} data bytes from rank 1 to rank 0, ready to seal. */
    private static MemorySegment datagram(WireSeal seal, int length, long seq) {
        MemorySegment d = Arena.ofAuto().allocate(XafHeader.LENGTH + length + WireSeal.TRAILER_BYTES);
        WireSecurityTest.header(d, seal, 1, (int) seq, 3, 0, 1, length);
        MemorySegment.copy(data(length), 0, d, XafHeader.LENGTH, length);
        return d;
    }

    private static void assertOpens(WireSeal receiver, MemorySegment d, int length, long seq) {
        assertEquals(WireSeal.OPENED, receiver.open(d, 0, length + WireSeal.TRAILER_BYTES), "length " + length);
        assertEquals(seq, receiver.sequence());
        assertEquals(length, receiver.dataLength());
        assertEquals(-1, receiver.dataSegment().asSlice(receiver.dataOffset(), length).mismatch(data(length)),
                "the plain data, length " + length);
    }

    /** What an attacker can do without the key: recompute the CRC over the tampered datagram. */
    private static void fixCrc(MemorySegment d, int payloadLength) {
        byte[] bytes = d.toArray(ValueLayout.JAVA_BYTE);
        bytes[XafHeader.HOP_LIMIT_OFFSET] = 0;
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, XafHeader.CHECKED_HEADER_LENGTH);
        crc.update(bytes, XafHeader.LENGTH, payloadLength);
        d.set(BE_INT, XafHeader.PAYLOAD_CRC32C_OFFSET, (int) crc.getValue());
        assertNotEquals(0, payloadLength);
    }
}
