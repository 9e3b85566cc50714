package io.xaforward.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

class PayloadIntegrityTest {
    private final PayloadIntegrity integrity = new PayloadIntegrity();

    @Test
    void crc32cOfTheCheckStringIsTheStandardValue() {
        byte[] check = "123456789".getBytes(StandardCharsets.US_ASCII);
        assertEquals(0xE3069283, integrity.crc32c(MemorySegment.ofArray(check), 0, 9));
        assertEquals(0xE3069283, Naive.crc32c(check, 0, 9));
    }

    @Test
    void crc32cMatchesJavaUtilZipAndNaiveOnHeapAndNativeRanges() {
        Random rnd = new Random(42);
        byte[] data = new byte[5000];
        rnd.nextBytes(data);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment nat = arena.allocate(data.length);
            MemorySegment.copy(data, 0, nat, ValueLayout.JAVA_BYTE, 0, data.length);
            MemorySegment heap = MemorySegment.ofArray(data);
            for (int i = 0; i < 200; i++) {
                int off = rnd.nextInt(data.length);
                int len = rnd.nextInt(data.length - off + 1);
                CRC32C ref = new CRC32C();
                ref.update(data, off, len);
                assertEquals((int) ref.getValue(), integrity.crc32c(heap, off, len));
                assertEquals((int) ref.getValue(), integrity.crc32c(nat, off, len), "alternating segments");
                assertEquals(Naive.crc32c(data, off, len), (int) ref.getValue());
            }
        }
    }

    @Test
    void sealFillsSumAndCrcAndVerifyDetectsAnyCorruption() {
        byte[] raw = new byte[48 + 101];
        new Random(3).nextBytes(raw);
        MemorySegment seg = MemorySegment.ofArray(raw);
        XafHeader h = new XafHeader().wrap(seg, 0).init().payloadLength(101);
        integrity.seal(h);
        assertEquals(Naive.onesComplementSum(raw, 48, 101), h.payloadSum());
        assertEquals(Naive.crc32c(raw, 48, 101), h.payloadCrc32c());
        assertTrue(integrity.verify(h));

        raw[48 + 50] ^= 0x10;
        assertFalse(integrity.payloadSumMatches(h));
        assertFalse(integrity.crc32cMatches(h));
        assertFalse(integrity.verify(h));
        raw[48 + 50] ^= 0x10;

        // Swapping two aligned 16-bit words keeps the ones'-complement sum: only the CRC notices.
        byte a0 = raw[48], a1 = raw[49];
        raw[48] = raw[50]; raw[49] = raw[51]; raw[50] = a0; raw[51] = a1;
        if (a0 != raw[48] || a1 != raw[49]) {
            assertTrue(integrity.payloadSumMatches(h));
            assertFalse(integrity.crc32cMatches(h));
        }
    }

    @Test
    void payloadBeyondTheSegmentIsRejectedOrFailsVerification() {
        MemorySegment seg = MemorySegment.ofArray(new byte[60]);
        XafHeader h = new XafHeader().wrap(seg, 0).init().payloadLength(13);
        var e = assertThrows(IndexOutOfBoundsException.class, () -> integrity.seal(h));
        assertTrue(e.getMessage().contains("60 bytes"), e.getMessage());
        assertFalse(integrity.verify(h));
    }

    @Test
    void emptyPayloadSealsToZeroSumAndZeroCrc() {
        XafHeader h = new XafHeader().wrap(MemorySegment.ofArray(new byte[48]), 0).init();
        integrity.seal(h);
        assertEquals(0, h.payloadSum());
        assertEquals(0, h.payloadCrc32c());
        assertTrue(integrity.verify(h));
    }
}
