package io.xaforward.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Overlapped data-parallel training (backward block by block, each finished suffix of the gradient buffer
 * all-reduced on a communication thread) against one process on the global batch, and against the non-overlapped
 * path: same losses and weights within the tolerance of {@link TrainerTest}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class OverlapTest {

    private static final int STEPS = 4;
    private static TokenDataset.Split data;

    @BeforeAll
    static void corpus() {
        data = TextDataset.of(SyntheticCorpus.generate(7, 60_000)).split(0.1);
    }

    private static TrainerConfig config(boolean overlap) {
        return TrainerConfig.builder("tiny").steps(STEPS).globalBatch(8).learningRate(3e-3).minLearningRate(3e-4)
                .warmupSteps(2).seed(42).overlap(overlap).build();
    }

    /** What one rank saw of its reducer: the length and calling thread of each call. */
    private record Call(int floats, String thread) {
    }

    private record RankResult(float[] losses, float[] weights, long checksum, List<Call> calls, long parameters) {
    }

    private static RankResult[] runTwoRanks(boolean overlap) throws Exception {
        InProcessReducer group = new InProcessReducer(2, 30_000);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<RankResult>> futures = new ArrayList<>();
            for (int rank = 0; rank < 2; rank++) {
                int r = rank;
                futures.add(pool.submit(() -> {
                    List<Call> calls = Collections.synchronizedList(new ArrayList<>());
                    GradientReducer inner = group.forRank(r);
                    GradientReducer recording = (MemorySegment segment, int count) -> {
                        calls.add(new Call(count, Thread.currentThread().getName()));
                        inner.allReduceMean(segment, count);
                    };
                    try (DataParallelTrainer t = new DataParallelTrainer(config(overlap), data.train(), null, r, 2,
                            recording)) {
                        List<StepStats> stats = t.train(null);
                        float[] losses = new float[stats.size()];
                        for (int i = 0; i < losses.length; i++) {
                            losses[i] = stats.get(i).loss();
                        }
                        return new RankResult(losses, t.parameterSnapshot(), t.weightChecksum(), List.copyOf(calls),
                                t.parameterCount());
                    }
                }));
            }
            return new RankResult[] {futures.get(0).get(90, TimeUnit.SECONDS), futures.get(1).get(90, TimeUnit.SECONDS)};
        } finally {
            pool.shutdownNow();
        }
    }

    private static double relativeDistance(float[] reference, float[] other) {
        double diff = 0;
        double norm = 0;
        for (int i = 0; i < reference.length; i++) {
            double d = reference[i] - other[i];
            diff += d * d;
            norm += (double) reference[i] * reference[i];
        }
        return Math.sqrt(diff / norm);
    }

    @Test
    void overlappedTwoRanksMatchOneProcessAndTheSequentialPath() throws Exception {
        float[] singleLosses;
        float[] singleWeights;
        try (DataParallelTrainer single = new DataParallelTrainer(config(false), data.train(), null, 0, 1,
                GradientReducer.single())) {
            List<StepStats> stats = single.train(null);
            singleLosses = new float[stats.size()];
            for (int i = 0; i < singleLosses.length; i++) {
                singleLosses[i] = stats.get(i).loss();
            }
            singleWeights = single.parameterSnapshot();
        }
        RankResult[] overlapped = runTwoRanks(true);
        RankResult[] sequential = runTwoRanks(false);

        assertEquals(overlapped[0].checksum(), overlapped[1].checksum(), "ranks must hold bitwise identical weights");
        for (int i = 0; i < STEPS; i++) {
            assertEquals(singleLosses[i], overlapped[0].losses()[i], 1e-5 * Math.abs(singleLosses[i]), "loss " + i);
            assertEquals(sequential[0].losses()[i], overlapped[0].losses()[i],
                    1e-5 * Math.abs(singleLosses[i]), "loss " + i + " against the non-overlapped path");
        }
        double relative = relativeDistance(singleWeights, overlapped[0].weights());
        assertTrue(relative < 1e-5, "relative weight difference to one process " + relative);

        // Sequential: one call per step over the whole buffer (gradients + loss), on the training thread.
        List<Call> calls = sequential[0].calls();
        long whole = sequential[0].parameters() + 1;
        assertEquals(STEPS, calls.size());
        assertTrue(calls.stream().allMatch(c -> c.floats() == whole), calls.toString());

        // Overlapped: several calls per step, from the communication thread, covering the buffer exactly once.
        calls = overlapped[0].calls();
        assertEquals(0, calls.size() % STEPS, calls.toString());
        int perStep = calls.size() / STEPS;
        assertTrue(perStep >= 3, "expected one reduction per finished stage, got " + perStep + " per step");
        long covered = calls.subList(0, perStep).stream().mapToLong(Call::floats).sum();
        assertEquals(whole, covered, "the reductions of a step cover every gradient and the loss once");
        assertTrue(calls.stream().allMatch(c -> c.thread().startsWith("gradient-allreduce")), calls.toString());
    }
}
