package io.xaforward.collective;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;

import static io.xaforward.collective.Wire.F32;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Inputs and checks for all-reduce tests: per-rank float arrays, double-precision references, bitwise comparison. */
final class Tensors {
    private Tensors() {
    }

    /** Random floats in [-1, 1) (integral = false) or integers in [-1000, 1000] as floats, one array per rank. */
    static float[][] inputs(int ranks, int count, long seed, boolean integral) {
        float[][] inputs = new float[ranks][count];
        for (int r = 0; r < ranks; r++) {
            Random random = new Random(seed * 1000 + r);
            for (int i = 0; i < count; i++) {
                inputs[r][i] = integral ? random.nextInt(2001) - 1000 : random.nextFloat() * 2 - 1;
            }
        }
        return inputs;
    }

    /** A shared-arena segment (the transport thread writes into it) holding {@code values}, plus 16 spare bytes. */
    static MemorySegment segment(Arena arena, float[] values) {
        MemorySegment s = arena.allocate((long) values.length * Float.BYTES + 16, 64);
        for (int i = 0; i < values.length; i++) {
            s.set(F32, (long) i * Float.BYTES, values[i]);
        }
        s.asSlice((long) values.length * Float.BYTES).fill((byte) 0x5A);
        return s;
    }

    static float[] read(MemorySegment s, int count) {
        float[] out = new float[count];
        for (int i = 0; i < count; i++) {
            out[i] = s.get(F32, (long) i * Float.BYTES);
        }
        return out;
    }

    /**
     * Checks that every rank holds the same bits and that they match the sum computed in double within the float
     * summation bound n · 2^-23 · Σ|x| (exactly, when {@code exact}); the spare bytes behind the tensor are untouched.
     */
    static void assertAllReduced(float[][] inputs, float[][] results, boolean mean, boolean exact) {
        int n = inputs.length;
        int count = inputs[0].length;
        for (int r = 1; r < n; r++) {
            for (int i = 0; i < count; i++) {
                int expectedBits = Float.floatToRawIntBits(results[0][i]);
                int actualBits = Float.floatToRawIntBits(results[r][i]);
                if (expectedBits != actualBits) {
                    throw new AssertionError("rank " + r + " element " + i + " is " + results[r][i]
                            + " but rank 0 has " + results[0][i] + ": results are not bitwise identical");
                }
            }
        }
        for (int i = 0; i < count; i++) {
            double sum = 0;
            double magnitude = 0;
            for (float[] input : inputs) {
                sum += input[i];
                magnitude += Math.abs(input[i]);
            }
            double expected = mean ? sum / n : sum;
            double actual = results[0][i];
            if (exact) {
                float expectedFloat = mean ? (float) sum / n : (float) sum;
                assertEquals(expectedFloat, results[0][i], "element " + i);
            } else {
                double tolerance = n * Math.scalb(1.0, -23) * magnitude / (mean ? n : 1) + Math.ulp((float) expected);
                int index = i;
                assertTrue(Math.abs(actual - expected) <= tolerance, () -> "element " + index + " is " + actual
                        + ", expected " + expected + " +- " + tolerance);
            }
        }
    }

    static void assertSpareBytesUntouched(MemorySegment s, int count) {
        MemorySegment spare = s.asSlice((long) count * Float.BYTES);
        for (long i = 0; i < spare.byteSize(); i++) {
            assertEquals((byte) 0x5A, spare.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i),
                    "byte " + i + " behind the tensor was overwritten");
        }
    }
}
