package io.xaforward.collective;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

import static io.xaforward.collective.Wire.F32;

/**
 * Error feedback for a lossy wire format: keeps, per element, what rounding to the format lost on this rank last
 * time (the residual), and adds it to the next round's input, so that nothing is lost for good: over T rounds the
 * decoded values sum to the inputs' sum minus the last residual, which stays within one rounding step (half a
 * block scale for int8/int4). Used on DiLoCo's outer pseudo-gradients, which are sent rarely and coarsely.
 *
 * <p>Call {@link #apply} on this rank's contribution just before the all-reduce that sends it in {@link #dtype()}:
 * it adds the residual in place and stores the new residual {@code x - wire(x)}, with the same blocks as the
 * all-reduce (blocks of {@link WireDtype#blockFloats()} from element 0, which the ring's bucket and part boundaries
 * keep). In the all-reduce the rank's own values are rounded exactly so where it sends them first; partial sums
 * that others forward are rounded again, which no single rank can compensate. A non-finite input leaves residual 0
 * for that element, so one bad round is not carried into the next ones. Per call: no allocation, one pass.
 *
 * <p>One instance per all-reduced buffer (e.g. per DiLoCo fragment): the blocks count from that buffer's element 0.
 * The residual is state of the training run: checkpoint {@link #residual()} for an exact resume.
 */
public final class ErrorFeedback {
    private final WireDtype dtype;
    private final int count;
    private final MemorySegment residual;

    /** A zero residual for {@code count} floats sent in {@code dtype}. */
    public ErrorFeedback(WireDtype dtype, int count) {
        this.dtype = Objects.requireNonNull(dtype, "dtype");
        if (count < 0) {
            throw new IllegalArgumentException("count must not be negative, was " + count);
        }
        this.count = count;
        this.residual = MemorySegment.ofArray(new float[count]);
    }

    public WireDtype dtype() { return dtype; }

    public int count() { return count; }

    /** The residual, one little-endian float per element (read it to checkpoint, write it to restore). */
    public MemorySegment residual() {
        return residual;
    }

    /** Forgets all residuals (e.g. when the parameters are reset). */
    public void reset() {
        residual.fill((byte) 0);
    }

    /**
     * Adds the residual to the first {@link #count()} floats of {@code values} in place and keeps what rounding
     * the result to {@link #dtype()} loses as the next residual.
     */
    public void apply(MemorySegment values) {
        Objects.requireNonNull(values, "values");
        if (values.byteSize() < (long) count * Float.BYTES) {
            throw new IllegalArgumentException("values hold " + values.byteSize() / Float.BYTES + " floats, error "
                    + "feedback was made for " + count);
        }
        switch (dtype) {
            case FP32 -> addResidual(values, 0, count); // lossless: the residual stays zero
            case BF16 -> {
                addResidual(values, 0, count);
                for (long at = 0, end = (long) count * Float.BYTES; at < end; at += Float.BYTES) {
                    float x = values.get(F32, at);
                    residual.set(F32, at, Float.isFinite(x) ? x - Bf16.round(x) : 0f);
                }
            }
            case INT8, INT4 -> applyBlocks(values);
        }
    }

    private void applyBlocks(MemorySegment values) {
        int block = dtype.blockFloats();
        int level = dtype.maxLevel();
        for (int lo = 0; lo < count; lo += block) {
            int len = Math.min(block, count - lo);
            addResidual(values, lo, len);
            float s = BlockQuantizer.scale(values, lo, len, level);
            double inverse = BlockQuantizer.inverse(s);
            for (long at = (long) lo * Float.BYTES, end = at + (long) len * Float.BYTES; at < end; at += Float.BYTES) {
                float x = values.get(F32, at);
                float sent = BlockQuantizer.decode(BlockQuantizer.quantize(x, inverse, level), s, level);
                residual.set(F32, at, Float.isFinite(x) ? x - sent : 0f);
            }
        }
    }

    private void addResidual(MemorySegment values, int first, int length) {
        for (long at = (long) first * Float.BYTES, end = at + (long) length * Float.BYTES; at < end; at += Float.BYTES) {
            values.set(F32, at, values.get(F32, at) + residual.get(F32, at));
        }
    }
}
