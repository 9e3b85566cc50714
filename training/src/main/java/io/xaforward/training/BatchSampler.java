package io.xaforward.training;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Deterministic data-parallel sampling: the global batch of step s is a pure function of (seed, s) - a set of
 * distinct window offsets - and rank r of W takes the r-th contiguous slice of it. Ranks therefore never overlap
 * within a step, their union is exactly what a single trainer on the global batch would see, and the sampler has no
 * state to checkpoint beyond the step number.
 */
public final class BatchSampler {

    private final TokenDataset data;
    private final int contextLength;
    private final int globalBatch;
    private final int worldSize;
    private final int rank;
    private final long seed;
    private final long windowCount;

    public BatchSampler(TokenDataset data, int contextLength, int globalBatch, int worldSize, int rank, long seed) {
        if (worldSize <= 0 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " outside world of size " + worldSize);
        }
        if (globalBatch <= 0 || globalBatch % worldSize != 0) {
            throw new IllegalArgumentException("global batch " + globalBatch + " must be a positive multiple of world size "
                    + worldSize);
        }
        if (data.size() < contextLength + 1L) {
            throw new IllegalArgumentException("dataset of " + data.size() + " tokens is shorter than context length "
                    + contextLength + " + 1");
        }
        this.windowCount = data.size() - contextLength;
        if (windowCount < globalBatch) {
            throw new IllegalArgumentException("dataset of " + data.size() + " tokens has only " + windowCount
                    + " windows of " + (contextLength + 1) + " tokens, fewer than the global batch " + globalBatch);
        }
        this.data = data;
        this.contextLength = contextLength;
        this.globalBatch = globalBatch;
        this.worldSize = worldSize;
        this.rank = rank;
        this.seed = seed;
    }

    public int localBatch() {
        return globalBatch / worldSize;
    }

    /** Distinct window offsets of the whole global batch of {@code step}, identical on every rank. */
    public long[] globalOffsets(long step) {
        SplittableRandom random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + step);
        long[] offsets = new long[globalBatch];
        Set<Long> used = new HashSet<>();
        for (int i = 0; i < globalBatch; ) {
            long offset = random.nextLong(windowCount);
            if (used.add(offset)) {
                offsets[i++] = offset;
            }
        }
        return offsets;
    }

    /** This rank's share of {@link #globalOffsets(long)}. */
    public long[] localOffsets(long step) {
        int local = localBatch();
        return Arrays.copyOfRange(globalOffsets(step), rank * local, (rank + 1) * local);
    }

    /** Inputs and shifted targets of this rank's micro-batch for {@code step}. */
    public Batch batch(long step) {
        return Batch.windows(data, contextLength, localOffsets(step));
    }
}
