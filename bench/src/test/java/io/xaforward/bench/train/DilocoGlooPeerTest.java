package io.xaforward.bench.train;

import io.xaforward.cluster.WorkerLine;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.Evaluation;
import io.xaforward.training.Evaluator;
import io.xaforward.training.GradientReducer;
import io.xaforward.training.ModelConfig;
import io.xaforward.training.StepStats;
import io.xaforward.training.SyntheticCorpus;
import io.xaforward.training.TokenDataset;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainerConfig;
import io.xaforward.training.TrainingData;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The DiLoCo-over-Gloo peer of the training bench is honest: with H = 1, outer learning rate 1 and no momentum it
 * trains what XAF's own trainer trains and evaluates the validation loss XAF's {@link Evaluator} computes over the
 * same windows; across two data centers every rank ends every round on the same weights (also with quantized outer
 * values), the outer exchange moves the encoded size, and settings that cannot work are refused. Runs the script
 * with Debian's /usr/bin/python3 and python3-torch over loopback, with the tiny preset.
 */
class DilocoGlooPeerTest {
    @TempDir
    static Path dir;
    static TokenDataset train, validation;

    @BeforeAll
    static void torchAndCorpus() throws Exception {
        Process p = new ProcessBuilder(TorchRankRun.PYTHON, "-c", "import torch, torch.distributed as d; assert d.is_available()")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) {
            fail("the DiLoCo-over-Gloo peer needs PyTorch with torch.distributed in " + TorchRankRun.PYTHON
                    + " (apt-get install python3-torch; ./xaf test installs it): " + out.strip());
        }
        TrainingData.Opened data = TrainingData.open(SyntheticCorpus.write(dir.resolve("corpus.txt"), 4242, 200_000), Tokenizer.byName("bytes"));
        train = data.train();
        validation = data.validation();
    }

    private static TrainerConfig config(int steps, int globalBatch) {
        return TrainerConfig.builder("tiny").steps(steps).globalBatch(globalBatch).seed(4242).learningRate(1e-3)
                .warmupSteps(1).threads(1).build();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Every rank of {@code dcs} (one data center name per rank) on one script run; returns them finished. */
    private static List<TorchRankRun> runAll(List<String> args, List<String> dcs) throws Exception {
        Path script = DilocoGlooPeer.copyScript(dir);
        int port = freePort();
        List<TorchRankRun> ranks = new ArrayList<>();
        for (int r = 0; r < dcs.size(); r++) ranks.add(TorchRankRun.start(script, args, r, dcs.size(), port, dir));
        for (TorchRankRun r : ranks) r.await();
        return ranks;
    }

    private static List<String> args(TrainerConfig c, String name, DilocoGlooPeer.Settings s, List<String> dcs) throws IOException {
        List<String> args = new ArrayList<>(DdpGlooPeer.arguments(c, DdpGlooPeer.writeBatches(train, c, dir.resolve(name + ".i32")),
                DdpGlooPeer.writeInitialWeights(c, train, dir.resolve(name + ".safetensors")), 1, 4L << 20));
        Path val = DilocoGlooPeer.writeValidationWindows(validation, c.model().contextLength(), c.evalWindows(), dir.resolve(name + "-val.i32"));
        args.addAll(DilocoGlooPeer.arguments(s, dcs, val, Evaluator.splitWindows(validation.size(), c.model().contextLength())));
        return args;
    }

    @Test
    void withOneOuterStepPerStepOfRateOneItTrainsAndEvaluatesWhatXafsTrainerDoes() throws Exception {
        TrainerConfig c = config(4, 4);
        DilocoGlooPeer.Settings s = new DilocoGlooPeer.Settings(1, 1.0, 0.0, "fp32", 2);
        TorchRankRun diloco = runAll(args(c, "same", s, List.of("a")), List.of("a")).getFirst();

        List<StepStats> xaf = new ArrayList<>();
        Map<Integer, Evaluation> evaluations = new HashMap<>();
        try (DataParallelTrainer trainer = new DataParallelTrainer(c, train, validation, 0, 1, GradientReducer.single())) {
            for (int step = 1; step <= c.steps(); step++) {
                xaf.add(trainer.trainStep());
                if (step % 2 == 0) evaluations.put(step, trainer.evaluate());
            }
        }
        assertEquals(ModelConfig.preset("tiny").parameterCount(), diloco.start.integer("params"));
        assertEquals(c.steps(), diloco.steps.size());
        for (int step = 1; step <= c.steps(); step++) {
            WorkerLine l = diloco.steps.get(step - 1);
            // global - (global - local) with rate 1 is the inner step's weights up to one rounding.
            assertEquals(xaf.get(step - 1).loss(), l.number("local_loss"), 2e-5, "step " + step + " loss");
            assertEquals("1", l.get("outer_sync"), "H = 1: an outer step after every step");
            Evaluation e = evaluations.get(step);
            if (e == null) {
                assertFalse(l.values().containsKey("val"), "no evaluation at step " + step);
                continue;
            }
            assertEquals(e.loss(), l.number("val"), 1e-4, "step " + step + ": the validation loss of XAF's Evaluator");
            assertEquals(e.standardError(), l.number("val_se"), 1e-4, "step " + step + ": its standard error");
            assertEquals(e.windows(), l.integer("val_windows"), "the same windows");
            assertEquals(e.splitWindows(), l.integer("val_split_windows"));
        }
        assertTrue(evaluations.get(2).wholeSplit(), "the tiny corpus's split is evaluated whole");
    }

    @Test
    void twoDataCentersOfTwoRanksEndEveryRoundOnTheSameWeights() throws Exception {
        TrainerConfig c = config(4, 8);
        DilocoGlooPeer.Settings s = new DilocoGlooPeer.Settings(2, 0.7, 0.9, "int8", 2);
        List<String> dcs = List.of("a", "a", "b", "b");
        List<TorchRankRun> ranks = runAll(args(c, "four", s, dcs), dcs);
        assertEquals("2", ranks.getFirst().start.get("data_centers"));
        assertEquals("2", ranks.getFirst().start.get("ranks_per_dc"));
        long n = ModelConfig.preset("tiny").parameterCount();
        long shard = (n + 2 * 128 - 1) / (2 * 128) * 128; // each rank of a DC sends its half, in whole blocks of 128
        for (int step = 1; step <= 4; step++) {
            WorkerLine first = ranks.getFirst().steps.get(step - 1);
            for (TorchRankRun r : ranks) {
                WorkerLine l = r.steps.get(step - 1);
                if (step % 2 == 1) {
                    assertFalse(l.values().containsKey("outer_sync"), "no outer step at step " + step);
                    continue;
                }
                assertEquals(first.get("checksum"), l.get("checksum"), "step " + step + ": every rank on the global weights");
                assertEquals(first.get("val"), l.get("val"), "step " + step + ": one validation figure for all ranks");
                assertEquals(shard + 4 * shard / 128, l.integer("outer_bytes"), "int8 codes and one fp32 scale per 128 values");
            }
        }
        // Inside a data center DDP keeps both ranks equal between outer steps; the two data centers differ there.
        assertEquals(ranks.get(0).steps.get(0).number("grad_norm"), ranks.get(1).steps.get(0).number("grad_norm"));
        assertNotEquals(ranks.get(0).steps.get(0).number("grad_norm"), ranks.get(2).steps.get(0).number("grad_norm"));
        for (TorchRankRun r : ranks) assertEquals(ranks.getFirst().done.get("checksum"), r.done.get("checksum"));
        assertTrue(ranks.getFirst().steps.getLast().number("val") < Math.log(256), "it learns");
    }

    @Test
    void quantizedOuterValuesMoveFewerBytesAndLandNearFp32() throws Exception {
        TrainerConfig c = config(4, 4);
        List<String> dcs = List.of("a", "b");
        Map<String, TorchRankRun> byDtype = new HashMap<>();
        for (String dtype : List.of("fp32", "bf16", "int4")) {
            List<TorchRankRun> ranks = runAll(args(c, dtype, new DilocoGlooPeer.Settings(2, 0.7, 0.9, dtype, 4), dcs), dcs);
            assertEquals(ranks.get(0).done.get("checksum"), ranks.get(1).done.get("checksum"), dtype + ": one set of weights at the end");
            byDtype.put(dtype, ranks.getFirst());
        }
        long n = ModelConfig.preset("tiny").parameterCount(), padded = (n + 127) / 128 * 128;
        long fp32 = byDtype.get("fp32").steps.get(1).integer("outer_bytes");
        assertEquals(padded * 4, fp32, "a ring all-reduce of two sends the whole vector once");
        assertEquals(padded * 2, byDtype.get("bf16").steps.get(1).integer("outer_bytes"));
        assertEquals(padded / 2 + 4 * padded / 128, byDtype.get("int4").steps.get(1).integer("outer_bytes"));
        double reference = byDtype.get("fp32").steps.getLast().number("val");
        for (String dtype : List.of("bf16", "int4")) {
            // Two outer steps of a model near its initialisation: the rounding moves the loss by far less than learning does.
            assertEquals(reference, byDtype.get(dtype).steps.getLast().number("val"), 0.01, dtype);
        }
    }

    @Test
    void evaluationsBetweenOuterStepsAreRefused() throws Exception {
        TrainerConfig c = config(4, 4);
        List<String> args = new ArrayList<>(args(c, "refused", new DilocoGlooPeer.Settings(2, 0.7, 0.9, "fp32", 2), List.of("a")));
        args.set(args.indexOf("--eval-every") + 1, "3");
        TorchRankRun r = TorchRankRun.start(DilocoGlooPeer.copyScript(dir), args, 0, 1, 0, dir);
        assertNotEquals(0, r.finish());
        assertTrue(r.errors().contains("must be a multiple of --sync-every"), r.errors());
    }

    @Test
    void settingsThatCannotWorkAreRefusedInJava() {
        assertThrows("--sync-every must be at least 1", () -> new DilocoGlooPeer.Settings(0, 0.7, 0.9, "fp32", 0));
        assertThrows("--outer-lr must be a positive number", () -> new DilocoGlooPeer.Settings(5, 0, 0.9, "fp32", 5));
        assertThrows("unknown outer dtype 'fp8'", () -> new DilocoGlooPeer.Settings(5, 0.7, 0.9, "fp8", 5));
        assertThrows("must fall on outer steps", () -> new DilocoGlooPeer.Settings(5, 0.7, 0.9, "fp32", 7));
    }

    private static void assertThrows(String message, org.junit.jupiter.api.function.Executable e) {
        IllegalArgumentException x = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, e);
        assertTrue(x.getMessage().contains(message), x.getMessage());
    }
}
