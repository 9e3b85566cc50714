package io.xaforward.training;

/** Token ids held in memory, e.g. a text file tokenized when it is opened. */
public final class IdArrayDataset implements TokenDataset {

    private final int[] ids;
    private final int vocabSize;

    /** @throws IllegalArgumentException for no ids or an id outside [0, vocabSize) */
    public IdArrayDataset(int[] ids, int vocabSize) {
        if (ids.length == 0) {
            throw new IllegalArgumentException("empty token dataset");
        }
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0 || ids[i] >= vocabSize) {
                throw new IllegalArgumentException("token id " + ids[i] + " at position " + i + " outside vocabulary "
                        + vocabSize);
            }
        }
        this.ids = ids;
        this.vocabSize = vocabSize;
    }

    @Override
    public long size() {
        return ids.length;
    }

    @Override
    public int vocabSize() {
        return vocabSize;
    }

    @Override
    public int tokenAt(long index) {
        return ids[Math.toIntExact(index)];
    }
}
