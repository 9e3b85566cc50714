package io.xaforward.training;

/**
 * The collective an evaluation needs: replace a few local doubles, in place, by their element-wise sum over all
 * ranks. Every rank must get bitwise the same sums (so every rank reports the same validation loss), and the sums
 * must be exact to double precision whatever format gradients travel in on the wire: implementations exchange the
 * values themselves and add them in rank order, rather than reusing the gradient all-reduce.
 */
@FunctionalInterface
public interface SumReducer {

    void allReduceSum(double[] values);

    /** The reducer of a world of one: the sum over one rank is its own value. */
    static SumReducer single() {
        return values -> { };
    }
}
