package io.xaforward.training;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * DiLoCo in the trainer, four ranks in two data centers of two (threads of this JVM): the inner reducers average
 * inside each data center, the outer reducer over all four ranks (with equal data centers, the mean over ranks is
 * the mean over data centers, bitwise the same on every rank).
 */
class DilocoTrainerTest {
    private static final int WORLD = 4;
    private static TokenDataset.Split data;

    @BeforeAll
    static void corpus() {
        data = TextDataset.of(SyntheticCorpus.generate(7, 60_000)).split(0.1);
    }

    private static TrainerConfig.Builder config(long steps) {
        return TrainerConfig.builder("tiny").steps(steps).globalBatch(8).learningRate(3e-3).minLearningRate(3e-4)
                .warmupSteps(2).seed(42);
    }

    /** What one rank saw: per step its stats, local and global checksums; at the end its weights. */
    record RankRun(List<StepStats> stats, List<Long> local, List<Long> global, float[] weights, long checksum) {
    }

    private interface Setup {
        void before(DataParallelTrainer trainer) throws Exception;
    }

    /** Runs the four ranks to the config's end; {@code setup} runs on each trainer before training. */
    private static List<RankRun> runFour(TrainerConfig cfg, Setup setup) throws Exception {
        return runFour(cfg, setup, null);
    }

    /** The checkpoint {@link #runFour} writes for {@code rank} after {@code step} steps into {@code dir}. */
    private static Path checkpoint(Path dir, int rank, long step) {
        return dir.resolve("rank" + rank + "-step" + step + ".ckpt");
    }

    /**
     * As {@link #runFour(TrainerConfig, Setup)}, every rank writing its own checkpoint into {@code checkpoints} at
     * the steps the config makes due (none when null), from its step listener as the cluster's ranks do.
     */
    private static List<RankRun> runFour(TrainerConfig cfg, Setup setup, Path checkpoints) throws Exception {
        InProcessReducer[] dcs = {new InProcessReducer(2, 60_000), new InProcessReducer(2, 60_000)};
        InProcessReducer outer = new InProcessReducer(WORLD, 60_000);
        ExecutorService pool = Executors.newFixedThreadPool(WORLD);
        try {
            List<Future<RankRun>> futures = new ArrayList<>();
            for (int rank = 0; rank < WORLD; rank++) {
                int r = rank;
                futures.add(pool.submit(() -> {
                    try (DataParallelTrainer t = new DataParallelTrainer(cfg, data.train(), null, r, WORLD,
                            dcs[r / 2].forRank(r % 2), null, outer.forRank(r))) {
                        setup.before(t);
                        List<Long> local = new ArrayList<>();
                        List<Long> global = new ArrayList<>();
                        List<StepStats> stats = t.train(s -> {
                            local.add(t.weightChecksum());
                            global.add(t.syncedChecksum());
                            if (checkpoints != null && cfg.checkpointDue(t.completedSteps())) {
                                try {
                                    t.saveCheckpoint(checkpoint(checkpoints, r, t.completedSteps()));
                                } catch (IOException e) {
                                    throw new UncheckedIOException(e);
                                }
                            }
                        });
                        return new RankRun(stats, local, global, t.parameterSnapshot(), t.weightChecksum());
                    }
                }));
            }
            List<RankRun> runs = new ArrayList<>();
            for (Future<RankRun> f : futures) runs.add(f.get(180, TimeUnit.SECONDS));
            return runs;
        } finally {
            pool.shutdownNow();
        }
    }

    /** The outer loop's activity without its timing. */
    private static List<Long> schedule(StepStats s) {
        return List.of((long) s.outer().started(), (long) s.outer().applied(), s.outer().appliedFloats());
    }

    private static double relativeDistance(float[] a, float[] b) {
        double diff = 0;
        double norm = 0;
        for (int i = 0; i < a.length; i++) {
            double d = a[i] - b[i];
            diff += d * d;
            norm += (double) a[i] * a[i];
        }
        return Math.sqrt(diff / norm);
    }

    /**
     * H = 1, outer lr 1, momentum 0: the outer update sets the global model to the mean of the data centers' models
     * after one inner AdamW step each from the same weights (global - (global - mean) = mean). The reference is two
     * single-process trainers, one per data center, each on exactly its data center's share of the global batch
     * (rank d of a world of two takes the same contiguous slice as ranks 2d and 2d+1 of four), each keeping its own
     * AdamW state, whose parameters the test replaces by their mean after every step. Compared: every step's
     * weights of all four ranks against that mean, to 1e-5 relative L2 (float rounding: a data center averages two
     * half-batch gradients where the reference takes one gradient of the whole share), and the ranks bitwise equal.
     * This is not DDP with AdamW (whose single step uses the gradient of the whole global batch): averaging models
     * after separate AdamW steps is what DiLoCo with H = 1 does.
     */
    @Test
    void syncEveryStepWithOuterLrOneAndNoMomentumIsTheMeanOfTheDataCentersModels() throws Exception {
        int steps = 3;
        TrainerConfig plain = config(steps).build();
        TrainerConfig diloco = config(steps).diloco(new DilocoConfig(1, 1, 0, 1.0, 0.0)).build();

        List<float[]> reference = new ArrayList<>();
        try (DataParallelTrainer a = new DataParallelTrainer(plain, data.train(), null, 0, 2, GradientReducer.single());
             DataParallelTrainer b = new DataParallelTrainer(plain, data.train(), null, 1, 2, GradientReducer.single())) {
            for (int s = 0; s < steps; s++) {
                a.trainStep();
                b.trainStep();
                float[] wa = a.parameterSnapshot();
                float[] wb = b.parameterSnapshot();
                float[] mean = new float[wa.length];
                for (int i = 0; i < mean.length; i++) mean[i] = (wa[i] + wb[i]) / 2;
                a.setParameters(mean);
                b.setParameters(mean);
                reference.add(mean);
            }
        }

        List<float[][]> perStep = new ArrayList<>();
        for (int s = 0; s < steps; s++) perStep.add(new float[WORLD][]);
        InProcessReducer[] dcs = {new InProcessReducer(2, 60_000), new InProcessReducer(2, 60_000)};
        InProcessReducer outer = new InProcessReducer(WORLD, 60_000);
        ExecutorService pool = Executors.newFixedThreadPool(WORLD);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int rank = 0; rank < WORLD; rank++) {
                int r = rank;
                futures.add(pool.submit(() -> {
                    try (DataParallelTrainer t = new DataParallelTrainer(diloco, data.train(), null, r, WORLD,
                            dcs[r / 2].forRank(r % 2), null, outer.forRank(r))) {
                        for (int s = 0; s < steps; s++) {
                            StepStats stats = t.trainStep();
                            assertEquals(1, stats.outer().applied(), "every step syncs with H = 1");
                            perStep.get(s)[r] = t.parameterSnapshot();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) f.get(180, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        for (int s = 0; s < steps; s++) {
            for (int r = 0; r < WORLD; r++) {
                assertArrayEquals(perStep.get(s)[0], perStep.get(s)[r], "rank " + r + " step " + (s + 1));
            }
            double distance = relativeDistance(reference.get(s), perStep.get(s)[0]);
            assertTrue(distance < 1e-5, "step " + (s + 1) + ": relative L2 distance to the mean of the data centers' "
                    + "models " + distance);
        }
    }

    @Test
    void weightsAreIdenticalOnAllRanksAfterEveryOuterStepAndDifferBetweenDataCentersInBetween() throws Exception {
        TrainerConfig cfg = config(6).diloco(DilocoConfig.of(2)).build();
        List<RankRun> runs = runFour(cfg, t -> { });
        for (int s = 0; s < 6; s++) {
            boolean synced = runs.get(0).stats().get(s).outer().applied() > 0;
            assertEquals((s + 1) % 2 == 0, synced, "H = 2: a sync after every second step, step " + (s + 1));
            for (RankRun run : runs) {
                assertEquals(runs.get(0).global().get(s), run.global().get(s), "global model, step " + (s + 1));
                assertEquals(schedule(runs.get(0).stats().get(s)), schedule(run.stats().get(s)));
                if (synced) {
                    assertEquals(runs.get(0).local().get(s), run.local().get(s), "weights after the sync of step " + (s + 1));
                }
            }
            assertEquals(runs.get(0).local().get(s), runs.get(1).local().get(s), "one data center, step " + (s + 1));
            assertEquals(runs.get(2).local().get(s), runs.get(3).local().get(s), "one data center, step " + (s + 1));
            if (!synced) {
                assertNotEquals(runs.get(0).local().get(s), runs.get(2).local().get(s),
                        "between syncs the data centers train apart, step " + (s + 1));
            }
        }
        assertEquals(runs.get(0).stats().get(1).outer().appliedFloats(), runs.get(0).weights().length);
        float firstLoss = runs.get(0).stats().get(0).loss();
        float lastLoss = runs.get(0).stats().get(5).loss();
        assertTrue(lastLoss < firstLoss, "loss falls: " + firstLoss + " -> " + lastLoss);
    }

    /**
     * Streaming: two fragments, H = 4, delay 1. Fragment 0 starts after steps 2 and 6 (applied after 3 and 7),
     * fragment 1 after 4 (applied after 5) and at the end. The checkpoint after step 6 is written while fragment 0's
     * outer all-reduce is pending: resuming from it gives the uninterrupted run's losses and weights bitwise.
     */
    @Test
    void streamingWithDelayResumesFromACheckpointWithAPendingSyncExactly(@TempDir Path dir) throws Exception {
        TrainerConfig cfg = config(8).diloco(new DilocoConfig(4, 2, 1, 0.7, 0.9)).checkpointEvery(6)
                .checkpointDir(dir).build();
        List<RankRun> straight = runFour(cfg, t -> { }, dir);
        int[] started = {0, 1, 0, 1, 0, 1, 0, 2};
        int[] applied = {0, 0, 1, 0, 1, 0, 1, 2};
        for (int s = 0; s < 8; s++) {
            StepStats.Outer o = straight.get(0).stats().get(s).outer();
            assertEquals(started[s], o.started(), "fragments started after step " + (s + 1));
            assertEquals(applied[s], o.applied(), "fragments applied after step " + (s + 1));
        }
        for (RankRun run : straight) {
            assertEquals(straight.get(0).checksum(), run.checksum(), "every rank ends with the global model");
        }

        TrainerConfig resumedCfg = config(8).diloco(new DilocoConfig(4, 2, 1, 0.7, 0.9)).build();
        List<RankRun> resumed = runFour(resumedCfg, t -> t.loadCheckpoint(checkpoint(dir, t.rank(), 6)));
        for (int r = 0; r < WORLD; r++) {
            assertEquals(2, resumed.get(r).stats().size());
            for (int s = 0; s < 2; s++) {
                assertEquals(straight.get(r).stats().get(6 + s).loss(), resumed.get(r).stats().get(s).loss(),
                        "rank " + r + " loss of step " + (7 + s));
                assertEquals(schedule(straight.get(r).stats().get(6 + s)), schedule(resumed.get(r).stats().get(s)));
            }
            assertEquals(straight.get(r).checksum(), resumed.get(r).checksum(), "rank " + r + " final weights");
        }
    }

    @Test
    void aPlainTrainerRefusesADilocoCheckpointAndADilocoTrainerStartsFromAPlainOne(@TempDir Path dir) throws Exception {
        Path plainFile = dir.resolve("plain.bin");
        try (DataParallelTrainer t = new DataParallelTrainer(config(2).build(), data.train(), null, 0, 1,
                GradientReducer.single())) {
            t.train(null);
            t.saveCheckpoint(plainFile);
        }
        Path dilocoFile = dir.resolve("diloco.bin");
        TrainerConfig one = config(4).diloco(DilocoConfig.of(2)).build();
        try (DataParallelTrainer t = new DataParallelTrainer(one, data.train(), null, 0, 1, GradientReducer.single(),
                null, GradientReducer.single())) {
            t.loadCheckpoint(plainFile);
            assertEquals(t.weightChecksum(), t.syncedChecksum(), "the outer loop starts from the checkpoint's weights");
            t.trainStep();
            t.saveCheckpoint(dilocoFile);
            // xaf generate and export read the parameters of a DiLoCo checkpoint as of any other
            assertEquals("tiny", CheckpointModel.load(dilocoFile).config().name());
        }
        try (DataParallelTrainer t = new DataParallelTrainer(config(4).build(), data.train(), null, 0, 1,
                GradientReducer.single())) {
            var e = assertThrows(java.io.IOException.class, () -> t.loadCheckpoint(dilocoFile));
            assertTrue(e.getMessage().contains("--sync diloco"), e.getMessage());
        }
    }
}
