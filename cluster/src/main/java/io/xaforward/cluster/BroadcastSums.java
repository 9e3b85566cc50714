package io.xaforward.cluster;

import io.xaforward.collective.Collectives;
import io.xaforward.training.SumReducer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The evaluation statistics' all-reduce over a job's {@link Collectives}: every rank broadcasts its few doubles in
 * turn and every rank adds all of them in rank order. Broadcasts carry bytes, so the sums are exact and bitwise the
 * same on every rank whatever number format the gradient all-reduce puts on the wire (bf16 would keep only three
 * digits of a loss). One broadcast per rank of a few dozen bytes: negligible next to the forward passes of an
 * evaluation.
 */
public final class BroadcastSums implements SumReducer {
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Collectives collectives;
    private final int rank;
    private final int worldSize;

    public BroadcastSums(Collectives collectives) {
        this.collectives = collectives;
        this.rank = collectives.group().rank();
        this.worldSize = collectives.group().worldSize();
    }

    @Override
    public void allReduceSum(double[] values) {
        long slot = (long) values.length * Double.BYTES;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment all = arena.allocate(slot * worldSize, Double.BYTES);
            MemorySegment.copy(values, 0, all, F64, rank * slot, values.length);
            for (int r = 0; r < worldSize; r++) {
                collectives.broadcast(all.asSlice(r * slot, slot), r);
            }
            Arrays.fill(values, 0);
            for (int r = 0; r < worldSize; r++) {
                for (int i = 0; i < values.length; i++) {
                    values[i] += all.getAtIndex(F64, (long) r * values.length + i);
                }
            }
        }
    }
}
