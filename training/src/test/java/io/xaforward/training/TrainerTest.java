package io.xaforward.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Data-parallel training on the tiny preset: equivalence, determinism, resume, learning. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TrainerTest {

    private static TokenDataset.Split data;

    @BeforeAll
    static void corpus() {
        data = TextDataset.of(SyntheticCorpus.generate(7, 60_000)).split(0.1);
    }

    private static TrainerConfig config(long steps) {
        return TrainerConfig.builder("tiny").steps(steps).globalBatch(8).learningRate(3e-3).minLearningRate(3e-4)
                .warmupSteps(2).seed(42).build();
    }

    private static float[] losses(List<StepStats> stats) {
        float[] out = new float[stats.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = stats.get(i).loss();
        }
        return out;
    }

    @Test
    void twoInProcessWorkersMatchOneTrainerOnTheGlobalBatch() throws Exception {
        int steps = 5;
        float[] singleLosses;
        float[] singleWeights;
        try (DataParallelTrainer single = new DataParallelTrainer(config(steps), data.train(), null, 0, 1,
                GradientReducer.single())) {
            singleLosses = losses(single.train(null));
            singleWeights = single.parameterSnapshot();
        }

        InProcessReducer group = new InProcessReducer(2, 30_000);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<Object[]>> results = new ArrayList<>();
            for (int rank = 0; rank < 2; rank++) {
                int r = rank;
                results.add(pool.submit(() -> {
                    try (DataParallelTrainer t = new DataParallelTrainer(config(steps), data.train(), null, r, 2,
                            group.forRank(r))) {
                        List<StepStats> stats = t.train(null);
                        return new Object[] {losses(stats), t.parameterSnapshot(), t.weightChecksum(),
                            stats.get(0).localLoss()};
                    }
                }));
            }
            Object[] rank0 = results.get(0).get(90, TimeUnit.SECONDS);
            Object[] rank1 = results.get(1).get(90, TimeUnit.SECONDS);
            assertEquals((long) rank0[2], (long) rank1[2], "ranks must hold bitwise identical weights");
            assertNotEquals((float) rank0[3], (float) rank1[3], "ranks must train on different micro-batches");
            float[] parallelLosses = (float[]) rank0[0];
            for (int i = 0; i < steps; i++) {
                assertEquals(singleLosses[i], parallelLosses[i], 1e-5 * Math.abs(singleLosses[i]), "loss of step " + i);
            }
            float[] parallelWeights = (float[]) rank0[1];
            double diff = 0;
            double norm = 0;
            for (int i = 0; i < singleWeights.length; i++) {
                double d = singleWeights[i] - parallelWeights[i];
                diff += d * d;
                norm += (double) singleWeights[i] * singleWeights[i];
            }
            double relative = Math.sqrt(diff / norm);
            assertTrue(relative < 1e-5, "relative weight difference " + relative);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void validationShardedOverTwoRanksEqualsOneProcess(@TempDir Path dir) throws Exception {
        TrainerConfig cfg = config(6).toBuilder().evalEvery(6).evalWindows(60).build();
        Path trained = dir.resolve("trained.bin");
        Evaluation reference;
        try (DataParallelTrainer single = new DataParallelTrainer(cfg, data.train(), data.validation(), 0, 1,
                GradientReducer.single())) {
            List<StepStats> stats = single.train(null);
            reference = stats.getLast().validation();
            single.saveCheckpoint(trained);
            assertEquals(reference, single.evaluate(), "evaluating the same weights again gives the same figures");
        }
        assertEquals(60, reference.windows());
        assertTrue(reference.splitWindows() > 60, "the split is sampled, not whole: " + reference.splitWindows());
        assertTrue(reference.standardError() > 0 && reference.standardError() < 0.2, reference.toString());

        InProcessReducer group = new InProcessReducer(2, 30_000);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<Evaluation>> results = new ArrayList<>();
            for (int rank = 0; rank < 2; rank++) {
                int r = rank;
                results.add(pool.submit(() -> {
                    try (DataParallelTrainer t = new DataParallelTrainer(cfg, data.train(), data.validation(), r, 2,
                            group.forRank(r), group.sumsForRank(r))) {
                        t.loadCheckpoint(trained);
                        return t.evaluate();
                    }
                }));
            }
            Evaluation rank0 = results.get(0).get(90, TimeUnit.SECONDS);
            Evaluation rank1 = results.get(1).get(90, TimeUnit.SECONDS);
            assertEquals(rank0, rank1, "both ranks report the same figures");
            // Same windows and weights; only the forward passes' batch composition differs.
            assertEquals(reference.loss(), rank0.loss(), 1e-5 * reference.loss());
            assertEquals(reference.standardError(), rank0.standardError(), 1e-4 * reference.standardError());
            assertEquals(reference.windows(), rank0.windows());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void evaluatingAcrossRanksWithoutASumReducerIsRefused() {
        TrainerConfig cfg = config(2).toBuilder().evalEvery(1).build();
        Exception e = assertThrows(IllegalArgumentException.class, () -> new DataParallelTrainer(cfg, data.train(),
                data.validation(), 0, 2, new InProcessReducer(2, 1000).forRank(0)));
        assertTrue(e.getMessage().contains("SumReducer"), e.getMessage());
    }

    @Test
    void sameSeedGivesBitwiseIdenticalLossesAndWeights() throws Exception {
        float[] first;
        long firstChecksum;
        try (DataParallelTrainer t = new DataParallelTrainer(config(4), data.train(), null, 0, 1,
                GradientReducer.single())) {
            first = losses(t.train(null));
            firstChecksum = t.weightChecksum();
        }
        try (DataParallelTrainer t = new DataParallelTrainer(config(4), data.train(), null, 0, 1,
                GradientReducer.single())) {
            assertArrayEquals(first, losses(t.train(null)));
            assertEquals(firstChecksum, t.weightChecksum());
        }
        try (DataParallelTrainer t = new DataParallelTrainer(config(4).toBuilder().seed(43).build(), data.train(),
                null, 0, 1, GradientReducer.single())) {
            assertNotEquals(firstChecksum, t.weightChecksum(), "another seed must give other initial weights");
        }
    }

    @Test
    void resumeFromCheckpointContinuesExactly(@TempDir Path dir) throws Exception {
        TrainerConfig six = config(6).toBuilder().checkpointEvery(3).checkpointDir(dir).build();
        float[] straight;
        long straightChecksum;
        List<Path> written = new ArrayList<>();
        try (DataParallelTrainer t = new DataParallelTrainer(six, data.train(), null, 0, 1,
                GradientReducer.single())) {
            // The caller writes the checkpoints that are due, from its listener (as the cluster's TrainingRank does).
            straight = losses(t.train(stats -> {
                if (!six.checkpointDue(t.completedSteps())) return;
                Path file = dir.resolve("after-" + t.completedSteps() + ".ckpt");
                try {
                    t.saveCheckpoint(file);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
                written.add(file);
            }));
            straightChecksum = t.weightChecksum();
        }
        assertEquals(2, written.size());
        Path afterThree = written.get(0);
        assertTrue(Files.isRegularFile(afterThree));

        try (DataParallelTrainer resumed = new DataParallelTrainer(config(6), data.train(), null, 0, 1,
                GradientReducer.single())) {
            resumed.loadCheckpoint(afterThree);
            assertEquals(3, resumed.completedSteps());
            float[] tail = losses(resumed.train(null));
            assertArrayEquals(new float[] {straight[3], straight[4], straight[5]}, tail);
            assertEquals(straightChecksum, resumed.weightChecksum());
        }
    }

    @Test
    void corruptedOrMismatchedCheckpointIsRejected(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("ckpt.bin");
        try (DataParallelTrainer t = new DataParallelTrainer(config(1), data.train(), null, 0, 1,
                GradientReducer.single())) {
            t.train(null);
            t.saveCheckpoint(file);
        }
        try (DataParallelTrainer other = new DataParallelTrainer(config(1).toBuilder().seed(5).build(),
                data.train(), null, 0, 1, GradientReducer.single())) {
            long before = other.weightChecksum();
            Exception e = assertThrows(java.io.IOException.class, () -> other.loadCheckpoint(file));
            assertTrue(e.getMessage().contains("does not match"), e.getMessage());
            byte[] bytes = Files.readAllBytes(file);
            bytes[bytes.length / 2] ^= 1;
            Path corrupt = dir.resolve("corrupt.bin");
            Files.write(corrupt, bytes);
            e = assertThrows(java.io.IOException.class, () -> other.loadCheckpoint(corrupt));
            assertTrue(e.getMessage().contains("CRC32C"), e.getMessage());
            assertEquals(before, other.weightChecksum(), "a rejected checkpoint must not touch the weights");
        }
    }

    @Test
    void lossFallsAndValidationIsReported() throws Exception {
        TrainerConfig cfg = config(40).toBuilder().evalEvery(20).evalWindows(32).build();
        List<StepStats> seen = new ArrayList<>();
        try (DataParallelTrainer t = new DataParallelTrainer(cfg, data.train(), data.validation(), 0, 1,
                GradientReducer.single())) {
            double initialValidation = t.evaluate().loss();
            assertEquals(Math.log(256), initialValidation, 0.3, "untrained model should be near uniform");
            t.train(seen::add);
            StepStats last = seen.get(seen.size() - 1);
            assertTrue(last.hasValidationLoss());
            assertTrue(seen.get(19).hasValidationLoss());
            assertTrue(!seen.get(10).hasValidationLoss());
            assertTrue(last.validationLoss() < initialValidation - 1.5,
                    "validation loss " + last.validationLoss() + " vs initial " + initialValidation);
            assertTrue(last.tokensPerSecond() > 0 && last.computeMillis() > 0 && last.communicationMillis() >= 0);
            assertTrue(seen.get(0).gradNorm() > 0);
        }
    }

    @Test
    void reducerTimesOutWhenAPeerIsMissing() {
        InProcessReducer group = new InProcessReducer(2, 200);
        java.lang.foreign.MemorySegment buffer = java.lang.foreign.Arena.ofAuto().allocate(16);
        Exception e = assertThrows(IllegalStateException.class, () -> group.forRank(0).allReduceMean(buffer, 4));
        assertTrue(e.getMessage().contains("peer missing"), e.getMessage());
    }
}
