package io.xaforward.training;

/**
 * One micro-batch of next-token windows, row-major [batchSize, contextLength]; targets are inputs shifted by one.
 *
 * @param offsets start position of each window in its dataset (for sharding checks and debugging)
 */
public record Batch(int batchSize, int contextLength, long[] offsets, long[] inputs, long[] targets) {
}
