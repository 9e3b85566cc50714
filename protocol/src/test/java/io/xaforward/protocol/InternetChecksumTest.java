package io.xaforward.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class InternetChecksumTest {
    @Test
    void rfc1071ExampleSumsToDdf2() {
        byte[] data = Naive.hex("0001f203f4f5f6f7");
        assertEquals(0xDDF2, InternetChecksum.sum(MemorySegment.ofArray(data), 0, data.length));
        assertEquals(0x220D, InternetChecksum.complement(0xDDF2));
    }

    @Test
    void oddTailIsPaddedWithZeroAndEmptyRangeSumsToZero() {
        MemorySegment seg = MemorySegment.ofArray(Naive.hex("abcdef"));
        assertEquals(0xABCD + 0xEF00 - 0xFFFF, InternetChecksum.sum(seg, 0, 3));
        assertEquals(0xEF00, InternetChecksum.sum(seg, 2, 1));
        assertEquals(0, InternetChecksum.sum(seg, 1, 0));
    }

    @Test
    void oddSegmentOffsetStillTreatsFirstByteAsHighByte() {
        byte[] data = Naive.hex("ff1234");
        assertEquals(0x1234, InternetChecksum.sum(MemorySegment.ofArray(data), 1, 2));
    }

    @Test
    void allOnesFoldsToNegativeZeroNotZero() {
        byte[] data = new byte[1000];
        Arrays.fill(data, (byte) 0xFF);
        assertEquals(0xFFFF, InternetChecksum.sum(MemorySegment.ofArray(data), 0, data.length));
        assertEquals(0xFFFF, InternetChecksum.finish(0xFFFF), "UDP never sends a computed 0");
        assertEquals(0, InternetChecksum.complement(0xFFFF));
    }

    @Test
    void combineWithOddOffsetSwapsBytes() {
        byte[] data = Naive.hex("0102030405060708090a");
        MemorySegment seg = MemorySegment.ofArray(data);
        int whole = InternetChecksum.sum(seg, 0, data.length);
        for (int split = 0; split <= data.length; split++) {
            int a = InternetChecksum.sum(seg, 0, split);
            int b = InternetChecksum.sum(seg, split, data.length - split);
            assertEquals(whole, InternetChecksum.combine(a, b, split), "split at " + split);
        }
    }

    @Test
    void add32AddsBothHalves() {
        assertEquals(InternetChecksum.combine(0x1234, InternetChecksum.fold(0xABCDL + 0x1111L)),
                InternetChecksum.add32(0x1234, 0xABCD1111));
    }

    @Test
    void isValidRecognisesAHeaderWithItsChecksum() {
        byte[] ip = Naive.hex("450000730000400040110000c0a80001c0a800c7");
        MemorySegment seg = MemorySegment.ofArray(ip);
        int c = InternetChecksum.complement(InternetChecksum.sum(seg, 0, 20));
        assertEquals(0xB861, c, "the classic example header checksum");
        ip[10] = (byte) (c >> 8);
        ip[11] = (byte) c;
        assertTrue(InternetChecksum.isValid(InternetChecksum.sum(seg, 0, 20)));
        ip[15] ^= 1;
        assertFalse(InternetChecksum.isValid(InternetChecksum.sum(seg, 0, 20)));
    }

    @Test
    void largeNativeRangeMatchesNaive() {
        try (Arena arena = Arena.ofConfined()) {
            byte[] data = new byte[1 << 20];
            new java.util.Random(7).nextBytes(data);
            MemorySegment seg = arena.allocate(data.length + 1);
            MemorySegment.copy(data, 0, seg, java.lang.foreign.ValueLayout.JAVA_BYTE, 1, data.length);
            assertEquals(Naive.onesComplementSum(data, 0, data.length), InternetChecksum.sum(seg, 1, data.length));
        }
    }

    @Test
    void outOfBoundsRangeIsRejectedWithAClearMessage() {
        MemorySegment seg = MemorySegment.ofArray(new byte[10]);
        var e = assertThrows(IndexOutOfBoundsException.class, () -> InternetChecksum.sum(seg, 4, 7));
        assertTrue(e.getMessage().contains("10 bytes"), e.getMessage());
        assertThrows(IndexOutOfBoundsException.class, () -> InternetChecksum.sum(seg, -1, 2));
    }
}
