package io.xaforward.training;

/**
 * A read-only stream of token ids. Implementations validate on open, so a training loop never sees an id outside
 * [0, vocabSize).
 */
public interface TokenDataset {

    /** Number of tokens. */
    long size();

    /** Exclusive upper bound of token ids. */
    int vocabSize();

    /** Token at {@code index} (0 <= index < size). */
    int tokenAt(long index);

    /** A view of tokens [from, to). */
    default TokenDataset slice(long from, long to) {
        if (from < 0 || to > size() || from > to) {
            throw new IndexOutOfBoundsException("slice [" + from + ", " + to + ") of " + size() + " tokens");
        }
        TokenDataset parent = this;
        return new TokenDataset() {
            @Override
            public long size() {
                return to - from;
            }

            @Override
            public int vocabSize() {
                return parent.vocabSize();
            }

            @Override
            public int tokenAt(long index) {
                return parent.tokenAt(from + index);
            }
        };
    }

    /**
     * Splits into a leading training part and a trailing validation part (contiguous, so no window crosses the
     * boundary and validation text is never trained on).
     */
    default Split split(double validationFraction) {
        if (!(validationFraction > 0 && validationFraction < 1)) {
            throw new IllegalArgumentException("validation fraction must be in (0, 1): " + validationFraction);
        }
        long validation = Math.max(1, Math.round(size() * validationFraction));
        long train = size() - validation;
        return new Split(slice(0, train), slice(train, size()));
    }

    /** Training and validation halves of one dataset. */
    record Split(TokenDataset train, TokenDataset validation) {
    }
}
