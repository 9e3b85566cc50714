package io.xaforward.training;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * AdamW (decoupled weight decay) over parameters and gradients addressed as native float segments, with its moment
 * buffers in one flat off-heap allocation laid out like the flat gradient buffer. Written here instead of using
 * DJL's Adam because DJL keeps the moments and update counts in private maps (a checkpoint could not capture them,
 * so resume would not be exact) and decays every parameter including biases and LayerNorm.
 */
public final class AdamW implements AutoCloseable {

    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;

    private final float beta1;
    private final float beta2;
    private final float epsilon;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment firstMoment;
    private final MemorySegment secondMoment;
    private long updates;

    public AdamW(long totalFloats, float beta1, float beta2, float epsilon) {
        this.beta1 = beta1;
        this.beta2 = beta2;
        this.epsilon = epsilon;
        this.firstMoment = arena.allocate(totalFloats * Float.BYTES, 64);
        this.secondMoment = arena.allocate(totalFloats * Float.BYTES, 64);
    }

    /**
     * One update of every parameter, reading the gradients straight from the flat buffer they were all-reduced in
     * (llm.c's gpt2_update): one pass over parameters, gradients and moments, no copy back into gradient tensors.
     *
     * @param params        parameter memory, in flat order (views of the tensors' own memory: written in place)
     * @param flatGradients float32 gradients of all parameters, concatenated in the same order
     * @param gradientScale factor applied to every gradient as it is read (global-norm clipping; 1 for none)
     * @param decay         whether weight decay applies to each parameter
     */
    public void step(List<MemorySegment> params, MemorySegment flatGradients, float gradientScale, boolean[] decay,
                     double learningRate, double weightDecay) {
        updates++;
        float lr = (float) learningRate;
        float correction1 = (float) (1 - Math.pow(beta1, updates));
        float correction2 = (float) (1 - Math.pow(beta2, updates));
        long base = 0;
        for (int p = 0; p < params.size(); p++) {
            MemorySegment w = params.get(p);
            long n = w.byteSize() / Float.BYTES;
            float shrink = decay[p] ? (float) (1 - learningRate * weightDecay) : 1f;
            for (long i = 0; i < n; i++) {
                float grad = flatGradients.getAtIndex(F32, base + i);
                if (gradientScale != 1f) {
                    grad *= gradientScale;
                }
                float m = beta1 * firstMoment.getAtIndex(F32, base + i) + (1 - beta1) * grad;
                float v = beta2 * secondMoment.getAtIndex(F32, base + i) + (1 - beta2) * grad * grad;
                firstMoment.setAtIndex(F32, base + i, m);
                secondMoment.setAtIndex(F32, base + i, v);
                float update = (m / correction1) / ((float) Math.sqrt(v / correction2) + epsilon);
                w.setAtIndex(F32, i, w.getAtIndex(F32, i) * shrink - lr * update);
            }
            base += n;
        }
    }

    /** Number of updates applied so far (drives bias correction). */
    public long updates() {
        return updates;
    }

    public MemorySegment firstMoment() {
        return firstMoment;
    }

    public MemorySegment secondMoment() {
        return secondMoment;
    }

    /** Restores the update count (moments are restored by writing into the segments). */
    public void restoreUpdates(long count) {
        this.updates = count;
    }

    @Override
    public void close() {
        arena.close();
    }
}
