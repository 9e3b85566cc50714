package io.xaforward.bench.train;

import io.xaforward.bench.allreduce.GlooPeer;
import io.xaforward.cluster.ClusterRun;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.TrainingJob;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.training.BatchSampler;
import io.xaforward.training.CheckpointModel;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.GradientReducer;
import io.xaforward.training.ModelConfig;
import io.xaforward.training.SafetensorsExport;
import io.xaforward.training.SyntheticCorpus;
import io.xaforward.training.TokenDataset;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainerConfig;
import io.xaforward.training.TrainingData;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * PyTorch's DistributedDataParallel over Gloo as a peer of {@code xaf bench train} ({@code --peers xaf,ddp-gloo}):
 * what an ML engineer runs today to train across data centers. Each rank runs {@code ddp_gloo_train.py} with
 * Debian's python3-torch in its host namespace, started through the job's {@link ClusterRun} so that it is placed
 * like XAF's workers (on the workers' CPU, the gateway and the ports' NAPI threads on the other). It trains the
 * job's preset shapes, global batch, steps, learning-rate schedule and AdamW settings on the very token windows
 * XAF's {@link BatchSampler} gives each rank ({@link #writeBatches}), from XAF's initial weights
 * ({@link #writeInitialWeights}), with XAF's bucket size (4 MB) and intra-op threads. Same-form topologies cross
 * the gateway namespace through Linux forwarding ({@code kernel}); an IPv4 and an IPv6 data center through the kernel tunnel ({@code kernel-tunnel}, VXLAN: every rank uses its IPv4 tunnel
 * address). The gateway namespaces' edge firewall is opened to new TCP connections for the job (Gloo picks its
 * ports at random); the rule goes with the namespaces when the job's testbed is torn down.
 */
public final class DdpGlooPeer implements TrainingJob.RankStarter {
    /** The peer's name on the command line and its endpoint label in the report. */
    public static final String NAME = "ddp-gloo";
    /** The gateway modes DDP over Gloo crosses: kernel forwarding within one IP family, the kernel tunnel across. */
    public static final List<GatewayMode> MODES = List.of(GatewayMode.KERNEL, GatewayMode.KERNEL_TUNNEL);
    private static final String SCRIPT = "ddp_gloo_train.py";

    private final TrainJobSpec spec;
    private Path script;
    private Path batches;
    private Path initialWeights;

    public DdpGlooPeer(TrainJobSpec spec) {
        this.spec = spec;
    }

    /** The trainer settings XAF's workers use for {@code spec} (WorkerMain): the script gets the same. */
    static TrainerConfig trainerConfig(TrainJobSpec spec) {
        return TrainerConfig.builder(spec.trainer().preset()).steps(spec.trainer().steps()).globalBatch(spec.trainer().globalBatch()).seed(spec.trainer().seed())
                .learningRate(spec.trainer().learningRate()).warmupSteps(spec.trainer().warmupSteps()).threads(spec.trainer().threads()).build();
    }

    @Override
    public void start(ClusterRun cluster, int rank, Path jobFile) throws Exception {
        if (script == null) prepare(cluster);
        GatewayMode mode = cluster.spec().gatewayMode();
        if (!MODES.contains(mode)) throw new IllegalArgumentException("DDP over Gloo runs over kernel or kernel-tunnel, not " + mode.configName());
        List<String> command = GlooPeer.rankCommand(script, cluster, rank);
        command.addAll(arguments(trainerConfig(spec), batches, initialWeights, spec.checksumEvery(), spec.collective().bucketBytes()));
        cluster.startProcess(rank, Netns.processBuilder(cluster.plan().host(rank).namespace(), command).command());
    }

    /**
     * The script's arguments after the rank's own: model shapes, data, initial weights (null: the script draws its
     * own), schedule, optimizer, threads, buckets.
     */
    public static List<String> arguments(TrainerConfig c, Path batches, Path initialWeights, long checksumEvery, long bucketBytes) {
        ModelConfig m = c.model();
        List<String> args = new ArrayList<>(List.of(
                "--vocab", Integer.toString(m.vocabSize()), "--context", Integer.toString(m.contextLength()),
                "--layers", Integer.toString(m.layers()), "--width", Integer.toString(m.embeddingSize()),
                "--heads", Integer.toString(m.heads()), "--tied", Boolean.toString(m.tiedHead()),
                "--batches", batches.toString(), "--global-batch", Integer.toString(c.globalBatch()),
                "--steps", Long.toString(c.steps()), "--lr", Double.toString(c.learningRate()),
                "--min-lr", Double.toString(c.minLearningRate()), "--warmup", Long.toString(c.warmupSteps()),
                "--weight-decay", Double.toString(c.weightDecay()), "--clip", Double.toString(c.gradClipNorm()),
                "--seed", Long.toString(c.seed()), "--threads", Integer.toString(c.threads()),
                "--bucket-mb", Double.toString(bucketBytes / (double) (1 << 20)),
                "--checksum-every", Long.toString(checksumEvery)));
        if (initialWeights != null) args.addAll(List.of("--init", initialWeights.toString()));
        return args;
    }

    /**
     * XAF's initial weights for {@code c} ({@link DataParallelTrainer}'s seeded GPT-2 initialisation, world of one),
     * as a .safetensors file under GPT-2's names ({@link SafetensorsExport}), which the script loads: both trainers
     * then start from the same weights.
     */
    public static Path writeInitialWeights(TrainerConfig c, TokenDataset train, Path file) throws IOException {
        Path checkpoint = file.resolveSibling(file.getFileName() + ".ckpt");
        try (DataParallelTrainer trainer = new DataParallelTrainer(c, train, null, 0, 1, GradientReducer.single())) {
            trainer.saveCheckpoint(checkpoint);
        }
        try (CheckpointModel model = CheckpointModel.load(checkpoint)) {
            SafetensorsExport.write(model, file);
        } finally {
            Files.deleteIfExists(checkpoint);
        }
        return file;
    }

    private void prepare(ClusterRun cluster) throws IOException, InterruptedException {
        GlooPeer.openTcp(cluster);
        script = copyScript(spec.workDir());
        // The XAF job writes the corpus when it is missing; the same file, seed and size here, whichever runs first.
        if (!Files.exists(spec.data())) SyntheticCorpus.write(spec.data(), spec.trainer().seed(), 2_000_000);
        TokenDataset train = TrainingData.open(spec.data(), Tokenizer.byName("bytes")).train();
        batches = writeBatches(train, trainerConfig(spec), spec.workDir().resolve("ddp-batches.i32"));
        initialWeights = writeInitialWeights(trainerConfig(spec), train, spec.workDir().resolve("ddp-initial.safetensors"));
    }

    /** Copies the script (and the helpers it imports) out of the bench jar into {@code dir}. */
    public static Path copyScript(Path dir) throws IOException {
        return GlooPeer.copyScript(DdpGlooPeer.class, SCRIPT, dir);
    }

    /**
     * Writes the token windows XAF's ranks train on, as little-endian int32: for every step its whole global batch
     * ({@link BatchSampler#globalOffsets}, which no rank's share changes), each window context + 1 tokens (inputs and
     * the shifted targets). Rank r of W takes the r-th contiguous slice of each step's batch, as
     * {@link BatchSampler#localOffsets} does.
     */
    public static Path writeBatches(TokenDataset train, TrainerConfig c, Path file) throws IOException {
        int window = c.model().contextLength() + 1;
        BatchSampler sampler = new BatchSampler(train, c.model().contextLength(), c.globalBatch(), 1, 0, c.seed());
        ByteBuffer buffer = ByteBuffer.allocate(c.globalBatch() * window * Integer.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        try (OutputStream out = Files.newOutputStream(file)) {
            for (long step = 0; step < c.steps(); step++) {
                buffer.clear();
                for (long offset : sampler.globalOffsets(step))
                    for (int i = 0; i < window; i++) buffer.putInt(train.tokenAt(offset + i));
                out.write(buffer.array(), 0, buffer.position());
            }
        }
        return file;
    }
}
