package io.xaforward.cli;

import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.TrainResult;
import io.xaforward.cluster.TrainingJob;
import io.xaforward.testbed.Netns;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.DjlRuntime;
import io.xaforward.training.Evaluation;
import io.xaforward.training.GradientReducer;
import io.xaforward.training.StepStats;
import io.xaforward.training.SyntheticCorpus;
import io.xaforward.training.TextDataset;
import io.xaforward.training.TokenDataset;
import io.xaforward.training.TrainerConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Data-parallel training across two emulated data centers (IPv4 and IPv6, two workers each, one XDP gateway)
 * computes what one process computes on the same global batch, whether the workers use AF_XDP sockets or kernel
 * UDP sockets; its validation loss, evaluated by the four ranks each on its share of the windows, is what one
 * process finds for the final weights over the same windows.
 */
class DistributedTrainingTest {
    static final int STEPS = 6;

    @ParameterizedTest(name = "{0} endpoints")
    @ValueSource(strings = {"afxdp", "udp"})
    void twoDatacentersTimesTwoWorkersMatchOneProcess(String endpoint) throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Path dir = Files.createTempDirectory("xaf-dist-train");
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
        cmd.loop.evalEvery = STEPS;
        cmd.loop.evalWindows = 300;
        cmd.loop.checksumEvery = 1;
        cmd.loop.threads = 1;
        cmd.collective.bucketMb = 1; // several buckets, so the pipelining path is exercised
        cmd.workDir = dir;
        cmd.endpoint = io.xaforward.cluster.Endpoint.fromName(endpoint);
        TrainJobSpec spec = cmd.spec();
        assertEquals(endpoint, spec.cluster().endpoint().configName());
        ByteArrayOutputStream console = new ByteArrayOutputStream();
        TrainResult distributed = new TrainingJob(spec, new PrintStream(console, true)).run();
        assertEquals(STEPS, distributed.steps().size(), console.toString());
        assertTrue(console.toString().contains("xdp mode, " + endpoint + " endpoints"), console.toString());
        assertTrue(distributed.gatewayCounters().get("xaf_packets_total{forwarded}") > 0, "gradients crossed the gateway");
        assertEquals(0L, distributed.gatewayCounters().get("xaf_packets_total{drop_malformed}"));
        assertTrue(Netns.list().stream().noneMatch(n -> n.startsWith(spec.cluster().prefix() + "-")), "namespaces left behind");

        DjlRuntime.load(dir.resolve("djl"), 1);
        TokenDataset.Split split = TextDataset.open(spec.data()).split(0.05);
        TrainerConfig config = TrainerConfig.builder("tiny").steps(STEPS).globalBatch(8).seed(77).learningRate(3e-3)
                .warmupSteps(2).evalEvery(0).evalWindows(300).threads(1).build();
        try (DataParallelTrainer single = new DataParallelTrainer(config, split.train(), split.validation(), 0, 1, GradientReducer.single());
             DataParallelTrainer loaded = new DataParallelTrainer(config, split.train(), split.validation(), 0, 1, GradientReducer.single())) {
            List<StepStats> reference = single.train(null);
            for (int i = 0; i < STEPS; i++) {
                double d = distributed.steps().get(i).loss(), s = reference.get(i).loss();
                // Same math, different float summation order (four half-batches averaged): agree to ~1e-5.
                assertEquals(s, d, 1e-4 * Math.abs(s), "loss at step " + (i + 1));
            }
            loaded.loadCheckpoint(TrainingJob.finalCheckpoint(spec));
            float[] a = single.parameterSnapshot(), b = loaded.parameterSnapshot();
            double diff = 0, norm = 0;
            for (int i = 0; i < a.length; i++) {
                diff += (a[i] - b[i]) * (double) (a[i] - b[i]);
                norm += a[i] * (double) a[i];
            }
            assertTrue(Math.sqrt(diff / norm) < 1e-4, "relative L2 distance of final weights " + Math.sqrt(diff / norm));

            Evaluation sharded = distributed.lastValidation();
            Evaluation oneProcess = loaded.evaluate(); // the job's own final weights, all windows in this process
            assertEquals(300, sharded.windows(), console.toString());
            assertEquals(oneProcess.splitWindows(), sharded.splitWindows());
            assertEquals(oneProcess.loss(), sharded.loss(), 1e-5 * oneProcess.loss(), "validation loss");
            assertEquals(oneProcess.standardError(), sharded.standardError(), 1e-3 * oneProcess.standardError());
        }
    }

    @Test
    void demoRunsEndToEnd() throws Exception {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream old = System.out;
        int rc;
        try {
            System.setOut(new PrintStream(buf, true));
            rc = Main.commandLine().execute("demo", "--steps", "5", "--out", Files.createTempDirectory("xaf-demo-out").toString());
        } finally {
            System.setOut(old);
        }
        String out = buf.toString();
        System.out.println(out);
        assertEquals(0, rc, out);
        assertTrue(out.contains("step    5/5"), out);
        assertTrue(out.contains("weights identical on all ranks | yes"), out);
        assertTrue(out.matches("(?s).*bytes across the gateway +\\| [0-9.]+ MB.*"), out);
        assertTrue(out.contains("Sample (xaf generate"), out);
    }
}
