package io.xaforward.protocol;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** InternetChecksum.sum over gradient-sized payloads, at every alignment, as the transport's senders call it. */
class InternetChecksumPayloadTest {

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
        assertEquals(expected, InternetChecksum.sum(MemorySegment.ofArray(bytes), from, length),
                "heap, length " + length + " offset " + from);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment nativeCopy = arena.allocate(bytes.length, 64);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, nativeCopy, 0, bytes.length);
            assertEquals(expected, InternetChecksum.sum(nativeCopy, from, length),
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
        assertEquals(expected, InternetChecksum.sum(MemorySegment.ofArray(bytes), from, length),
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
                    InternetChecksum.sum(MemorySegment.ofArray(bytes), from, length),
                    "length " + length + " offset " + from);
        }
    }

    @Test
    void emptyPayloadSumsToZero() {
        assertEquals(0, InternetChecksum.sum(MemorySegment.ofArray(new byte[4]), 4, 0));
    }

    @Test
    void rangeOutsideTheSegmentIsRefused() {
        MemorySegment segment = MemorySegment.ofArray(new byte[100]);
        assertThrows(IndexOutOfBoundsException.class, () -> InternetChecksum.sum(segment, 90, 11));
    }

    @Test
    void allOnesPayloadFoldsToFfff() {
        byte[] bytes = new byte[1400];
        Arrays.fill(bytes, (byte) 0xFF);
        assertEquals(0xFFFF, InternetChecksum.sum(MemorySegment.ofArray(bytes), 0, bytes.length));
    }

    /**
     * Over 2^30 bytes the sum is taken in pieces folded in between: a byte just past the first piece must count as
     * the high byte of its word, like every other even position.
     */
    @Test
    void rangesLongerThanOnePieceSumAcrossThePieceBoundary() {
        long length = (1L << 30) + 6;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment big = arena.allocate(length + 1);
            big.fill((byte) 0x01);
            big.set(ValueLayout.JAVA_BYTE, 1 + (1L << 30), (byte) 0x03);
            long words = length / 2;
            long expected = words * 0x0101 + 0x0200; // the 0x03 byte is a high byte: +0x0200 over 0x01
            assertEquals(InternetChecksum.fold(expected), InternetChecksum.sum(big, 1, length));
        }
    }
}
