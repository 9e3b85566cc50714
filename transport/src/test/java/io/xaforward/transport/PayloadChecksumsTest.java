package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
    void allOnesPayloadFoldsToFfff() {
        byte[] bytes = new byte[1400];
        java.util.Arrays.fill(bytes, (byte) 0xFF);
        assertEquals(0xFFFF, PayloadChecksums.onesComplementSum(MemorySegment.ofArray(bytes), 0, bytes.length));
    }
}
