package io.xaforward.collective;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** float32 to bf16 conversion: round to nearest even, NaN, infinities, signed zeros, subnormals. */
class Bf16Test {

    private static float bits(int bits) {
        return Float.intBitsToFloat(bits);
    }

    private static int roundedBits(int floatBits) {
        return Float.floatToRawIntBits(Bf16.round(bits(floatBits)));
    }

    @Test
    void roundsToNearestWithTiesToEven() {
        float ulp = (float) Math.scalb(1.0, -7); // bf16 spacing in [1, 2)
        assertEquals(1f, Bf16.round(1f));
        assertEquals(1f, Bf16.round(1f + ulp / 2), "tie, 1.0 has an even significand");
        assertEquals(1f + 2 * ulp, Bf16.round(1f + 3 * ulp / 2), "tie, rounds up to the even neighbour");
        assertEquals(1f + ulp, Bf16.round(1f + ulp / 2 + (float) Math.scalb(1.0, -20)), "just above the tie");
        assertEquals(1f, Bf16.round(1f + ulp / 2 - (float) Math.scalb(1.0, -20)), "just below the tie");
        assertEquals(-1f - 2 * ulp, Bf16.round(-1f - 3 * ulp / 2), "sign is symmetric");
        assertEquals((short) 0x3f80, Bf16.fromFloat(1f));
        assertEquals(1f, Bf16.toFloat((short) 0x3f80));
        assertEquals(-2f, Bf16.toFloat((short) 0xc000));
    }

    @Test
    void matchesAReferenceRoundingOnRandomFiniteFloats() {
        SplittableRandom random = new SplittableRandom(5);
        for (int n = 0; n < 200_000; n++) {
            int floatBits = random.nextInt();
            float x = bits(floatBits);
            if (!Float.isFinite(x)) {
                continue;
            }
            // Candidates: truncation towards zero and the next bf16 away from zero; pick the nearer, ties to even.
            int low = floatBits & 0xffff_0000;
            int high = low + 0x1_0000;
            double dLow = Math.abs((double) bits(low) - x);
            double dHigh = Math.abs((double) toDoubleAllowingInfinity(high) - x);
            int expected = dLow < dHigh ? low : dHigh < dLow ? high : ((low >>> 16) & 1) == 0 ? low : high;
            assertEquals(expected, roundedBits(floatBits), () -> "rounding of " + x);
        }
    }

    /** The value of float bits, where the pattern after the largest finite value is infinity (its distance is huge). */
    private static double toDoubleAllowingInfinity(int floatBits) {
        float f = bits(floatBits);
        return Float.isInfinite(f) ? Math.copySign(Math.scalb(1.0, 128), f) : f;
    }

    @Test
    void keepsNanInfinityAndSignedZero() {
        assertTrue(Float.isNaN(Bf16.round(Float.NaN)));
        assertTrue(Float.isNaN(Bf16.round(bits(0x7f80_0001))), "a NaN with only low payload bits must not become Inf");
        assertTrue(Float.isNaN(Bf16.round(bits(0xff80_0001))));
        assertEquals(0x8000, Bf16.fromFloat(bits(0xff80_0001)) & 0x8000, "NaN keeps its sign");
        assertTrue(Float.isNaN(Bf16.round(bits(0x7fff_ffff))), "rounding up must not carry a NaN into the sign bit");
        assertEquals(Float.POSITIVE_INFINITY, Bf16.round(Float.POSITIVE_INFINITY));
        assertEquals(Float.NEGATIVE_INFINITY, Bf16.round(Float.NEGATIVE_INFINITY));
        assertEquals(Float.POSITIVE_INFINITY, Bf16.round(Float.MAX_VALUE), "beyond the largest bf16: infinity");
        assertEquals(bits(0x7f7f_0000), Bf16.round(bits(0x7f7f_7fff)), "largest finite bf16 stays finite");
        assertEquals(0x0000_0000, roundedBits(0x0000_0000));
        assertEquals(0x8000_0000, roundedBits(0x8000_0000), "negative zero keeps its sign");
    }

    @Test
    void roundsSubnormals() {
        assertEquals(0x0000_0000, roundedBits(0x0000_0001), "smallest float32 subnormal rounds to zero");
        assertEquals(0x8000_0000, roundedBits(0x8000_0001), "... keeping the sign");
        assertEquals(0x0001_0000, roundedBits(0x0001_0000), "smallest bf16 subnormal is exact");
        assertEquals(0x0000_0000, roundedBits(0x0000_8000), "tie between 0 and the smallest subnormal: even (0)");
        assertEquals(0x0002_0000, roundedBits(0x0001_8000), "tie between subnormals 1 and 2: even (2)");
        assertEquals(0x0080_0000, roundedBits(0x007f_ffff), "largest subnormal rounds up to the smallest normal");
    }

    @Test
    void relativeErrorOfNormalValuesIsAtMostHalfAnUlp() {
        SplittableRandom random = new SplittableRandom(9);
        for (int n = 0; n < 100_000; n++) {
            float x = (float) ((random.nextDouble() * 2 - 1) * Math.pow(10, random.nextInt(-30, 30)));
            assertTrue(Math.abs(Bf16.round(x) - x) <= Math.scalb(1.0, -8) * Math.abs(x), () -> "error at " + x);
        }
    }
}
