package io.xaforward.cli;

import io.xaforward.cluster.CollectiveSettings;
import io.xaforward.cluster.SyncMode;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.collective.OuterDtype;
import io.xaforward.training.DilocoConfig;
import io.xaforward.training.TrainerConfig;
import picocli.CommandLine.Option;

/**
 * The options that shape the training job itself, with one set of defaults: {@code xaf train} (all ranks in one
 * testbed), {@code xaf worker} (one rank of a real deployment) and {@code xaf launch} (which passes its options on to
 * xaf worker) must agree on them, so they are declared once, here. How the collectives run is
 * {@link CollectiveOptions}, which {@code xaf agent} shares too.
 */
final class TrainingLoopOptions {
    /** The model of a job unless --preset says otherwise: GPT-2's vocabulary, small enough for two cores. */
    static final String DEFAULT_PRESET = "gpt2-tiny";

    @Option(paramLabel = "PRESET", names = "--preset", defaultValue = DEFAULT_PRESET,
            description = "model shape, the same on every rank: gpt2-tiny (GPT-2 vocabulary), tiny (bytes), wide, small, gpt2-124m or pythia-70m; docs/DATA.md lists their shapes (default: ${DEFAULT-VALUE})")
    String preset = DEFAULT_PRESET;

    @Option(paramLabel = "NAME", names = "--tokenizer", description = "gpt2 or bytes, for text and for .bin files without meta.json (default: from the preset's vocabulary)")
    String tokenizer;

    @Option(paramLabel = "N", names = "--checksum-every", defaultValue = "25", description = "every rank's weight checksum every N steps, compared"
            + " across the ranks (xaf train) or printed (xaf worker); 0 = never (default: ${DEFAULT-VALUE})")
    long checksumEvery = 25;

    @Option(paramLabel = "N", names = "--threads", defaultValue = "1", description = "intra-op threads per worker (default: ${DEFAULT-VALUE})")
    int threads = 1;

    @Option(paramLabel = "N", names = "--steps", defaultValue = "300", description = "training steps (default: ${DEFAULT-VALUE})")
    long steps = 300;

    @Option(paramLabel = "N", names = "--batch", defaultValue = "16", description = "global batch in sequences (default: ${DEFAULT-VALUE})")
    int batch = 16;

    @Option(paramLabel = "N", names = "--seed", defaultValue = "1234", description = "seeds weights and batch sampling (default: ${DEFAULT-VALUE})")
    long seed = 1234;

    @Option(paramLabel = "RATE", names = "--lr", defaultValue = "3e-3", description = "peak learning rate (default: ${DEFAULT-VALUE})")
    double lr = 3e-3;

    @Option(paramLabel = "N", names = "--warmup", defaultValue = "20", description = "warm-up steps (default: ${DEFAULT-VALUE})")
    long warmup = 20;

    @Option(paramLabel = "NORM", names = "--grad-clip", defaultValue = "1.0", description = "global gradient-norm"
            + " clipping: an averaged gradient whose L2 norm is above NORM is scaled down to NORM before AdamW; 0 = off"
            + " (default: ${DEFAULT-VALUE})")
    double gradClip = 1.0;

    @Option(paramLabel = "N", names = "--eval-every", defaultValue = "50", description = "validation loss every N steps, 0 = never (default: ${DEFAULT-VALUE})")
    long evalEvery = 50;

    @Option(paramLabel = "N", hideParamSyntax = true, names = "--eval-windows", defaultValue = "" + TrainerConfig.DEFAULT_EVAL_WINDOWS, description = "validation windows (of one context length) per evaluation; a "
            + "validation split with at most this many is evaluated whole (default: ${DEFAULT-VALUE}, a standard "
            + "error of ~0.014 nats on Europarl)")
    int evalWindows = TrainerConfig.DEFAULT_EVAL_WINDOWS;

    @Option(paramLabel = "on|off", names = "--overlap", defaultValue = "on", arity = "1", converter = Words.OnOff.class, description = "on: backward runs block by block and each "
            + "finished block's gradients are all-reduced while earlier blocks are still in backward; off: one "
            + "all-reduce after the whole backward pass (default: ${DEFAULT-VALUE})")
    boolean overlap = true;

    @Option(paramLabel = "ddp|diloco", names = "--sync", defaultValue = "ddp", converter = Words.SyncModeWord.class, description = "ddp: every step's gradient"
            + " is all-reduced over all ranks, through the gateways; diloco: every step's gradient is all-reduced inside"
            + " each data center only, and every --sync-every steps the data centers average their models through the"
            + " gateways with an outer Nesterov SGD (docs/TRAINING.md, \"DiLoCo\") (default: ${DEFAULT-VALUE})")
    SyncMode sync = SyncMode.DDP;

    @Option(paramLabel = "H", names = "--sync-every", defaultValue = "" + DilocoConfig.DEFAULT_SYNC_EVERY,
            description = "diloco: inner steps between two outer syncs of a fragment (default: ${DEFAULT-VALUE})")
    int syncEvery = DilocoConfig.DEFAULT_SYNC_EVERY;

    @Option(paramLabel = "F", names = "--fragments", defaultValue = "1", description = "diloco: split the parameters"
            + " by layer into F fragments synced in turn at staggered steps (streaming DiLoCo); at most --sync-every"
            + " and the model's layers (default: ${DEFAULT-VALUE})")
    int fragments = 1;

    @Option(paramLabel = "D", names = "--fragment-sync-delay", defaultValue = "0", description = "diloco: apply a"
            + " fragment's outer all-reduce D steps after it started, while inner steps go on; less than --sync-every"
            + " (default: ${DEFAULT-VALUE}: at once)")
    int fragmentSyncDelay = 0;

    @Option(paramLabel = "RATE", names = "--outer-lr", defaultValue = "" + DilocoConfig.DEFAULT_OUTER_LR,
            description = "diloco: learning rate of the outer SGD (default: ${DEFAULT-VALUE})")
    double outerLr = DilocoConfig.DEFAULT_OUTER_LR;

    @Option(paramLabel = "M", names = "--outer-momentum", defaultValue = "" + DilocoConfig.DEFAULT_OUTER_MOMENTUM,
            description = "diloco: Nesterov momentum of the outer SGD, in [0, 1) (default: ${DEFAULT-VALUE})")
    double outerMomentum = DilocoConfig.DEFAULT_OUTER_MOMENTUM;

    @Option(paramLabel = "fp32|bf16|int8|int4", names = "--outer-dtype", defaultValue = "fp32", converter = Words.OuterDtypeWord.class, description = "diloco:"
            + " number format of the outer all-reduce across data centers (int8 and int4 need the quantized"
            + " all-reduce) (default: ${DEFAULT-VALUE})")
    OuterDtype outerDtype = OuterDtype.FP32;

    /** The outer loop of --sync diloco (checked: a malformed setting is one clear error), or null under ddp. */
    DilocoConfig diloco() {
        return sync == SyncMode.DILOCO
                ? new DilocoConfig(syncEvery, fragments, fragmentSyncDelay, outerLr, outerMomentum) : null;
    }

    /** Every synchronisation setting checked together, before anything starts. */
    void checkSync() {
        TrainJobSpec.checkSync(diloco(), preset);
    }

    /**
     * The trainer part of the job these options describe, the same for every command that shares them; the command
     * adds what is its own (its checkpoints) before building it.
     */
    TrainerConfig.Builder trainer() {
        if (!Double.isFinite(gradClip) || gradClip < 0) {
            throw new IllegalArgumentException("--grad-clip must be a norm above 0, or 0 for no clipping, was " + gradClip);
        }
        if (evalWindows <= 0) throw new IllegalArgumentException("--eval-windows must be positive, was " + evalWindows);
        return TrainerConfig.builder(preset).steps(steps).globalBatch(batch).seed(seed).learningRate(lr)
                .warmupSteps(warmup).threads(threads).gradClipNorm(gradClip).evalEvery(evalEvery)
                .evalWindows(evalWindows).overlap(overlap).diloco(diloco());
    }

    /** {@code shared} (the collective options every rank command has) with DiLoCo's outer format. */
    CollectiveSettings collective(CollectiveSettings shared) {
        return shared.withOuterDtype(outerDtype);
    }
}
