package io.xaforward.training;

import ai.djl.ndarray.NDArray;
import ai.djl.nn.Parameter;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * The one flat buffer a rank's gradients are all-reduced in: every parameter's gradient at its offset in the model's
 * fixed parameter order, then one float for the step's loss (so the mean loss travels with the mean gradient).
 */
final class FlatGradients {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;

    private final List<Parameter> parameters;
    private final long[] offsets;
    private final MemorySegment flat;
    private final long floats;

    /** @param flat at least {@code floats + 1} floats: the gradients, then the loss */
    FlatGradients(List<Parameter> parameters, MemorySegment flat) {
        this.parameters = parameters;
        this.offsets = new long[parameters.size() + 1];
        for (int i = 0; i < parameters.size(); i++) {
            offsets[i + 1] = offsets[i] + parameters.get(i).getArray().size();
        }
        this.floats = offsets[parameters.size()];
        if (flat.byteSize() < (floats + 1) * Float.BYTES) throw new IllegalArgumentException("flat buffer too small");
        this.flat = flat;
    }

    MemorySegment flat() {
        return flat;
    }

    int parameterCount() {
        return parameters.size();
    }

    /** Gradient floats (the loss float not counted). */
    long floats() {
        return floats;
    }

    /** Offset (in floats) of parameter {@code p}'s gradient; {@code parameterCount()} gives the loss float's. */
    long offset(int p) {
        return offsets[p];
    }

    void loss(float value) {
        flat.setAtIndex(F32, floats, value);
    }

    float loss() {
        return flat.getAtIndex(F32, floats);
    }

    /**
     * Copies the gradients of parameters [from, to) into their place in the flat buffer and zeroes them (backward
     * accumulates into gradients, and the optimizer reads the flat buffer, not the tensors).
     */
    void gather(int from, int to) {
        for (int p = from; p < to; p++) {
            try (NDArray grad = parameters.get(p).getArray().getGradient()) {
                MemorySegment gradMemory = gradientMemory(grad);
                MemorySegment.copy(gradMemory, 0, flat, offsets[p] * Float.BYTES, gradMemory.byteSize());
                gradMemory.fill((byte) 0);
            }
        }
    }

    /** Sum of squares of flat floats [from, to), summed in index order (identical on every rank). */
    double sumOfSquares(long from, long to) {
        double sum = 0;
        for (long i = from; i < to; i++) {
            double g = flat.getAtIndex(F32, i);
            sum += g * g;
        }
        return sum;
    }

    private static MemorySegment gradientMemory(NDArray grad) {
        ByteBuffer buffer = grad.toByteBuffer(true);
        if (!buffer.isDirect() || buffer.capacity() != grad.size() * Float.BYTES) {
            throw new IllegalStateException("gradient is not a dense float32 tensor in native memory");
        }
        return MemorySegment.ofBuffer(buffer);
    }
}
