package io.xaforward.cluster;

import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.StepListener;
import io.xaforward.training.StepStats;
import io.xaforward.training.SumReducer;
import io.xaforward.training.TrainerConfig;
import io.xaforward.training.TrainingData;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The training half of a rank, the same for {@code xaf train}'s worker processes ({@link WorkerMain}) and
 * {@code xaf worker} ({@link io.xaforward.cluster.deploy.ClusterWorker}): once the rank is wired (its
 * {@link RankRuntime}: transport, collectives, progress lines) and its synchronisation groups are up, it builds the
 * trainer, records the run's settings, lets the caller's {@link Checkpoints} put it at its starting step, prints the
 * {@code start} line, trains with a {@code step} line per step (weight checksums every {@code checksumEvery} steps,
 * DiLoCo's synced checksum and outer bytes under diloco), a {@code checkpoint} line per checkpoint the trainer writes,
 * writes the final checkpoint and ends with the {@code done} line that carries the weight checksum.
 */
public final class TrainingRank {
    private TrainingRank() {}

    /** Where a kind of rank starts from and what it writes: its checkpoints, named its way. */
    public interface Checkpoints {
        /**
         * Puts the new trainer at its starting step (a resume file, or the step every rank agreed on) and returns the
         * {@code start} line's fields after {@code rank} and {@code params}.
         */
        Object[] start(DataParallelTrainer trainer) throws Exception;

        /** After every step: a periodic checkpoint of the job, if it is one this rank writes. */
        default void afterStep(DataParallelTrainer trainer) throws Exception {
        }

        /** After the last step: the final checkpoint, if this rank writes one. */
        void last(DataParallelTrainer trainer) throws Exception;
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
            runtime.report("start", start.toArray());
            trainer.train(new StepListener() {
                @Override
                public void onStep(StepStats s) {
                    if (trainer.diloco()) {
                        runtime.reportStep(s, checksumEvery, config.steps(), trainer::syncedChecksum, sync::outerWanBytes);
                    } else {
                        runtime.reportStep(s, checksumEvery, config.steps(), trainer::weightChecksum);
                    }
                    try {
                        checkpoints.afterStep(trainer);
                    } catch (RuntimeException e) {
                        throw e;
                    } catch (Exception e) {
                        throw new IllegalStateException("rank " + rank + ": checkpoint after step "
                                + trainer.completedSteps() + ": " + e.getMessage(), e);
                    }
                }

                @Override
                public void onCheckpoint(long completedSteps, Path file) {
                    runtime.report("checkpoint", "step", completedSteps, "file", file);
                }
            });
            checkpoints.last(trainer);
            runtime.finish("checksum", Long.toHexString(trainer.weightChecksum()));
        }
    }
}
