package io.xaforward.bench.train;

import io.xaforward.training.Batch;
import io.xaforward.training.BatchSampler;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.GradientReducer;
import io.xaforward.training.StepStats;
import io.xaforward.training.ModelConfig;
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
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The DDP-over-Gloo peer of the training bench is honest: it trains on the windows XAF's sampler gives each rank,
 * builds a model of the preset's exact parameter count, starts at XAF's initial loss level (ln vocab), and two DDP
 * ranks over Gloo with half batches each train exactly what one process trains on the whole batch, and from XAF's
 * initial weights it trains what XAF's own {@link DataParallelTrainer} trains, step by step. Runs the script
 * with Debian's /usr/bin/python3 and python3-torch (which {@code ./xaf test} installs), over loopback.
 */
class DdpGlooPeerTest {
    private static final String PYTHON = "/usr/bin/python3";

    @TempDir
    static Path dir;
    static TokenDataset train;

    @BeforeAll
    static void torchAndCorpus() throws Exception {
        Process p = new ProcessBuilder(PYTHON, "-c", "import torch, torch.distributed as d; assert d.is_available()")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) {
            fail("the DDP-over-Gloo peer needs PyTorch with torch.distributed in " + PYTHON
                    + " (apt-get install python3-torch; ./xaf test installs it): " + out.strip());
        }
        Path corpus = SyntheticCorpus.write(dir.resolve("corpus.txt"), 4242, 200_000);
        train = TrainingData.open(corpus, Tokenizer.byName("bytes")).train();
    }

    private static TrainerConfig config(String preset, int steps, int globalBatch) {
        return TrainerConfig.builder(preset).steps(steps).globalBatch(globalBatch).seed(4242).learningRate(1e-3)
                .warmupSteps(1).threads(1).build();
    }

    @Test
    void batchesFileHoldsEveryRanksSamplerWindows() throws IOException {
        TrainerConfig c = config("tiny", 3, 4);
        Path file = DdpGlooPeer.writeBatches(train, c, dir.resolve("windows.i32"));
        int context = c.model().contextLength(), local = 2;
        ByteBuffer all = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(3L * 4 * (context + 1) * Integer.BYTES, all.capacity());
        for (int rank = 0; rank < 2; rank++) {
            BatchSampler sampler = new BatchSampler(train, context, 4, 2, rank, 4242);
            for (int step = 0; step < 3; step++) {
                Batch expected = sampler.batch(step);
                long[] inputs = new long[local * context], targets = new long[local * context];
                for (int row = 0; row < local; row++) {
                    int base = ((step * 4) + rank * local + row) * (context + 1);
                    for (int j = 0; j < context; j++) {
                        inputs[row * context + j] = all.getInt((base + j) * Integer.BYTES);
                        targets[row * context + j] = all.getInt((base + j + 1) * Integer.BYTES);
                    }
                }
                assertArrayEquals(expected.inputs(), inputs, "rank " + rank + " step " + step + " inputs");
                assertArrayEquals(expected.targets(), targets, "rank " + rank + " step " + step + " targets");
            }
        }
    }

    @Test
    void twoDdpRanksWithHalfBatchesTrainWhatOneProcessTrainsOnTheWholeBatch() throws Exception {
        TrainerConfig c = config("tiny", 4, 4);
        Path batches = DdpGlooPeer.writeBatches(train, c, dir.resolve("tiny.i32"));
        Path script = DdpGlooPeer.copyScript(dir);
        List<String> args = DdpGlooPeer.arguments(c, batches, null, 1, 4L << 20);

        TorchRankRun single = (start(script, args, 0, 1, 0)).await();
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        TorchRankRun rank0 = (start(script, args, 0, 2, port)), rank1 = (start(script, args, 1, 2, port));
        rank0.await();
        rank1.await();

        long expectedParameters = ModelConfig.preset("tiny").parameterCount();
        for (TorchRankRun r : List.of(single, rank0, rank1)) assertEquals(expectedParameters, r.start.integer("params"), "the preset's shapes");
        assertEquals("gloo", rank0.start.get("backend"));
        assertEquals(4, single.steps.size());
        // Untrained GPT-2 initialisation: logits near zero, the loss near ln(vocab), as XAF's trainer starts.
        assertEquals(Math.log(256), single.steps.getFirst().number("local_loss"), 0.1, "initial loss near ln 256");
        for (int s = 0; s < 4; s++) {
            double whole = single.steps.get(s).number("local_loss");
            double halves = (rank0.steps.get(s).number("local_loss") + rank1.steps.get(s).number("local_loss")) / 2;
            assertEquals(whole, halves, 2e-5, "step " + (s + 1) + ": the ranks' mean loss is the whole batch's");
            assertEquals(single.steps.get(s).number("grad_norm"), rank0.steps.get(s).number("grad_norm"), 1e-4,
                    "step " + (s + 1) + ": the all-reduced gradient's norm is the whole batch's");
            assertEquals(rank0.steps.get(s).get("checksum"), rank1.steps.get(s).get("checksum"),
                    "step " + (s + 1) + ": DDP keeps the replicas bitwise equal");
        }
        // The weights after four steps: the same up to float rounding, as the losses after them show.
        double w = single.done.number("weights_abs_sum");
        assertEquals(w, rank0.done.number("weights_abs_sum"), 1e-5 * w);
        assertTrue(rank0.steps.stream().skip(1).allMatch(l -> l.number("comm_ms") >= 0), "comm_ms is never negative");
    }

    @Test
    void widePresetHasItsParameterCountAndStartsNearLnVocab() throws Exception {
        TrainerConfig c = config("wide", 1, 2);
        Path batches = DdpGlooPeer.writeBatches(train, c, dir.resolve("wide.i32"));
        TorchRankRun single = (start(DdpGlooPeer.copyScript(dir), DdpGlooPeer.arguments(c, batches, null, 1, 4L << 20), 0, 1, 0)).await();
        assertEquals(ModelConfig.preset("wide").parameterCount(), single.start.integer("params"));
        // d = 384, tied head: logits of std ~0.02 * sqrt(384) = 0.39 add ~0.08 to ln 256.
        assertEquals(Math.log(256), single.steps.getFirst().number("local_loss"), 0.2);
    }

    @Test
    void fromXafsInitialWeightsItTrainsWhatXafsTrainerTrains() throws Exception {
        TrainerConfig c = config("tiny", 6, 4);
        Path batches = DdpGlooPeer.writeBatches(train, c, dir.resolve("same.i32"));
        Path init = DdpGlooPeer.writeInitialWeights(c, train, dir.resolve("initial.safetensors"));
        List<StepStats> xaf = new ArrayList<>();
        try (DataParallelTrainer trainer = new DataParallelTrainer(c, train, null, 0, 1, GradientReducer.single())) {
            for (int s = 0; s < c.steps(); s++) xaf.add(trainer.trainStep());
        }
        TorchRankRun ddp = (start(DdpGlooPeer.copyScript(dir), DdpGlooPeer.arguments(c, batches, init, 1, 4L << 20), 0, 1, 0)).await();
        assertEquals(c.steps(), ddp.steps.size());
        // Same weights, windows, clipping, AdamW and schedule: the two engines agree up to float rounding (1e-6 seen).
        for (int s = 0; s < c.steps(); s++) {
            assertEquals(xaf.get(s).loss(), ddp.steps.get(s).number("local_loss"), 2e-5, "step " + (s + 1) + " loss");
            assertEquals(xaf.get(s).gradNorm(), ddp.steps.get(s).number("grad_norm"), 1e-4 * xaf.get(s).gradNorm(),
                    "step " + (s + 1) + " gradient norm");
            assertEquals(xaf.get(s).learningRate(), ddp.steps.get(s).number("lr"), 1e-6 * c.learningRate(), "step " + (s + 1) + " rate");
        }
        assertTrue(xaf.getFirst().loss() - xaf.getLast().loss() > 0.01, "both learn: " + xaf.getFirst().loss() + " -> " + xaf.getLast().loss());
    }

    private static TorchRankRun start(Path script, List<String> args, int rank, int world, int port) throws IOException {
        return TorchRankRun.start(script, args, rank, world, port, dir);
    }
}
