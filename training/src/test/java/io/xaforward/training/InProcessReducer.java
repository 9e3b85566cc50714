package io.xaforward.training;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * All-reduce among W trainers running as threads of one JVM: each rank publishes a copy of its buffer, waits for
 * the others, then sums the copies in rank order (so every rank computes bitwise the same mean, whatever the thread
 * arrival order) and waits once more before the copies may be overwritten. Used to test data-parallel equivalence
 * without a network. Every wait has a timeout, so a missing rank fails the step instead of hanging it.
 */
public final class InProcessReducer {

    private final int worldSize;
    private final CyclicBarrier barrier;
    private final long timeoutMillis;
    private final float[][] published;
    private final double[][] publishedSums;

    public InProcessReducer(int worldSize, long timeoutMillis) {
        if (worldSize <= 0) {
            throw new IllegalArgumentException("world size must be positive: " + worldSize);
        }
        this.worldSize = worldSize;
        this.barrier = new CyclicBarrier(worldSize);
        this.timeoutMillis = timeoutMillis;
        this.published = new float[worldSize][];
        this.publishedSums = new double[worldSize][];
    }

    public int worldSize() {
        return worldSize;
    }

    /** The reducer handle that rank {@code rank} passes to its trainer. */
    public GradientReducer forRank(int rank) {
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " outside world of size " + worldSize);
        }
        return (segment, count) -> reduce(rank, segment, count);
    }

    /** The evaluation-statistics reducer of rank {@code rank} (shares this group's barrier: one call at a time). */
    public SumReducer sumsForRank(int rank) {
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " outside world of size " + worldSize);
        }
        return values -> sum(rank, values);
    }

    private void sum(int rank, double[] values) {
        publishedSums[rank] = values.clone();
        await();
        double[] total = new double[values.length];
        for (int r = 0; r < worldSize; r++) {
            if (publishedSums[r].length != values.length) {
                throw new IllegalStateException("rank " + r + " summed " + publishedSums[r].length + " values, rank "
                        + rank + " " + values.length);
            }
            for (int i = 0; i < values.length; i++) {
                total[i] += publishedSums[r][i];
            }
        }
        System.arraycopy(total, 0, values, 0, values.length);
        await();
    }

    private void reduce(int rank, MemorySegment segment, int count) {
        float[] mine = published[rank];
        if (mine == null || mine.length != count) {
            mine = new float[count];
            published[rank] = mine;
        }
        MemorySegment.copy(segment, ValueLayout.JAVA_FLOAT, 0, mine, 0, count);
        await();
        for (int r = 0; r < worldSize; r++) {
            if (published[r].length != count) {
                throw new IllegalStateException("rank " + r + " reduced " + published[r].length + " floats, rank "
                        + rank + " " + count);
            }
        }
        for (int i = 0; i < count; i++) {
            double sum = 0;
            for (int r = 0; r < worldSize; r++) {
                sum += published[r][i];
            }
            segment.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (sum / worldSize));
        }
        await();
    }

    private void await() {
        try {
            barrier.await(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted in all-reduce", e);
        } catch (BrokenBarrierException | TimeoutException e) {
            barrier.reset();
            throw new IllegalStateException("all-reduce peer missing after " + timeoutMillis + " ms", e);
        }
    }
}
