package io.xaforward.collective;

import io.xaforward.transport.MessageId;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Message id layout and float access shared by the algorithms. The 32-bit bucket id of a {@link MessageId} is
 * {@code kind << 30 | bucket * slotsPerBucket + slot}: the kind keeps all-reduce, broadcast and barrier traffic of
 * the same step number apart, the slot the several messages one pair of ranks exchanges for one bucket.
 */
final class Wire {
    static final int KIND_ALL_REDUCE = 0;
    static final int KIND_BROADCAST = 1;
    static final int KIND_BARRIER = 2;
    static final int MAX_INDEX = (1 << 30) - 1;

    /** Gradients are little-endian float32 on every supported host, as {@code FloatSumSink} assumes. */
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private Wire() {
    }

    static MessageId id(int jobId, int kind, int step, int bucket, int slotsPerBucket, int slot) {
        long index = (long) bucket * slotsPerBucket + slot;
        if (index > MAX_INDEX) {
            throw new IllegalArgumentException("bucket " + bucket + " needs message index " + index
                    + " beyond 2^30: use larger buckets");
        }
        return new MessageId(jobId, step, kind << 30 | (int) index);
    }

    /** Start of part {@code i} of {@code n} balanced parts of {@code length} elements. */
    static int partStart(int length, int parts, int i) {
        return (int) ((long) length * i / parts);
    }

    /**
     * Start of part {@code i} of {@code n} parts of {@code length} elements cut in whole units of {@code unit}
     * elements (the last unit may be short): balanced in units, so a part may be empty when there are fewer units
     * than parts. With unit 1 it is {@link #partStart(int, int, int)}.
     */
    static int partStart(int length, int parts, int i, int unit) {
        long units = ((long) length + unit - 1) / unit;
        return (int) Math.min(length, units * i / parts * unit);
    }

    static MemorySegment floats(MemorySegment base, long firstFloat, long floatCount) {
        return base.asSlice(firstFloat * Float.BYTES, floatCount * Float.BYTES);
    }
}
