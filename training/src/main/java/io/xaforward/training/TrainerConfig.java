package io.xaforward.training;

import java.nio.file.Path;

/**
 * Hyper-parameters and bookkeeping of a training run; identical on every rank of a data-parallel job.
 *
 * @param preset          model preset name ({@link ModelConfig#preset})
 * @param steps           optimizer steps to run in total
 * @param globalBatch     sequences per step summed over all ranks (must divide by the world size)
 * @param learningRate    peak learning rate
 * @param minLearningRate rate at the end of the cosine decay
 * @param warmupSteps     linear warmup steps
 * @param weightDecay     decoupled AdamW weight decay, applied to matrices (not to biases and LayerNorm)
 * @param gradClipNorm    global L2 clip norm on the averaged gradient; 0 disables clipping
 * @param seed            seeds weight init and batch sampling
 * @param evalEvery       validation loss every N steps (0 = never)
 * @param evalWindows     validation windows per evaluation when the split holds more (the whole split otherwise;
 *                        see {@link Evaluator})
 * @param checkpointEvery a checkpoint every N steps (0 = never): the job's period, written by the caller of
 *                        {@link DataParallelTrainer#train} from its listener ({@link #checkpointDue}), who also names
 *                        the files; the trainer's loop writes none itself
 * @param checkpointDir   the directory the caller writes them into (required when checkpointEvery > 0)
 * @param threads         intra-op threads of the engine (only effective before the engine loads)
 * @param overlap         run backward block by block and all-reduce each finished suffix of the gradient buffer
 *                        while earlier blocks are still in backward (docs/TRAINING.md, "Overlap")
 * @param diloco          DiLoCo's outer loop, or null for plain data parallelism (every step's gradient averaged over
 *                        all ranks); see {@link DilocoConfig}
 */
public record TrainerConfig(String preset, long steps, int globalBatch, double learningRate, double minLearningRate,
                            long warmupSteps, double weightDecay, double gradClipNorm, long seed, long evalEvery,
                            int evalWindows, long checkpointEvery, Path checkpointDir, int threads,
                            boolean overlap, DilocoConfig diloco) {

    /**
     * Windows per evaluation of a large validation split: with the per-window standard deviation of ~0.44 nats seen
     * on Europarl, the standard error of their mean is ~0.014 nats (under 0.02 up to a deviation of 0.64).
     */
    public static final int DEFAULT_EVAL_WINDOWS = 1024;

    public TrainerConfig {
        ModelConfig.preset(preset);
        if (steps < 0 || globalBatch <= 0 || evalWindows <= 0 || threads <= 0 || evalEvery < 0 || checkpointEvery < 0) {
            throw new IllegalArgumentException("bad trainer config: steps " + steps + ", global batch " + globalBatch
                    + ", eval windows " + evalWindows + ", threads " + threads);
        }
        if (checkpointEvery > 0 && checkpointDir == null) {
            throw new IllegalArgumentException("checkpointEvery " + checkpointEvery + " needs a checkpointDir");
        }
        if (gradClipNorm < 0 || weightDecay < 0) {
            throw new IllegalArgumentException("gradClipNorm and weightDecay must be >= 0");
        }
        if (diloco != null) {
            diloco.checkModel(ModelConfig.preset(preset));
        }
    }

    public ModelConfig model() {
        return ModelConfig.preset(preset);
    }

    /** Whether a checkpoint is due once {@code completedSteps} steps are done. */
    public boolean checkpointDue(long completedSteps) {
        return checkpointEvery > 0 && completedSteps % checkpointEvery == 0;
    }

    public LearningRateSchedule schedule() {
        return new LearningRateSchedule(learningRate, minLearningRate, warmupSteps, steps);
    }

    /** nanoGPT-like defaults for a preset; adjust with {@link #toBuilder()}. */
    public static Builder builder(String preset) {
        return new Builder(preset);
    }

    public Builder toBuilder() {
        Builder b = new Builder(preset);
        b.steps = steps;
        b.globalBatch = globalBatch;
        b.learningRate = learningRate;
        b.minLearningRate = minLearningRate;
        b.warmupSteps = warmupSteps;
        b.weightDecay = weightDecay;
        b.gradClipNorm = gradClipNorm;
        b.seed = seed;
        b.evalEvery = evalEvery;
        b.evalWindows = evalWindows;
        b.checkpointEvery = checkpointEvery;
        b.checkpointDir = checkpointDir;
        b.threads = threads;
        b.overlap = overlap;
        b.diloco = diloco;
        return b;
    }

    /** Mutable builder with defaults. */
    public static final class Builder {
        private String preset;
        private long steps = 100;
        private int globalBatch = 8;
        private double learningRate = 1e-3;
        private double minLearningRate = 1e-4;
        private long warmupSteps = 10;
        private double weightDecay = 0.1;
        private double gradClipNorm = 1.0;
        private long seed = 1337;
        private long evalEvery = 0;
        private int evalWindows = DEFAULT_EVAL_WINDOWS;
        private long checkpointEvery = 0;
        private Path checkpointDir;
        private int threads = 1;
        private boolean overlap = true;
        private DilocoConfig diloco;

        private Builder(String preset) {
            this.preset = preset;
        }

        /** Another preset; every other setting is kept. */
        public Builder preset(String v) { preset = v; return this; }
        public Builder steps(long v) { steps = v; return this; }
        public Builder globalBatch(int v) { globalBatch = v; return this; }
        public Builder learningRate(double v) { learningRate = v; return this; }
        public Builder minLearningRate(double v) { minLearningRate = v; return this; }
        public Builder warmupSteps(long v) { warmupSteps = v; return this; }
        public Builder weightDecay(double v) { weightDecay = v; return this; }
        public Builder gradClipNorm(double v) { gradClipNorm = v; return this; }
        public Builder seed(long v) { seed = v; return this; }
        public Builder evalEvery(long v) { evalEvery = v; return this; }
        public Builder evalWindows(int v) { evalWindows = v; return this; }
        public Builder checkpointEvery(long v) { checkpointEvery = v; return this; }
        public Builder checkpointDir(Path v) { checkpointDir = v; return this; }
        public Builder threads(int v) { threads = v; return this; }
        public Builder overlap(boolean v) { overlap = v; return this; }
        /** DiLoCo's outer loop; null (the default) for plain data parallelism. */
        public Builder diloco(DilocoConfig v) { diloco = v; return this; }

        public TrainerConfig build() {
            return new TrainerConfig(preset, steps, globalBatch, learningRate, minLearningRate, warmupSteps,
                    weightDecay, gradClipNorm, seed, evalEvery, evalWindows, checkpointEvery, checkpointDir, threads, overlap,
                    diloco);
        }
    }
}
