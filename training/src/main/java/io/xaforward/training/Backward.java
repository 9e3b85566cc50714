package io.xaforward.training;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;

/**
 * How a step's gradients are computed and reduced: {@link WholeGraphBackward} (one backward call, then one all-reduce
 * of the whole flat buffer) or {@link StagedBackward} (backward stage by stage, each finished suffix of the buffer
 * all-reduced while the earlier stages' backward runs). Either way, after {@link #meanGradient} the flat buffer holds
 * the mean gradient over the ranks and the mean loss.
 */
interface Backward extends AutoCloseable {

    /** Forward and backward on this rank's micro-batch; returns its loss. Reductions may already be under way. */
    float forwardBackward(Batch batch);

    /** Waits for (or runs) the all-reduce; returns the sum of squares of the mean gradient, summed in index order. */
    double meanGradient();

    @Override
    void close();

    /** The batch's inputs and targets as tensors of {@code manager}, each a copy of its own (index 0 and 1). */
    static NDArray[] inputsAndTargets(NDManager manager, Batch batch) {
        Shape shape = new Shape(batch.batchSize(), batch.contextLength());
        return new NDArray[] {manager.create(batch.inputs(), shape).duplicate(),
                manager.create(batch.targets(), shape).duplicate()};
    }
}
