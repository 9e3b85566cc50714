package io.xaforward.cli;

import io.xaforward.cluster.CheckpointNames;
import io.xaforward.cluster.JobCheckpoints;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.TrainResult;
import io.xaforward.cluster.TrainingJob;
import io.xaforward.testbed.Netns;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.DilocoConfig;
import io.xaforward.training.DjlRuntime;
import io.xaforward.training.GradientReducer;
import io.xaforward.training.TextDataset;
import io.xaforward.training.TokenDataset;
import io.xaforward.training.TrainerConfig;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Exchanger;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * DiLoCo across two emulated data centers (IPv4 and IPv6, two workers each, one XDP gateway): the inner all-reduce
 * stays inside each data center, the outer one crosses the gateway every H steps. Needs root.
 */
class DilocoTrainingTest {
    static final int STEPS = 6;

    private static TrainCommand command(Path workDir, long checkpointEvery) {
        TrainCommand cmd = new TrainCommand();
        cmd.topology = TrainCommand.shippedTopology("two-dc.yaml");
        cmd.gatewayMode = io.xaforward.testbed.mode.GatewayMode.XDP;
        cmd.collective.algorithm = io.xaforward.collective.Algorithm.HIERARCHICAL;
        cmd.loop.preset = "tiny";
        cmd.loop.steps = STEPS;
        cmd.loop.batch = 8;
        cmd.loop.seed = 77;
        cmd.loop.lr = 3e-3;
        cmd.loop.warmup = 2;
        cmd.loop.evalEvery = 0;
        cmd.loop.checksumEvery = 1; // the global parameters' checksum, compared across the four ranks every step
        cmd.loop.threads = 1;
        cmd.collective.bucketMb = 1;
        cmd.loop.sync = io.xaforward.cluster.SyncMode.DILOCO;
        cmd.checkpointEvery = checkpointEvery;
        cmd.workDir = workDir;
        cmd.endpoint = io.xaforward.cluster.Endpoint.UDP;
        return cmd;
    }

    /**
     * H = 2, one fragment: every rank reports the same global checksum every step (TrainingJob fails the run when
     * they differ) and the same final weights; the outer syncs are reported with their bytes; the final weights are
     * those of a reference of two single-process trainers (one per data center, each on its data center's share of
     * the batch), averaged through an in-process outer reducer, to 1e-4 relative L2 (float rounding: a data
     * center's two half-batch gradients against one gradient of the whole share).
     */
    @Test
    void dilocoAcrossTheGatewayMatchesTwoInProcessDataCenters() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Path dir = Files.createTempDirectory("xaf-diloco-train");
        TrainCommand cmd = command(dir, 0);
        cmd.loop.syncEvery = 2;
        TrainJobSpec spec = cmd.spec();
        ByteArrayOutputStream console = new ByteArrayOutputStream();
        TrainResult distributed = new TrainingJob(spec, new PrintStream(console, true)).run();
        String out = console.toString();
        assertEquals(STEPS, distributed.steps().size(), out);
        for (int s = 2; s <= STEPS; s += 2) {
            assertTrue(out.contains("step " + s + ": outer sync of 1 fragment(s)"), out);
        }
        assertTrue(!out.contains("step 1: outer sync") && !out.contains("step 3: outer sync"), out);
        assertTrue(distributed.gatewayCounters().get("xaf_packets_total{forwarded}") > 0, "outer syncs crossed the gateway");
        String metrics = Files.readString(TrainingJob.metricsFile(spec));
        assertTrue(metrics.contains("\"outer_applied\":1") && metrics.contains("\"outer_applied\":0"), metrics);

        DjlRuntime.load(dir.resolve("djl"), 1);
        TokenDataset train = TextDataset.open(spec.data()).split(0.05).train();
        TrainerConfig config = TrainerConfig.builder("tiny").steps(STEPS).globalBatch(8).seed(77).learningRate(3e-3)
                .warmupSteps(2).threads(1).diloco(DilocoConfig.of(2)).build();
        Exchanger<float[]> exchanger = new Exchanger<>();
        GradientReducer meanOfTwo = (segment, count) -> {
            float[] mine = segment.asSlice(0, (long) count * Float.BYTES).toArray(ValueLayout.JAVA_FLOAT);
            try {
                float[] other = exchanger.exchange(mine, 60, TimeUnit.SECONDS);
                for (int i = 0; i < count; i++) segment.setAtIndex(ValueLayout.JAVA_FLOAT, i, (mine[i] + other[i]) / 2);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        };
        ExecutorService pool = Executors.newFixedThreadPool(2);
        float[] reference;
        try {
            Future<float[]> a = pool.submit(() -> runDatacenter(config, train, 0, meanOfTwo));
            Future<float[]> b = pool.submit(() -> runDatacenter(config, train, 1, meanOfTwo));
            reference = a.get(300, TimeUnit.SECONDS);
            assertEquals(-1, java.util.Arrays.mismatch(reference, b.get(300, TimeUnit.SECONDS)), "reference DCs agree");
        } finally {
            pool.shutdownNow();
        }
        try (DataParallelTrainer loaded = new DataParallelTrainer(config, train, null, 0, 2, GradientReducer.single(),
                null, GradientReducer.single())) {
            loaded.loadCheckpoint(TrainingJob.finalCheckpoint(spec));
            float[] job = loaded.parameterSnapshot();
            double diff = 0, norm = 0;
            for (int i = 0; i < job.length; i++) {
                diff += (reference[i] - job[i]) * (double) (reference[i] - job[i]);
                norm += reference[i] * (double) reference[i];
            }
            assertTrue(Math.sqrt(diff / norm) < 1e-4, "relative L2 distance of final weights " + Math.sqrt(diff / norm));
        }
    }

    private static float[] runDatacenter(TrainerConfig config, TokenDataset train, int dc, GradientReducer outer)
            throws Exception {
        // Rank dc of a world of two takes the slice of the global batch that ranks 2dc and 2dc+1 of four take.
        try (DataParallelTrainer t = new DataParallelTrainer(config, train, null, dc, 2, GradientReducer.single(), null,
                outer)) {
            t.train(null);
            return t.parameterSnapshot();
        }
    }

    /**
     * Streaming, two fragments, H = 2, delay 1, a checkpoint after step 3 while fragment 0's outer all-reduce is
     * pending: each data center's first rank writes its data center's file, and a job resumed from step-000003.ckpt
     * ends with the uninterrupted job's weights, bitwise, and the same losses for steps 4 to 6.
     */
    @Test
    void streamingDilocoResumedFromACheckpointEqualsTheUninterruptedRun() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Path first = Files.createTempDirectory("xaf-diloco-first");
        TrainCommand cmd = command(first, 3);
        cmd.loop.syncEvery = 2;
        cmd.loop.fragments = 2;
        cmd.loop.fragmentSyncDelay = 1;
        TrainJobSpec spec = cmd.spec();
        ByteArrayOutputStream console = new ByteArrayOutputStream();
        TrainResult straight = new TrainingJob(spec, new PrintStream(console, true)).run();
        Path checkpoint = JobCheckpoints.file(spec, 3);
        assertTrue(Files.isRegularFile(checkpoint), console.toString());
        assertTrue(Files.isRegularFile(CheckpointNames.forDatacenter(checkpoint, 1)), "data center 1's own checkpoint");

        Path second = Files.createTempDirectory("xaf-diloco-resumed");
        TrainCommand again = command(second, 0);
        again.loop.syncEvery = 2;
        again.loop.fragments = 2;
        again.loop.fragmentSyncDelay = 1;
        again.resume = checkpoint;
        again.data = spec.data();
        TrainJobSpec resumedSpec = again.spec();
        ByteArrayOutputStream console2 = new ByteArrayOutputStream();
        TrainResult resumed = new TrainingJob(resumedSpec, new PrintStream(console2, true)).run();
        assertEquals(3, resumed.steps().size(), console2.toString());
        for (int s = 0; s < 3; s++) {
            assertEquals(straight.steps().get(3 + s).loss(), resumed.steps().get(s).loss(), "loss of step " + (4 + s));
        }
        assertEquals(straight.finalChecksum(), resumed.finalChecksum(), "final weights, bitwise");
    }
}
