package io.xaforward.training;

import java.lang.foreign.MemorySegment;

/**
 * The one collective a data-parallel step needs: replace the local buffer, in place, by the element-wise mean of
 * the buffers of all ranks. Every rank makes the same sequence of calls with the same lengths: once per step over
 * the whole buffer after backward, or (with overlap) once per finished suffix of the buffer, last parameters first,
 * from one communication thread while backward continues. The collective module implements it over the network;
 * the tests implement it across threads.
 *
 * <p>The buffer holds float32 values in native byte order: all parameter gradients in the trainer's fixed parameter
 * order, followed by one extra float carrying the rank's local loss (so the mean loss comes back for free; with
 * overlap the first call of a step covers it).
 * Implementations must not keep the segment after returning.
 */
@FunctionalInterface
public interface GradientReducer {

    /**
     * @param flatGradients float32 values, native order, at least floatCount * 4 bytes
     * @param floatCount    number of floats to average
     */
    void allReduceMean(MemorySegment flatGradients, int floatCount);

    /** The reducer of a world of one: the mean of one buffer is itself. */
    static GradientReducer single() {
        return (segment, count) -> { };
    }
}
