package io.xaforward.training;

import java.nio.file.Path;

/** Progress callback of {@link DataParallelTrainer#train}: printing, plotting, or collecting results. */
@FunctionalInterface
public interface StepListener {

    void onStep(StepStats stats);

    /** Called after a checkpoint was written. */
    default void onCheckpoint(long completedSteps, Path file) {
    }
}
