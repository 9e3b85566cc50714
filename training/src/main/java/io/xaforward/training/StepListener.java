package io.xaforward.training;

/**
 * Progress callback of {@link DataParallelTrainer#train}, after every step: printing, plotting, collecting results,
 * or writing a checkpoint ({@link DataParallelTrainer#saveCheckpoint}).
 */
@FunctionalInterface
public interface StepListener {

    void onStep(StepStats stats);
}
