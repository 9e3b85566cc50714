package io.xaforward.cluster;

import io.xaforward.training.DataParallelTrainer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Periodic checkpoints of a distributed job. Every rank holds identical weights and optimizer state, so rank 0
 * alone writes them; any rank (or a new job with {@code --resume}) can start from the file.
 */
public final class JobCheckpoints {
    private JobCheckpoints() {}

    /** The checkpoint written after {@code completedSteps} steps. */
    public static Path file(TrainJobSpec spec, long completedSteps) {
        return spec.checkpointDir().resolve(String.format(Locale.ROOT, "step-%06d.ckpt", completedSteps));
    }

    /** Called after every step: rank 0 writes a checkpoint every {@link TrainJobSpec#checkpointEvery()} steps. */
    static void afterStep(TrainJobSpec spec, int rank, DataParallelTrainer trainer) {
        long done = trainer.completedSteps();
        if (rank != 0 || spec.checkpointEvery() <= 0 || done % spec.checkpointEvery() != 0) return;
        try {
            trainer.saveCheckpoint(file(spec, done));
        } catch (IOException e) {
            throw new UncheckedIOException("rank 0 could not write the checkpoint of step " + done, e);
        }
    }
}
