package io.xaforward.transport;

/** Bit operations on {@code long[]} bitmaps, with a word offset so one pooled array can hold several bitmaps. */
final class Bitmaps {
    private Bitmaps() {
    }

    static int wordsFor(int bits) {
        return (bits + 63) >>> 6;
    }

    static boolean get(long[] words, int baseWord, int bit) {
        return (words[baseWord + (bit >>> 6)] & (1L << bit)) != 0;
    }

    static void set(long[] words, int baseWord, int bit) {
        words[baseWord + (bit >>> 6)] |= 1L << bit;
    }

    static void clear(long[] words, int baseWord, int bit) {
        words[baseWord + (bit >>> 6)] &= ~(1L << bit);
    }

    /** The 64 bits starting at bit {@code start} (bit 0 of the result = bit {@code start}); zeros past the end. */
    static long window64(long[] words, int baseWord, int wordCount, int start) {
        int word = start >>> 6;
        int shift = start & 63;
        if (word >= wordCount) {
            return 0;
        }
        long low = words[baseWord + word] >>> shift;
        if (shift == 0 || word + 1 >= wordCount) {
            return low;
        }
        return low | (words[baseWord + word + 1] << (64 - shift));
    }

    static int count(long[] words, int baseWord, int wordCount) {
        int total = 0;
        for (int i = 0; i < wordCount; i++) {
            total += Long.bitCount(words[baseWord + i]);
        }
        return total;
    }
}
