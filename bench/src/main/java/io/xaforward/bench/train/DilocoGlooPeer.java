package io.xaforward.bench.train;

import io.xaforward.bench.allreduce.GlooPeer;
import io.xaforward.cluster.ClusterRun;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.TrainingJob;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.training.Evaluator;
import io.xaforward.training.SumReducer;
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
import java.util.Locale;
import java.util.Objects;

/**
 * DiLoCo over Gloo as a peer of {@code xaf bench train} ({@code --peers xaf,diloco-gloo}): the fair baseline of XAF's
 * own {@code --sync diloco}, what an ML engineer would write with plain PyTorch. Each rank runs
 * {@code diloco_gloo_train.py}, which trains what {@link DdpGlooPeer}'s script trains (same model, XAF's initial
 * weights, the windows XAF's sampler gives each rank, AdamW and its schedule) but all-reduces the gradient only
 * among the ranks of its data center, and every H steps averages the pseudo-gradient across the data centers for an
 * outer Nesterov SGD, with the same H, outer learning rate, momentum and outer number format as XAF's cells
 * ({@link Settings}). It also evaluates the validation loss on the windows XAF's {@link Evaluator} evaluates
 * ({@link #writeValidationWindows}), so its loss against time sits beside XAF's. Placed, started and its firewall
 * opened like {@link DdpGlooPeer}; it crosses the kernel's paths ({@link DdpGlooPeer#MODES}).
 */
public final class DilocoGlooPeer implements TrainingJob.RankStarter {
    /** The peer's name on the command line and its endpoint label in the report. */
    public static final String NAME = "diloco-gloo";
    private static final String SCRIPT = "diloco_gloo_train.py";
    /** The outer number formats the script can exchange (docs: bf16, int8 and int4 go through all_gather). */
    public static final List<String> OUTER_DTYPES = List.of("fp32", "bf16", "int8", "int4");

    /**
     * DiLoCo's outer loop as the bench runs it, for XAF's cells and this peer alike: one fragment (plain DiLoCo), no
     * sync delay.
     *
     * @param syncEvery     H, inner steps between outer steps
     * @param outerLr       the outer SGD's learning rate
     * @param outerMomentum its Nesterov momentum (0: plain SGD)
     * @param outerDtype    fp32, bf16, int8 or int4
     * @param evalEvery     steps between validation evaluations, a multiple of H (0: none)
     */
    public record Settings(int syncEvery, double outerLr, double outerMomentum, String outerDtype, long evalEvery) {
        public Settings {
            if (syncEvery < 1) throw new IllegalArgumentException("--sync-every must be at least 1, was " + syncEvery);
            if (!(outerLr > 0) || Double.isInfinite(outerLr)) throw new IllegalArgumentException("--outer-lr must be a positive number, was " + outerLr);
            if (!(outerMomentum >= 0 && outerMomentum < 1)) throw new IllegalArgumentException("--outer-momentum must be in [0, 1), was " + outerMomentum);
            Objects.requireNonNull(outerDtype, "outerDtype");
            if (!OUTER_DTYPES.contains(outerDtype)) {
                throw new IllegalArgumentException("unknown outer dtype '" + outerDtype + "' (known: " + String.join(", ", OUTER_DTYPES) + ")");
            }
            if (evalEvery < 0 || evalEvery % syncEvery != 0) {
                throw new IllegalArgumentException("evaluations every " + evalEvery + " steps must fall on outer steps (every "
                        + syncEvery + ")");
            }
        }
    }

    private final TrainJobSpec spec;
    private final Settings settings;
    private Path script;
    private Path batches;
    private Path initialWeights;
    private Path validation;
    private long splitWindows;

    public DilocoGlooPeer(TrainJobSpec spec, Settings settings) {
        this.spec = spec;
        this.settings = settings;
    }

    @Override
    public void start(ClusterRun cluster, int rank, Path jobFile) throws Exception {
        if (script == null) prepare(cluster);
        GatewayMode mode = cluster.spec().gatewayMode();
        if (!DdpGlooPeer.MODES.contains(mode)) throw new IllegalArgumentException("DiLoCo over Gloo runs over kernel or kernel-tunnel, not " + mode.configName());
        List<String> command = GlooPeer.rankCommand(script, cluster, rank);
        command.addAll(DdpGlooPeer.arguments(DdpGlooPeer.trainerConfig(spec), batches, initialWeights, spec.checksumEvery(), spec.collective().bucketBytes()));
        List<String> datacenters = new ArrayList<>();
        for (int r = 0; r < cluster.plan().worldSize(); r++) datacenters.add(cluster.plan().host(r).datacenter());
        command.addAll(arguments(settings, datacenters, validation, splitWindows));
        cluster.startProcess(rank, Netns.processBuilder(cluster.plan().host(rank).namespace(), command).command());
    }

    /**
     * The script's DiLoCo arguments after {@link DdpGlooPeer#arguments}: every rank's data center, the outer loop,
     * and the validation windows (null: no evaluation).
     */
    public static List<String> arguments(Settings s, List<String> datacenterOfRank, Path validation, long splitWindows) {
        List<String> args = new ArrayList<>(List.of("--dc-of-rank", String.join(",", datacenterOfRank),
                "--sync-every", Integer.toString(s.syncEvery()),
                "--outer-lr", Double.toString(s.outerLr()), "--outer-momentum", Double.toString(s.outerMomentum()),
                "--outer-dtype", s.outerDtype()));
        if (validation != null && s.evalEvery() > 0) {
            args.addAll(List.of("--val", validation.toString(), "--val-split-windows", Long.toString(splitWindows),
                    "--eval-every", Long.toString(s.evalEvery())));
        }
        return args;
    }

    private void prepare(ClusterRun cluster) throws IOException, InterruptedException {
        GlooPeer.openTcp(cluster);
        script = copyScript(spec.workDir());
        // The XAF job writes the corpus when it is missing; the same file, seed and size here, whichever runs first.
        if (!Files.exists(spec.data())) SyntheticCorpus.write(spec.data(), spec.trainer().seed(), 2_000_000);
        TrainingData.Opened data = TrainingData.open(spec.data(), Tokenizer.byName("bytes"));
        TrainerConfig c = DdpGlooPeer.trainerConfig(spec);
        batches = DdpGlooPeer.writeBatches(data.train(), c, spec.workDir().resolve("diloco-batches.i32"));
        initialWeights = DdpGlooPeer.writeInitialWeights(c, data.train(), spec.workDir().resolve("diloco-initial.safetensors"));
        int context = c.model().contextLength();
        splitWindows = Evaluator.splitWindows(data.validation().size(), context);
        validation = writeValidationWindows(data.validation(), context, spec.trainer().evalWindows(), spec.workDir().resolve("diloco-validation.i32"));
    }

    /** Copies the script and what it imports (ddp_gloo_train.py, xaf_torch_rank.py) out of the bench jar into {@code dir}. */
    public static Path copyScript(Path dir) throws IOException {
        DdpGlooPeer.copyScript(dir);
        return GlooPeer.copyScript(DilocoGlooPeer.class, SCRIPT, dir);
    }

    /**
     * Writes the windows XAF's {@link Evaluator} evaluates (all of the split's, or {@code maxWindows} spread over it),
     * in its order, each context + 1 little-endian int32 tokens: the script's ranks take windows r, r + W, ... as
     * XAF's ranks do, so both report the loss over the very same text.
     */
    public static Path writeValidationWindows(TokenDataset validation, int contextLength, int maxWindows, Path file) throws IOException {
        long[] offsets = new Evaluator(validation, contextLength, maxWindows, 1, 0, 1, SumReducer.single()).windowOffsets();
        int window = contextLength + 1;
        ByteBuffer buffer = ByteBuffer.allocate(window * Integer.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        try (OutputStream out = Files.newOutputStream(file)) {
            for (long offset : offsets) {
                buffer.clear();
                for (int i = 0; i < window; i++) buffer.putInt(validation.tokenAt(offset + i));
                out.write(buffer.array(), 0, buffer.position());
            }
        }
        return file;
    }

    /** "H 50, outer lr 0.7, momentum 0.9, fp32": the settings as the report names them. */
    public static String describe(Settings s) {
        return String.format(Locale.ROOT, "H %d, outer lr %s, momentum %s, %s", s.syncEvery(), s.outerLr(), s.outerMomentum(), s.outerDtype());
    }
}
