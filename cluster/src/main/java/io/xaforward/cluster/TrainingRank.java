package io.xaforward.cluster;

import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.SumReducer;
import io.xaforward.training.TrainerConfig;
import io.xaforward.training.TrainingData;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The training half of a rank, the same for {@code xaf train}'s worker processes ({@link WorkerMain}) and
 * {@code xaf worker} ({@link io.xaforward.cluster.deploy.ClusterWorker}): once the rank is wired (its
 * {@link RankRuntime}: transport, collectives, progress lines) and its synchronisation groups are up, it builds the
 * trainer, records the run's settings, lets the caller's {@link Checkpoints} put it at its starting step, prints the
 * {@code start} line, trains with a {@code step} line per step (weight checksums every {@code checksumEvery} steps,
 * DiLoCo's synced checksum and outer bytes under diloco), writes a checkpoint every
 * {@link TrainerConfig#checkpointEvery()} steps where the caller names a file for this rank (with a {@code checkpoint}
 * line), writes the final checkpoint and ends with the {@code done} line that carries the weight checksum. Every
 * checkpoint goes through {@link DataParallelTrainer#saveCheckpoint}: one format for both kinds of rank.
 */
public final class TrainingRank {
    private TrainingRank() {}

    /** Where a kind of rank starts from and which checkpoint files it writes ({@link CheckpointNames}). */
    public interface Checkpoints {
        /**
         * Puts the new trainer at its starting step (a resume file, or the step every rank agreed on) and returns the
         * {@code start} line's fields after {@code rank} and {@code params}.
         */
        Object[] start(DataParallelTrainer trainer) throws Exception;

        /** The file this rank writes the checkpoint due after {@code completedSteps} steps into; null: none. */
        Path periodic(long completedSteps);

        /** The file this rank writes its final checkpoint into; null: none. */
        Path last();
    }

    /**
     * Trains this rank to the end of {@code config}'s steps.
     *
     * @param validation the sum of the ranks' validation shards (null: ranks only evaluate alone)
     * @param settings   every option of the run as JSON, recorded in every checkpoint; null: none
     */
    public static void run(RankRuntime runtime, SyncGroups sync, TrainerConfig config, TrainingData.Opened data,
                           SumReducer validation, String settings, long checksumEvery, Checkpoints checkpoints)
            throws Exception {
        int rank = runtime.rank();
        try (DataParallelTrainer trainer = new DataParallelTrainer(config, data.train(), data.validation(), rank,
                runtime.collectives().group().worldSize(), sync.inner(), validation, sync.outer())) {
            if (settings != null) trainer.recordSettings(settings);
            List<Object> start = new ArrayList<>(List.of("rank", rank, "params", trainer.parameterCount()));
            start.addAll(List.of(checkpoints.start(trainer)));
            long warmUpStart = System.nanoTime();
            int warmUpRounds = runtime.warmUp(Math.toIntExact(Math.min(Integer.MAX_VALUE, trainer.parameterCount())));
            start.addAll(List.of("warmup_allreduces", warmUpRounds,
                    "warmup_ms", Math.round((System.nanoTime() - warmUpStart) / 1e6)));
            runtime.report("start", start.toArray());
            trainer.train(s -> {
                if (trainer.diloco()) {
                    runtime.reportStep(s, checksumEvery, config.steps(), trainer::syncedChecksum, sync::outerWanBytes);
                } else {
                    runtime.reportStep(s, checksumEvery, config.steps(), trainer::weightChecksum);
                }
                long done = trainer.completedSteps();
                Path file = config.checkpointDue(done) ? checkpoints.periodic(done) : null;
                if (file != null) {
                    try {
                        trainer.saveCheckpoint(file);
                    } catch (IOException e) {
                        throw new UncheckedIOException("rank " + rank + " could not write the checkpoint of step "
                                + done + " to " + file, e);
                    }
                    runtime.report("checkpoint", "step", done, "file", file);
                }
            });
            Path last = checkpoints.last();
            if (last != null) trainer.saveCheckpoint(last);
            runtime.finish("checksum", Long.toHexString(trainer.weightChecksum()));
        }
    }
}
