package io.xaforward.training;

/**
 * One micro-batch of next-token windows, row-major [batchSize, contextLength]; targets are inputs shifted by one.
 *
 * @param offsets start position of each window in its dataset (for sharding checks and debugging)
 */
public record Batch(int batchSize, int contextLength, long[] offsets, long[] inputs, long[] targets) {

    /** The windows of {@code contextLength + 1} tokens of {@code data} that start at {@code offsets}. */
    public static Batch windows(TokenDataset data, int contextLength, long[] offsets) {
        int b = offsets.length;
        long[] inputs = new long[b * contextLength];
        long[] targets = new long[b * contextLength];
        for (int row = 0; row < b; row++) {
            for (int j = 0; j < contextLength; j++) {
                inputs[row * contextLength + j] = data.tokenAt(offsets[row] + j);
                targets[row * contextLength + j] = data.tokenAt(offsets[row] + j + 1);
            }
        }
        return new Batch(b, contextLength, offsets, inputs, targets);
    }
}
