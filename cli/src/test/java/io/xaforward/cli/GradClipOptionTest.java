package io.xaforward.cli;

import io.xaforward.cluster.deploy.WorkerOptions;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.GradientReducer;
import io.xaforward.training.StepStats;
import io.xaforward.training.SyntheticCorpus;
import io.xaforward.training.TextDataset;
import io.xaforward.training.TokenDataset;
import io.xaforward.training.TrainerConfig;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --grad-clip NORM}: the one option of the trainer part that xaf train, xaf worker, xaf launch (through the
 * worker options it passes on) and a cluster file's training section share. Its default, 1.0, is the clipping every
 * run had before the option existed; a small norm changes the update; a bad value is one clear error.
 */
class GradClipOptionTest {
    @TempDir
    static Path dir;
    private static Path cluster;
    private static TokenDataset.Split data;

    @BeforeAll
    static void corpus() throws Exception {
        cluster = dir.resolve("cluster.yaml");
        Files.writeString(cluster, SampleClusterFiles.ONE_DC_TWO_RANKS);
        Files.writeString(dir.resolve("corpus.txt"), "text");
        data = TextDataset.of(SyntheticCorpus.generate(7, 60_000)).split(0.1);
    }

    /** xaf worker as rank 1 of the cluster file, with {@code args} after the options every worker needs. */
    private static WorkerCommand command(Path clusterFile, String... args) {
        WorkerCommand w = new WorkerCommand();
        w.environment = Map.of("RANK", "1");
        w.log = new java.io.PrintStream(java.io.OutputStream.nullOutputStream());
        List<String> all = new java.util.ArrayList<>(List.of("--token", "0x1234", "--data", dir.resolve("corpus.txt").toString(),
                "--checkpoint-dir", dir.resolve("ckpt").toString(), "--wire-security", "crc32c", "--interface", "eth1",
                "--cluster", clusterFile.toString(), "--preset", "tiny", "--steps", "3", "--batch", "8", "--eval-every", "0"));
        all.addAll(List.of(args));
        new CommandLine(w).parseArgs(all.toArray(String[]::new));
        return w;
    }

    private static WorkerOptions worker(String... args) throws Exception {
        WorkerCommand w = command(cluster, args);
        return w.options(w.identity());
    }

    /** The weight checksum after the config's steps on one rank, and the largest gradient norm seen. */
    private static long[] train(TrainerConfig config) throws Exception {
        try (DataParallelTrainer t = new DataParallelTrainer(config, data.train(), null, 0, 1, GradientReducer.single())) {
            List<StepStats> stats = t.train(null);
            double maxNorm = stats.stream().mapToDouble(StepStats::gradNorm).max().orElseThrow();
            return new long[]{t.weightChecksum(), Double.doubleToLongBits(maxNorm)};
        }
    }

    @Test
    void theDefaultIsTodaysClippingAndASmallNormChangesTheUpdate() throws Exception {
        TrainerConfig byDefault = worker().trainer();
        assertEquals(1.0, byDefault.gradClipNorm(), "the default is the clip norm every run had");
        assertEquals(TrainerConfig.builder("tiny").build().gradClipNorm(), byDefault.gradClipNorm());
        TrainerConfig tiny = worker("--grad-clip", "1e-4").trainer();
        assertEquals(1e-4, tiny.gradClipNorm());
        assertEquals(byDefault, worker("--grad-clip", "1").trainer(), "--grad-clip 1 is the default");

        long[] plain = train(byDefault);
        // Before the option: the same settings, clipping as TrainerConfig always did.
        TrainerConfig before = TrainerConfig.builder("tiny").steps(3).globalBatch(8).seed(byDefault.seed())
                .learningRate(byDefault.learningRate()).warmupSteps(byDefault.warmupSteps())
                .checkpointEvery(byDefault.checkpointEvery()).checkpointDir(byDefault.checkpointDir()).build();
        assertEquals(before, byDefault, "the default trainer part is the one built without the option");
        assertEquals(plain[0], train(before)[0], "the default trains bitwise as before");
        long[] clipped = train(tiny);
        assertTrue(Double.longBitsToDouble(clipped[1]) > 1e-4, "the gradient is longer than the clip norm");
        assertNotEquals(plain[0], clipped[0], "clipping to a tiny norm changes the weights");
        assertNotEquals(plain[0], train(worker("--grad-clip", "0").trainer())[0], "0 turns clipping off");
    }

    @Test
    void theClusterFilesTrainingSectionMayGiveIt() throws Exception {
        Path withClip = dir.resolve("cluster-clip.yaml");
        Files.writeString(withClip, Files.readString(cluster) + "training: {grad-clip: 0.25}\n");
        WorkerCommand w = command(withClip);
        w.applyClusterTraining();
        assertEquals(0.25, w.options(w.identity()).trainer().gradClipNorm());
    }

    @Test
    void aBadNormIsRefused() throws Exception {
        for (String bad : new String[]{"-1", "NaN", "Infinity"}) {
            var e = assertThrows(IllegalArgumentException.class, () -> worker("--grad-clip", bad));
            assertTrue(e.getMessage().startsWith("--grad-clip must be a norm above 0, or 0 for no clipping"), e.getMessage());
        }
        // xaf train: exit status 1, one xaf: line, nothing created (needs root, as every xaf train does).
        EarlyErrorsTest.failsEarly("--grad-clip must be a norm above 0, or 0 for no clipping, was -0.5", "train",
                "--grad-clip", "-0.5", "--steps", "1");
    }
}
