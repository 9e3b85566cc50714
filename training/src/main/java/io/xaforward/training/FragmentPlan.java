package io.xaforward.training;

import java.util.Arrays;

/**
 * Streaming DiLoCo's fragments and their schedule. The parameters (tensors in the trainer's flat order) are split
 * into F fragments of whole layers: fragment f holds transformer blocks [f*L/F, (f+1)*L/F), fragment 0 also the
 * embeddings before block 0, fragment F-1 also the final LayerNorm (and an untied head) after the last block.
 *
 * <p>Schedule, with steps counted as completed inner steps t = 1, 2, ...: fragment f starts its outer sync after
 * step t when t >= 1 and (t - offset_f) mod H == 0, with offset_f = floor((f+1)*H/F) mod H. The offsets are F
 * distinct steps spread evenly over a round (F <= H), and the last fragment syncs at multiples of H, so with F = 1
 * this is plain DiLoCo (every H steps). A sync started after step t is applied after step t + D.
 */
final class FragmentPlan {
    private final int syncEvery;
    private final int delay;
    /** Fragment f is tensors [firstTensor[f], firstTensor[f+1]). */
    private final int[] firstTensor;
    private final int[] offset;

    /**
     * @param tensorLayer per tensor in flat order: -1 before the first block (embeddings), b for block b, {@code layers}
     *                    after the last block; must not decrease along the flat order
     */
    FragmentPlan(int[] tensorLayer, int layers, DilocoConfig config) {
        int fragments = config.fragments();
        if (fragments > layers) {
            throw new IllegalArgumentException(fragments + " fragments for " + layers + " layers");
        }
        this.syncEvery = config.syncEvery();
        this.delay = config.fragmentSyncDelay();
        for (int i = 1; i < tensorLayer.length; i++) {
            if (tensorLayer[i] < tensorLayer[i - 1]) {
                throw new IllegalArgumentException("tensor " + i + " of layer " + tensorLayer[i] + " follows one of layer "
                        + tensorLayer[i - 1] + ": fragments of whole layers need the flat order to follow the layers");
            }
        }
        this.firstTensor = new int[fragments + 1];
        for (int f = 1; f < fragments; f++) {
            int firstBlock = (int) ((long) f * layers / fragments);
            int t = 0;
            while (t < tensorLayer.length && tensorLayer[t] < firstBlock) t++;
            firstTensor[f] = t;
        }
        firstTensor[fragments] = tensorLayer.length;
        this.offset = new int[fragments];
        for (int f = 0; f < fragments; f++) {
            offset[f] = (int) ((long) (f + 1) * syncEvery / fragments % syncEvery);
        }
    }

    int fragments() {
        return offset.length;
    }

    int firstTensor(int fragment) {
        return firstTensor[fragment];
    }

    /** One past the last tensor of {@code fragment}. */
    int endTensor(int fragment) {
        return firstTensor[fragment + 1];
    }

    /** The step offset of {@code fragment} within a round of H steps. */
    int offset(int fragment) {
        return offset[fragment];
    }

    /** Whether {@code fragment} starts an outer sync after completed inner step {@code step}. */
    boolean startsSyncAfter(int fragment, long step) {
        return step >= 1 && Math.floorMod(step - offset[fragment], (long) syncEvery) == 0;
    }

    /** The step after which a sync started after {@code step} is applied. */
    long applyStep(long step) {
        return step + delay;
    }

    @Override
    public String toString() {
        return "FragmentPlan[H=" + syncEvery + ", D=" + delay + ", first tensors " + Arrays.toString(firstTensor)
                + ", offsets " + Arrays.toString(offset) + "]";
    }
}
