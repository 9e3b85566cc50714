package io.xaforward.training;

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
}
