package io.xaforward.training;

/**
 * DiLoCo's outer loop (docs/TRAINING.md, "DiLoCo"): the inner optimizer (AdamW) steps every step on the gradient
 * averaged inside one data center; every {@code syncEvery} steps each fragment's pseudo-gradient (global parameters
 * minus this data center's) is averaged over the data centers and applied by SGD with Nesterov momentum. Names
 * follow torchft's {@code DiLoCo} ({@code sync_every}, {@code fragment_sync_delay}).
 *
 * @param syncEvery          H: inner steps between two syncs of one fragment (at least 1)
 * @param fragments          F: the parameters are split by layer into this many fragments, synced at staggered
 *                           steps (1 = all parameters at once, plain DiLoCo); at most H and at most the layer count
 * @param fragmentSyncDelay  D: steps between starting a fragment's outer all-reduce and applying it (0 = at once);
 *                           less than H, so a fragment's sync ends before its next one starts
 * @param outerLearningRate  the outer SGD's learning rate (DiLoCo: 0.7)
 * @param outerMomentum      the outer SGD's Nesterov momentum (DiLoCo: 0.9); 0 turns momentum off
 */
public record DilocoConfig(int syncEvery, int fragments, int fragmentSyncDelay, double outerLearningRate,
                           double outerMomentum) {

    /** H when none is given: DiLoCo's and Streaming DiLoCo's order of magnitude, ~50x fewer syncs than DDP. */
    public static final int DEFAULT_SYNC_EVERY = 50;
    public static final double DEFAULT_OUTER_LR = 0.7;
    public static final double DEFAULT_OUTER_MOMENTUM = 0.9;

    public DilocoConfig {
        if (syncEvery < 1) {
            throw new IllegalArgumentException("--sync-every must be at least 1, was " + syncEvery);
        }
        if (fragments < 1) {
            throw new IllegalArgumentException("--fragments must be at least 1, was " + fragments);
        }
        if (fragments > syncEvery) {
            throw new IllegalArgumentException("--fragments " + fragments + " is more than --sync-every " + syncEvery
                    + ": each fragment needs a step of its own in every round of H steps");
        }
        if (fragmentSyncDelay < 0 || fragmentSyncDelay >= syncEvery) {
            throw new IllegalArgumentException("--fragment-sync-delay must be in [0, --sync-every) = [0, " + syncEvery
                    + "), was " + fragmentSyncDelay + ": a fragment's outer all-reduce must be applied before its next"
                    + " sync starts");
        }
        if (!(outerLearningRate > 0) || Double.isInfinite(outerLearningRate)) {
            throw new IllegalArgumentException("--outer-lr must be a positive number, was " + outerLearningRate);
        }
        if (!(outerMomentum >= 0 && outerMomentum < 1)) {
            throw new IllegalArgumentException("--outer-momentum must be in [0, 1), was " + outerMomentum);
        }
    }

    /** Plain DiLoCo with the paper's outer optimizer: one fragment, no delay, lr 0.7, momentum 0.9. */
    public static DilocoConfig of(int syncEvery) {
        return new DilocoConfig(syncEvery, 1, 0, DEFAULT_OUTER_LR, DEFAULT_OUTER_MOMENTUM);
    }

    /** Refuses more fragments than the model has layers (a fragment is a run of whole transformer blocks). */
    public void checkModel(ModelConfig model) {
        if (fragments > model.layers()) {
            throw new IllegalArgumentException("--fragments " + fragments + " is more than the " + model.layers()
                    + " layers of preset " + model.name() + ": a fragment holds whole layers");
        }
    }
}
