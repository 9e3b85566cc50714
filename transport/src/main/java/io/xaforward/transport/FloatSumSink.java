package io.xaforward.transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Adds the received float32 values element-wise into the destination ({@code dest[i] += chunk[i]}) in one pass over
 * the receive buffer: the reduce step of a reduce-scatter needs no staging copy. Floats are little-endian, the byte
 * order of the gradient buffers on every supported host (x86-64, aarch64), sent as raw bytes.
 */
public final class FloatSumSink implements ChunkSink {
    public static final FloatSumSink INSTANCE = new FloatSumSink();

    private static final ValueLayout.OfFloat FLOAT_LE =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Override
    public void accept(MemorySegment dest, long destOffset, MemorySegment payload, long payloadOffset, int length) {
        if ((length & 3) != 0 || (destOffset & 3) != 0) {
            throw new IllegalArgumentException("float chunk at offset " + destOffset + " with " + length
                    + " bytes is not a whole number of floats");
        }
        for (int i = 0; i < length; i += Float.BYTES) {
            float sum = dest.get(FLOAT_LE, destOffset + i) + payload.get(FLOAT_LE, payloadOffset + i);
            dest.set(FLOAT_LE, destOffset + i, sum);
        }
    }
}
