package io.xaforward.collective;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.Random;

import static io.xaforward.collective.Wire.F32;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Error feedback: the running sum of what is sent (decoded) follows the running sum of the inputs within one rounding
 * step, where without it small values next to large ones are lost for good.
 */
class ErrorFeedbackTest {
    private static final int COUNT = 1000; // 7 whole blocks and a partial one

    @ParameterizedTest
    @EnumSource(value = WireDtype.class, names = {"BF16", "INT8", "INT4"})
    void runningSumOfDecodedValuesFollowsTheRunningSumOfInputs(WireDtype dtype) {
        ErrorFeedback feedback = new ErrorFeedback(dtype, COUNT);
        Random random = new Random(3);
        double[] inputSum = new double[COUNT];
        double[] sentSum = new double[COUNT];
        double[] plainSum = new double[COUNT]; // the same inputs rounded without feedback
        float[] x = new float[COUNT];
        float[] plain = new float[COUNT];
        double worstWith = 0;
        double largestScale = 0;
        int block = dtype.quantized() ? dtype.blockFloats() : 128;
        for (int round = 0; round < 400; round++) {
            for (int i = 0; i < COUNT; i++) {
                // One large value per block sets the scale; the others are small and steady, as a slow drift.
                x[i] = i % block == 0 ? (round % 2 == 0 ? 1f : -1f) : 0.01f + 0.001f * (i % 7)
                        + (float) random.nextGaussian() * 0.0005f;
                inputSum[i] += x[i];
            }
            System.arraycopy(x, 0, plain, 0, COUNT);
            feedback.apply(MemorySegment.ofArray(x)); // x now holds input + residual: what goes into the all-reduce
            float[] sent = wire(dtype, x);
            float[] plainSent = wire(dtype, plain);
            for (int i = 0; i < COUNT; i++) {
                sentSum[i] += sent[i];
                plainSum[i] += plainSent[i];
                float r = feedback.residual().get(F32, (long) i * Float.BYTES);
                assertEquals(x[i] - sent[i], r, "the residual is what rounding lost, element " + i);
                worstWith = Math.max(worstWith, Math.abs(sentSum[i] - inputSum[i]));
                largestScale = Math.max(largestScale, Math.abs(x[i]) / Math.max(1, dtype.maxLevel()));
            }
        }
        double worstWithout = 0;
        for (int i = 0; i < COUNT; i++) {
            worstWithout = Math.max(worstWithout, Math.abs(plainSum[i] - inputSum[i]));
        }
        // Telescoping: sent sum = input sum - last residual, and a residual is at most half a scale (bf16: half an
        // ulp of 1.01); float rounding of the additions adds a little.
        double bound = dtype == WireDtype.BF16 ? Math.scalb(1.0, -8) * 1.1 : largestScale * 0.51 + 1e-4;
        assertTrue(worstWith <= bound, dtype + ": running sums drift apart by " + worstWith + " > " + bound);
        if (dtype.quantized()) { // bf16's rounding of the small values is unbiased here: its drift stays small too
            assertTrue(worstWithout > 20 * worstWith, dtype + ": without feedback the drift " + worstWithout
                    + " should dwarf " + worstWith);
        }
        System.out.printf("%s: running-sum drift %.2e with error feedback, %.2e without%n", dtype, worstWith,
                worstWithout);
    }

    @Test
    void nonFiniteInputsLeaveNoResidualAndFp32NeedsNone() {
        ErrorFeedback int8 = new ErrorFeedback(WireDtype.INT8, 300);
        float[] x = new float[300];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) Math.sin(i) / 3;
        }
        x[10] = Float.NaN;
        x[200] = Float.NEGATIVE_INFINITY;
        int8.apply(MemorySegment.ofArray(x));
        assertEquals(0f, int8.residual().get(F32, 10 * 4L));
        assertEquals(0f, int8.residual().get(F32, 200 * 4L));
        assertTrue(int8.residual().get(F32, 12 * 4L) != 0f, "finite neighbours keep their residual");
        int8.reset();
        assertEquals(-1, int8.residual().mismatch(MemorySegment.ofArray(new float[300])));

        ErrorFeedback fp32 = new ErrorFeedback(WireDtype.FP32, 300);
        float[] y = x.clone();
        fp32.apply(MemorySegment.ofArray(y));
        assertEquals(-1, fp32.residual().mismatch(MemorySegment.ofArray(new float[300])));
        assertThrows(IllegalArgumentException.class, () -> int8.apply(MemorySegment.ofArray(new float[299])));
    }

    @Test
    void applyAllocatesNothing() {
        ErrorFeedback feedback = new ErrorFeedback(WireDtype.INT4, 1 << 16);
        MemorySegment values = MemorySegment.ofArray(new float[1 << 16]);
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        for (int i = 0; i < 200; i++) { // let the JIT compile it first
            values.set(F32, 4L * i, i);
            feedback.apply(values);
        }
        long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 100; i++) {
            feedback.apply(values);
        }
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        // 100 calls over 64 Ki floats; a per-element or per-block allocation would be megabytes.
        assertTrue(allocated < 10_000, "apply allocated " + allocated + " bytes in 100 calls");
    }

    /** What a receiver decodes from {@code x} in {@code dtype}, block by block from element 0. */
    private static float[] wire(WireDtype dtype, float[] x) {
        float[] out = x.clone();
        if (dtype == WireDtype.BF16) {
            Bf16.roundInPlace(MemorySegment.ofArray(out));
        } else {
            BlockQuantizer.roundInPlace(MemorySegment.ofArray(out), out.length, dtype);
        }
        return out;
    }
}
