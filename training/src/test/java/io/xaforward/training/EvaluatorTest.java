package io.xaforward.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Which windows an evaluation visits, how ranks share them, and the statistics it reports, with a stand-in for the
 * model (a loss computed from each window's tokens), so every expected figure can be computed independently.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EvaluatorTest {

    private static final int CONTEXT = 16;

    /** Tokens 0, 1, 2, ... (mod vocabulary): a window's first input token tells where it starts. */
    private static TokenDataset counting(int tokens) {
        int[] ids = new int[tokens];
        for (int i = 0; i < tokens; i++) {
            ids[i] = i % 50_000;
        }
        return new IdArrayDataset(ids, 50_000);
    }

    /** A deterministic, uneven loss per window: a function of the window's first token. */
    private static float lossOf(long firstToken) {
        return (float) (3 + Math.sin(firstToken * 0.37) + (firstToken % 7) * 0.1);
    }

    private static float[] losses(Batch batch) {
        float[] out = new float[batch.batchSize()];
        for (int row = 0; row < out.length; row++) {
            out[row] = lossOf(batch.inputs()[row * batch.contextLength()]);
        }
        return out;
    }

    /** Runs one evaluation on each of {@code world} ranks (threads), returns every rank's result. */
    private static List<Evaluation> sharded(int world, IntFunction<Evaluator> evaluatorOfRank,
                                            Evaluator.WindowLosses model) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(world);
        try {
            List<Future<Evaluation>> futures = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                Evaluator evaluator = evaluatorOfRank.apply(r);
                futures.add(pool.submit(() -> evaluator.evaluate(model)));
            }
            List<Evaluation> results = new ArrayList<>();
            for (Future<Evaluation> f : futures) {
                results.add(f.get(30, TimeUnit.SECONDS));
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aSmallSplitIsEvaluatedWholeEachWindowExactlyOnce() throws Exception {
        int tokens = 1000; // (1000 - 1) / 16 = 62 windows; tokens 993..999 are left over
        TokenDataset split = counting(tokens);
        int world = 3;
        InProcessReducer group = new InProcessReducer(world, 10_000);
        List<Long> visited = Collections.synchronizedList(new ArrayList<>());
        List<Long> predicted = Collections.synchronizedList(new ArrayList<>());
        List<Evaluation> results = sharded(world,
                r -> new Evaluator(split, CONTEXT, TrainerConfig.DEFAULT_EVAL_WINDOWS, 4, r, world, group.sumsForRank(r)),
                batch -> {
                    for (int row = 0; row < batch.batchSize(); row++) {
                        visited.add(batch.offsets()[row]);
                        for (int j = 0; j < CONTEXT; j++) {
                            long target = batch.targets()[row * CONTEXT + j];
                            assertEquals(batch.inputs()[row * CONTEXT + j] + 1, target, "targets are inputs shifted");
                            predicted.add(target);
                        }
                    }
                    return losses(batch);
                });

        List<Long> expected = new ArrayList<>();
        for (long w = 0; w < 62; w++) {
            expected.add(w * CONTEXT);
        }
        Collections.sort(visited);
        assertEquals(expected, visited, "every window of the split, each once, over all ranks");
        Collections.sort(predicted);
        for (int i = 0; i < predicted.size(); i++) {
            assertEquals(i + 1L, predicted.get(i), "each token from the second on is a target exactly once");
        }
        assertEquals(62 * CONTEXT, predicted.size());
        for (Evaluation e : results) {
            assertEquals(62, e.windows());
            assertEquals(62, e.splitWindows());
            assertTrue(e.wholeSplit());
        }
    }

    @Test
    void aLargeSplitIsSampledByEvalWindowsSpreadOverIt() {
        TokenDataset split = counting(CONTEXT * 10_000 + 1); // 10,000 windows
        Evaluator evaluator = new Evaluator(split, CONTEXT, 300, 8, 0, 1, SumReducer.single());
        long[] offsets = evaluator.windowOffsets();
        assertEquals(300, offsets.length);
        for (int i = 0; i < offsets.length; i++) {
            assertEquals(0, offsets[i] % CONTEXT, "windows start on the window grid");
            assertEquals(i * 10_000L / 300 * CONTEXT, offsets[i]);
            if (i > 0) {
                assertTrue(offsets[i] > offsets[i - 1], "distinct and in order");
            }
        }
        assertTrue(offsets[299] >= 9_966L * CONTEXT, "the sample reaches the end of the split: " + offsets[299]);
        Evaluation e = evaluator.evaluate(EvaluatorTest::losses);
        assertEquals(300, e.windows());
        assertEquals(10_000, e.splitWindows());
        assertTrue(!e.wholeSplit());
    }

    @Test
    void shardedEvaluationEqualsOneProcessOverTheSameWindows() throws Exception {
        TokenDataset split = counting(CONTEXT * 777 + 5);
        Evaluator single = new Evaluator(split, CONTEXT, 500, 4, 0, 1, SumReducer.single());
        Evaluation reference = single.evaluate(EvaluatorTest::losses);
        for (int world : new int[] {2, 3, 4, 7}) {
            InProcessReducer group = new InProcessReducer(world, 10_000);
            List<Long> union = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                Evaluator share = new Evaluator(split, CONTEXT, 500, 3, r, world, group.sumsForRank(r));
                for (long offset : share.localOffsets()) {
                    union.add(offset);
                }
                assertTrue(share.localOffsets().length <= (500 + world - 1) / world, "shares are balanced");
            }
            Collections.sort(union);
            assertArrayEquals(single.windowOffsets(), union.stream().mapToLong(Long::longValue).toArray(),
                    "the ranks' shares partition the one-process windows (" + world + " ranks)");
            List<Evaluation> results = sharded(world,
                    r -> new Evaluator(split, CONTEXT, 500, 3, r, world, group.sumsForRank(r)), EvaluatorTest::losses);
            for (Evaluation e : results) {
                assertEquals(results.get(0), e, "every rank reports bitwise the same figures");
                assertEquals(reference.loss(), e.loss(), 1e-12, world + " ranks");
                assertEquals(reference.standardError(), e.standardError(), 1e-12, world + " ranks");
                assertEquals(500, e.windows());
            }
        }
    }

    @Test
    void standardErrorOfKnownLosses() throws Exception {
        // Losses 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations sum to 32, sample variance 32 / 7,
        // standard error sqrt(32 / 7 / 8) = sqrt(4 / 7).
        float[] known = {2, 4, 4, 4, 5, 5, 7, 9};
        TokenDataset split = counting(CONTEXT * known.length + 1);
        Evaluator.WindowLosses model = batch -> {
            float[] out = new float[batch.batchSize()];
            for (int row = 0; row < out.length; row++) {
                out[row] = known[(int) (batch.offsets()[row] / CONTEXT)];
            }
            return out;
        };
        Evaluation one = new Evaluator(split, CONTEXT, 100, 3, 0, 1, SumReducer.single()).evaluate(model);
        assertEquals(5.0, one.loss(), 1e-12);
        assertEquals(Math.sqrt(4.0 / 7.0), one.standardError(), 1e-12);
        assertEquals(8, one.windows());

        InProcessReducer group = new InProcessReducer(3, 10_000);
        for (Evaluation e : sharded(3, r -> new Evaluator(split, CONTEXT, 100, 2, r, 3, group.sumsForRank(r)), model)) {
            assertEquals(5.0, e.loss(), 1e-12);
            assertEquals(Math.sqrt(4.0 / 7.0), e.standardError(), 1e-12);
        }

        Evaluation same = Evaluation.of(4 * 6.5, 4 * 6.5 * 6.5, 4, 4);
        assertEquals(0.0, same.standardError(), 1e-6, "identical losses have no spread");
        assertTrue(Double.isNaN(Evaluation.of(6.5, 6.5 * 6.5, 1, 1).standardError()), "one window has no estimate");
    }

    @Test
    void badSettingsAndDisagreeingRanksFailClearly() throws Exception {
        TokenDataset tooShort = counting(CONTEXT);
        Exception e = assertThrows(IllegalArgumentException.class,
                () -> new Evaluator(tooShort, CONTEXT, 10, 4, 0, 1, SumReducer.single()));
        assertTrue(e.getMessage().contains("shorter than one window"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> new Evaluator(counting(1000), CONTEXT, 0, 4, 0, 1, SumReducer.single()));

        // Two ranks configured with different --eval-windows: the combined count gives it away.
        TokenDataset split = counting(CONTEXT * 100 + 1);
        InProcessReducer group = new InProcessReducer(2, 10_000);
        ExecutionFailure failure = assertThrows(ExecutionFailure.class, () -> {
            try {
                sharded(2, r -> new Evaluator(split, CONTEXT, r == 0 ? 40 : 60, 4, r, 2, group.sumsForRank(r)),
                        EvaluatorTest::losses);
            } catch (java.util.concurrent.ExecutionException ex) {
                throw new ExecutionFailure(ex.getCause());
            }
        });
        assertTrue(failure.getCause().getMessage().contains("windows together, expected"),
                failure.getCause().getMessage());
    }

    private static final class ExecutionFailure extends Exception {
        ExecutionFailure(Throwable cause) {
            super(cause);
        }
    }
}
