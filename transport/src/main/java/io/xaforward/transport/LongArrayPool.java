package io.xaforward.transport;

import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * Reuses the per-message bitmaps and timestamp arrays so that a steady stream of same-sized gradient buckets
 * allocates nothing after warm-up. Arrays come in power-of-two sizes and are zeroed on acquire. Single-threaded
 * (the event loop).
 */
final class LongArrayPool {
    private static final int CLASSES = 31;
    private static final int MAX_POOLED_PER_CLASS = 64;

    @SuppressWarnings("unchecked")
    private final ArrayDeque<long[]>[] free = new ArrayDeque[CLASSES];

    LongArrayPool() {
        for (int i = 0; i < CLASSES; i++) {
            free[i] = new ArrayDeque<>();
        }
    }

    /** A zeroed array of at least {@code minLength} longs. */
    long[] acquire(int minLength) {
        int sizeClass = sizeClass(minLength);
        long[] array = free[sizeClass].pollFirst();
        if (array == null) {
            return new long[1 << sizeClass];
        }
        Arrays.fill(array, 0L);
        return array;
    }

    void release(long[] array) {
        int sizeClass = Integer.numberOfTrailingZeros(array.length);
        if (Integer.bitCount(array.length) == 1 && free[sizeClass].size() < MAX_POOLED_PER_CLASS) {
            free[sizeClass].addFirst(array);
        }
    }

    private static int sizeClass(int minLength) {
        return minLength <= 1 ? 0 : 32 - Integer.numberOfLeadingZeros(minLength - 1);
    }
}
