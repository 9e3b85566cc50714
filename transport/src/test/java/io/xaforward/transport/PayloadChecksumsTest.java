package io.xaforward.transport;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class PayloadChecksumsTest {

    /** Straightforward RFC 1071 reference: add 16-bit big-endian words with end-around carry. */
    private static int reference(byte[] bytes, int from, int length) {
        int sum = 0;
        for (int i = 0; i < length; i += 2) {
            int hi = bytes[from + i] & 0xFF;
            int lo = i + 1 < length ? bytes[from + i + 1] & 0xFF : 0;
            sum += (hi << 8) | lo;
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return sum;
    }

    /** Random bytes, jumbo lengths, any alignment, in heap and in native memory (where the ports keep datagrams). */
    @Property(tries = 400)
    void matchesReferenceForAnyLengthAndOffset(@ForAll @IntRange(max = 9000) int length,
                                               @ForAll @IntRange(max = 63) int from, @ForAll long seed) {
        byte[] bytes = new byte[from + length + 7];
        new Random(seed).nextBytes(bytes);
        int expected = reference(bytes, from, length);
        assertEquals(expected, PayloadChecksums.onesComplementSum(MemorySegment.ofArray(bytes), from, length),
                "heap, length " + length + " offset " + from);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment nativeCopy = arena.allocate(bytes.length, 64);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, nativeCopy, 0, bytes.length);
            assertEquals(expected, PayloadChecksums.onesComplementSum(nativeCopy, from, length),
                    "native, length " + length + " offset " + from);
        }
    }

    /** All-0xFF words are the case where every add carries: the sum must fold to 0xFFFF, never to 0. */
    @Property(tries = 200)
    void allOnesFoldToFfffAtAnyLengthAndOffset(@ForAll @IntRange(min = 2, max = 9000) int length,
                                               @ForAll @IntRange(max = 63) int from) {
        byte[] bytes = new byte[from + length];
        Arrays.fill(bytes, (byte) 0xFF);
        int expected = reference(bytes, from, length);
        assertEquals(expected, PayloadChecksums.onesComplementSum(MemorySegment.ofArray(bytes), from, length),
                "length " + length + " offset " + from);
        if ((length & 1) == 0) {
            assertEquals(0xFFFF, expected);
        }
    }

    @Test
    void matchesReferenceForRandomPayloadsOfEveryLengthParity() {
        Random random = new Random(7);
        for (int trial = 0; trial < 500; trial++) {
            byte[] bytes = new byte[random.nextInt(3000) + 3];
            random.nextBytes(bytes);
            int from = random.nextInt(3);
            int length = random.nextInt(bytes.length - from + 1);
            assertEquals(reference(bytes, from, length),
                    PayloadChecksums.onesComplementSum(MemorySegment.ofArray(bytes), from, length),
                    "length " + length + " offset " + from);
        }
    }

    @Test
    void emptyPayloadSumsToZero() {
        assertEquals(0, PayloadChecksums.onesComplementSum(MemorySegment.ofArray(new byte[4]), 4, 0));
    }

    @Test
    void rangeOutsideTheSegmentIsRefused() {
        MemorySegment segment = MemorySegment.ofArray(new byte[100]);
        assertThrows(IndexOutOfBoundsException.class, () -> PayloadChecksums.onesComplementSum(segment, 90, 11));
    }

    @Test
    void allOnesPayloadFoldsToFfff() {
        byte[] bytes = new byte[1400];
        Arrays.fill(bytes, (byte) 0xFF);
        assertEquals(0xFFFF, PayloadChecksums.onesComplementSum(MemorySegment.ofArray(bytes), 0, bytes.length));
    }
}
