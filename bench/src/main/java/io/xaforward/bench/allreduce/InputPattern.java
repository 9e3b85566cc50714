package io.xaforward.bench.allreduce;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The input of every rank of an all-reduce check, as a pure function of (seed, rank, index): any rank, and the
 * launcher, can regenerate any rank's input without moving it, so each rank verifies its result against a reference
 * summed in double over all ranks' inputs.
 *
 * <h2>Tolerance</h2>
 * RANDOM values are multiples of 2^-23 in [-1, 1). A float sum of n terms in any order differs from the exact sum
 * by at most (n-1)·u·Σ|x| (u = 2^-24, first order); the check allows {@link #bound} = n·2^-23·Σ|x|, twice that, so
 * that any summation order passes and a lost or duplicated contribution (error ≥ 2^-23) fails unless it is tiny.
 * INTEGER values are integers in [-32, 31]: their sums are exact in any order, so the check is equality.
 */
public final class InputPattern {
    /** What the inputs look like. */
    public enum Kind { RANDOM, INTEGER }

    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Kind kind;
    private final long seed;

    public InputPattern(Kind kind, long seed) {
        this.kind = kind;
        this.seed = seed;
    }

    public Kind kind() { return kind; }

    /** Input element {@code index} of rank {@code rank}. */
    public float value(int rank, long index) {
        long h = mix(seed + rank * 0xBF58476D1CE4E5B9L + index * 0x9E3779B97F4A7C15L);
        return kind == Kind.INTEGER ? (float) ((h >>> 58) - 32) : (float) (((h >>> 40) - (1L << 23)) * 0x1p-23);
    }

    /** Fills the first {@code count} floats of {@code buffer} with rank {@code rank}'s input. */
    public void fill(MemorySegment buffer, int rank, int count) {
        for (int i = 0; i < count; i++) {
            buffer.set(F32, (long) i * Float.BYTES, value(rank, i));
        }
    }

    /** The allowed absolute error of element {@code index} of a SUM over {@code ranks} ranks. */
    public static double bound(Kind kind, int ranks, double sumOfMagnitudes) {
        return kind == Kind.INTEGER ? 0 : ranks * 0x1p-23 * sumOfMagnitudes;
    }

    /**
     * Checks a SUM result of {@code count} floats over {@code ranks} ranks.
     *
     * @return the outcome: the largest error seen, and the first element outside the bound (or -1)
     */
    public Check verify(MemorySegment result, int count, int ranks) {
        double maxError = 0;
        long firstBad = -1;
        double badGot = 0, badWant = 0;
        for (int i = 0; i < count; i++) {
            double want = 0, magnitude = 0;
            for (int r = 0; r < ranks; r++) {
                float v = value(r, i);
                want += v;
                magnitude += Math.abs(v);
            }
            float got = result.get(F32, (long) i * Float.BYTES);
            double error = Math.abs(got - want);
            if (!(error <= bound(kind, ranks, magnitude))) { // also catches NaN
                if (firstBad < 0) {
                    firstBad = i;
                    badGot = got;
                    badWant = want;
                }
                if (Double.isNaN(error)) error = Double.POSITIVE_INFINITY;
            }
            maxError = Math.max(maxError, error);
        }
        return new Check(maxError, firstBad, badGot, badWant);
    }

    /** Outcome of {@link #verify}. */
    public record Check(double maxError, long firstBadIndex, double badValue, double expectedValue) {
        public boolean ok() {
            return firstBadIndex < 0;
        }
    }

    /** A 64-bit hash of the bits of a float buffer: equal results on all ranks give equal checksums. */
    public static long checksum(MemorySegment buffer, int count) {
        long h = 0x243F6A8885A308D3L;
        for (int i = 0; i < count; i++) {
            h = mix(h ^ Float.floatToRawIntBits(buffer.get(F32, (long) i * Float.BYTES)));
        }
        return h;
    }

    /** SplitMix64's finaliser: a cheap, well-mixed 64-bit hash. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
