package io.xaforward.training;

import java.util.Arrays;
import java.util.Objects;

/**
 * Validation loss of a data-parallel job, sharded across its ranks. The validation split is cut into
 * non-overlapping windows of {@code contextLength + 1} tokens starting at token 0 (window k predicts tokens
 * kT+1 .. kT+T from the tokens before them in the window, T = context length), so every token of the split except
 * the first and the last (size - 1) mod T is predicted exactly once. A split of at most {@code maxWindows} windows is
 * evaluated whole; a larger one through {@code maxWindows} windows spread evenly over it. The same windows are used
 * at every evaluation, so successive figures differ only by what the model learned.
 *
 * <p>Rank r of W evaluates windows r, r + W, r + 2W ... of that list, then the ranks all-reduce the count, sum and
 * sum of squares of their per-window losses: the mean is that of one process over the same windows (up to float
 * rounding inside the forward pass), and evaluating costs each rank 1/W of the windows.
 */
public final class Evaluator {

    /** The mean next-token loss of each window (row) of a micro-batch, computed without gradients. */
    @FunctionalInterface
    public interface WindowLosses {
        float[] of(Batch batch);
    }

    private final TokenDataset validation;
    private final int contextLength;
    private final int microBatch;
    private final SumReducer sums;
    private final long splitWindows;
    private final long[] windows;
    private final long[] local;

    /**
     * @param maxWindows windows per evaluation when the split holds more (the whole split otherwise)
     * @param microBatch windows per forward pass
     * @param sums       adds the ranks' statistics ({@link SumReducer#single()} for one rank)
     */
    public Evaluator(TokenDataset validation, int contextLength, int maxWindows, int microBatch, int rank,
                     int worldSize, SumReducer sums) {
        if (worldSize <= 0 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " outside world of size " + worldSize);
        }
        if (maxWindows <= 0 || microBatch <= 0 || contextLength <= 0) {
            throw new IllegalArgumentException("evaluation needs positive windows, micro-batch and context length: "
                    + maxWindows + ", " + microBatch + ", " + contextLength);
        }
        this.validation = Objects.requireNonNull(validation);
        this.contextLength = contextLength;
        this.microBatch = microBatch;
        this.sums = Objects.requireNonNull(sums);
        this.splitWindows = splitWindows(validation.size(), contextLength);
        if (splitWindows == 0) {
            throw new IllegalArgumentException("validation split of " + validation.size() + " tokens is shorter than "
                    + "one window of " + (contextLength + 1) + " tokens");
        }
        this.windows = offsets(splitWindows, maxWindows, contextLength);
        this.local = shard(windows, rank, worldSize);
    }

    /** Non-overlapping windows of {@code contextLength + 1} tokens, starting at token 0, in a split of this size. */
    public static long splitWindows(long tokens, int contextLength) {
        return tokens < 1 ? 0 : (tokens - 1) / contextLength;
    }

    /** All windows evaluated, by start offset, in order: all of the split's, or {@code max} spread evenly. */
    static long[] offsets(long splitWindows, int max, int contextLength) {
        int n = (int) Math.min(splitWindows, max);
        long[] offsets = new long[n];
        for (int i = 0; i < n; i++) {
            // floor(i * splitWindows / n) is strictly increasing in i because splitWindows >= n.
            offsets[i] = Math.multiplyExact(i, splitWindows) / n * contextLength;
        }
        return offsets;
    }

    private static long[] shard(long[] all, int rank, int worldSize) {
        long[] mine = new long[(all.length - rank + worldSize - 1) / worldSize];
        for (int i = 0; i < mine.length; i++) {
            mine[i] = all[rank + i * worldSize];
        }
        return mine;
    }

    /** Start offsets of every window evaluated (over all ranks). */
    public long[] windowOffsets() {
        return windows.clone();
    }

    /** Start offsets of the windows this rank evaluates. */
    public long[] localOffsets() {
        return local.clone();
    }

    /** Evaluates this rank's windows and combines the statistics of all ranks (every rank must call it). */
    public Evaluation evaluate(WindowLosses model) {
        double[] totals = new double[3]; // count, sum, sum of squares
        for (int from = 0; from < local.length; from += microBatch) {
            long[] offsets = Arrays.copyOfRange(local, from, Math.min(local.length, from + microBatch));
            float[] losses = model.of(Batch.windows(validation, contextLength, offsets));
            if (losses.length != offsets.length) {
                throw new IllegalStateException(losses.length + " losses for " + offsets.length + " windows");
            }
            for (float loss : losses) {
                totals[0]++;
                totals[1] += loss;
                totals[2] += (double) loss * loss;
            }
        }
        sums.allReduceSum(totals);
        if (totals[0] != windows.length) {
            throw new IllegalStateException("the ranks evaluated " + (long) totals[0] + " windows together, expected "
                    + windows.length + " (do all ranks use the same validation data and settings?)");
        }
        return Evaluation.of(totals[1], totals[2], windows.length, splitWindows);
    }
}
