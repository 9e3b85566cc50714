package io.xaforward.training;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.ParameterStore;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * One rank of synchronous data-parallel training of a {@link GptModel}. Each step: forward and backward on this
 * rank's micro-batch, gather every parameter gradient into ONE flat native-order buffer in the model's fixed
 * parameter order, all-reduce it to the mean through the {@link GradientReducer}, copy the mean back into each
 * gradient tensor's own memory, clip by the global norm of the mean (so every rank clips identically), then AdamW.
 * Ranks start from the same seeded weights and apply identical updates, so their weights stay identical; compare
 * {@link #weightChecksum()} to check.
 *
 * <p>With DiLoCo ({@link TrainerConfig#diloco()}), the gradient reducer averages over this rank's data center only,
 * and an {@link OuterLoop} averages the data centers' pseudo-gradients every H steps through the outer reducer
 * (docs/TRAINING.md, "DiLoCo").
 *
 * <p>Autograd is driven through JniUtils rather than DJL's GradientCollector, which allows only one collector per
 * JVM and would serialise the ranks of an in-process test. Not thread-safe: one thread per trainer.
 */
public final class DataParallelTrainer implements AutoCloseable {

    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;
    static final long CHECKPOINT_MAGIC = 0x5841_4643_4B50_5432L; // "XAFCKPT2": with the run's settings ("XAFCKPT1" still read)

    private final TrainerConfig config;
    private final ModelConfig model;
    private final int rank;
    private final int worldSize;
    private final GradientReducer reducer;
    private final BatchSampler sampler;
    private final Evaluator evaluator;
    private final LearningRateSchedule schedule;

    private final NDManager manager;
    private final GptModel network;
    private final ParameterStore store;
    private final List<Parameter> parameters;
    private final List<String> parameterNames;
    private final List<ByteBuffer> parameterBuffers = new ArrayList<>();
    private final List<MemorySegment> parameterMemory = new ArrayList<>();
    private final boolean[] decay;
    private final long parameterFloats;

    private final Arena arena = Arena.ofShared();
    private final MemorySegment flat;
    private final AdamW optimizer;
    private long completedSteps;

    /** DiLoCo's outer loop, or null under plain data parallelism. */
    private final OuterLoop outer;

    /** Computes a step's gradients and reduces them to the mean over the ranks (plain or overlapped). */
    private final Backward backward;
    private final FlatGradients gradients;

    /**
     * A trainer that evaluates only when it is alone (world of one); across ranks, evaluation needs the
     * {@link SumReducer} of the other constructor.
     */
    public DataParallelTrainer(TrainerConfig config, TokenDataset train, TokenDataset validation, int rank,
                               int worldSize, GradientReducer reducer) {
        this(config, train, validation, rank, worldSize, reducer, worldSize == 1 ? SumReducer.single() : null);
    }

    /**
     * @param train           training tokens (every rank passes the same dataset)
     * @param validation      validation tokens, or null for no validation
     * @param evaluationSums  adds the ranks' evaluation statistics; null when this trainer never evaluates
     */
    public DataParallelTrainer(TrainerConfig config, TokenDataset train, TokenDataset validation, int rank,
                               int worldSize, GradientReducer reducer, SumReducer evaluationSums) {
        this(config, train, validation, rank, worldSize, reducer, evaluationSums, null);
    }

    /**
     * @param reducer         under DiLoCo: the mean over the ranks of this rank's data center only
     * @param outerReducer    DiLoCo's outer all-reduce: replaces a slice of pseudo-gradients by their mean over the
     *                        data centers, bitwise the same on every rank (needed iff the config has DiLoCo)
     */
    public DataParallelTrainer(TrainerConfig config, TokenDataset train, TokenDataset validation, int rank,
                               int worldSize, GradientReducer reducer, SumReducer evaluationSums,
                               GradientReducer outerReducer) {
        this.config = Objects.requireNonNull(config);
        this.model = config.model();
        this.rank = rank;
        this.worldSize = worldSize;
        this.reducer = Objects.requireNonNull(reducer);
        if (train.vocabSize() > model.vocabSize()) {
            throw new IllegalArgumentException("dataset vocabulary " + train.vocabSize() + " exceeds model vocabulary "
                    + model.vocabSize() + " of preset " + model.name());
        }
        this.sampler = new BatchSampler(train, model.contextLength(), config.globalBatch(), worldSize, rank,
                config.seed());
        if (validation != null && config.evalEvery() > 0 && evaluationSums == null) {
            throw new IllegalArgumentException("evaluating every " + config.evalEvery() + " steps across " + worldSize
                    + " ranks needs a SumReducer for the evaluation statistics");
        }
        this.evaluator = validation == null || evaluationSums == null ? null
                : new Evaluator(validation, model.contextLength(), config.evalWindows(), sampler.localBatch(), rank,
                        worldSize, evaluationSums);
        this.schedule = config.schedule();

        DjlRuntime.load(DjlRuntime.CACHE_DIR, config.threads());
        this.manager = NDManager.newBaseManager();
        this.network = new GptModel(model);
        network.initialize(manager);
        this.store = new ParameterStore(manager, false);
        this.parameters = network.orderedParameters();
        this.parameterNames = network.orderedParameterNames();
        this.decay = new boolean[parameters.size()];
        long floats = 0;
        for (int i = 0; i < parameters.size(); i++) {
            NDArray array = parameters.get(i).getArray();
            ByteBuffer buffer = array.toByteBuffer(true);
            if (!buffer.isDirect() || buffer.capacity() != array.size() * Float.BYTES) {
                throw new IllegalStateException("parameter " + parameterNames.get(i) + " is not in native memory");
            }
            parameterBuffers.add(buffer);
            parameterMemory.add(MemorySegment.ofBuffer(buffer));
            decay[i] = array.getShape().dimension() >= 2;
            floats += array.size();
        }
        this.parameterFloats = floats;
        if (floats != model.parameterCount()) {
            throw new IllegalStateException("model has " + floats + " parameters, config predicts "
                    + model.parameterCount());
        }
        this.flat = arena.allocate((floats + 1) * Float.BYTES, 64);
        this.optimizer = new AdamW(floats, 0.9f, 0.95f, 1e-8f);
        this.gradients = new FlatGradients(parameters, flat);
        // with one rank there is nothing to overlap
        this.backward = config.overlap() && worldSize > 1
                ? new StagedBackward(manager, network, store, gradients, reducer, parameters, rank)
                : new WholeGraphBackward(manager, network, store, gradients, reducer);
        initializeWeights(config.seed());
        if (config.diloco() != null) {
            if (outerReducer == null) {
                throw new IllegalArgumentException("DiLoCo needs an outer reducer (the mean over data centers)");
            }
            this.outer = new OuterLoop(config.diloco(), new FragmentPlan(tensorLayers(), model.layers(),
                    config.diloco()), parameterMemory, outerReducer, rank);
        } else {
            this.outer = null;
        }
    }

    /** Per parameter in flat order: -1 for the embeddings, b for block b, the layer count after the last block. */
    private int[] tensorLayers() {
        IdentityHashMap<Parameter, Integer> stageOf = new IdentityHashMap<>();
        List<List<Parameter>> stages = network.stageParameters();
        for (int s = 0; s < stages.size(); s++) {
            for (Parameter p : stages.get(s)) stageOf.putIfAbsent(p, s - 1); // a tied head stays with the embedding
        }
        int[] layers = new int[parameters.size()];
        for (int i = 0; i < layers.length; i++) {
            Integer layer = stageOf.get(parameters.get(i));
            if (layer == null) throw new IllegalStateException("parameter " + parameterNames.get(i) + " is in no stage");
            layers[i] = layer;
        }
        return layers;
    }

    /** GPT-2 initialisation from a seeded Java RNG, independent of the engine's global generator and of threads. */
    private void initializeWeights(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        double residualScale = 1.0 / Math.sqrt(2.0 * model.layers());
        for (int p = 0; p < parameters.size(); p++) {
            String name = parameterNames.get(p);
            MemorySegment w = parameterMemory.get(p);
            long n = w.byteSize() / Float.BYTES;
            boolean matrix = decay[p];
            float constant = name.endsWith("gamma") ? 1f : 0f;
            double std = name.endsWith("proj_weight") ? 0.02 * residualScale : 0.02;
            for (long i = 0; i < n; i++) {
                w.setAtIndex(F32, i, matrix ? (float) (random.nextGaussian() * std) : constant);
            }
        }
    }

    /**
     * Runs steps until {@link TrainerConfig#steps()}, evaluating as configured. Checkpoints are the caller's: its
     * listener decides which steps and files ({@link TrainerConfig#checkpointDue}, {@link #saveCheckpoint}), as only
     * it knows which ranks of a job write one and under which names.
     */
    public List<StepStats> train(StepListener listener) {
        List<StepStats> all = new ArrayList<>();
        while (completedSteps < config.steps()) {
            StepStats stats = trainStep();
            all.add(stats);
            if (listener != null) {
                listener.onStep(stats);
            }
        }
        return all;
    }

    /** One synchronous data-parallel step (every rank must call it the same number of times). */
    public StepStats trainStep() {
        long step = completedSteps;
        long start = System.nanoTime();
        Batch batch = sampler.batch(step);
        float localLoss = backward.forwardBackward(batch);
        long computed = System.nanoTime();
        double sumSquares = backward.meanGradient();
        long reduced = System.nanoTime();

        float meanLoss = gradients.loss();
        double norm = Math.sqrt(sumSquares);
        float scale = config.gradClipNorm() > 0 && norm > config.gradClipNorm()
                ? (float) (config.gradClipNorm() / (norm + 1e-6)) : 1f;
        double lr = schedule.at(step);
        optimizer.step(parameterMemory, flat, scale, decay, lr, config.weightDecay());
        completedSteps++;
        long optimized = System.nanoTime();
        StepStats.Outer outerActivity = StepStats.Outer.NONE;
        if (outer != null) {
            // The last step ends with every fragment synced, so all ranks hold the identical global model.
            outerActivity = completedSteps >= config.steps() ? outer.finish(completedSteps)
                    : outer.afterStep(completedSteps);
        }
        long end = System.nanoTime();
        Evaluation validation = config.evalEvery() > 0 && completedSteps % config.evalEvery() == 0
                && evaluator != null ? evaluate() : null;
        double tokens = (double) config.globalBatch() * model.contextLength();
        // The outer sync is communication: its all-reduces, and its few passes over the fragment's parameters.
        return new StepStats(step, meanLoss, localLoss, lr, norm, millis(computed - start),
                millis(reduced - computed) + millis(end - optimized), millis(optimized - reduced),
                tokens / ((end - start) / 1e9), validation, outerActivity);
    }

    /**
     * The validation loss of the current weights and its standard error ({@link Evaluator}); every rank must call
     * it at the same point, as it all-reduces the ranks' shares.
     */
    public Evaluation evaluate() {
        if (evaluator == null) {
            throw new IllegalStateException("trainer has no validation dataset (or, across ranks, no SumReducer)");
        }
        boolean previousGradMode = JniUtils.isGradMode();
        JniUtils.setGradMode(false); // torch enables autograd per thread by default: no graph for evaluation
        try {
            return evaluator.evaluate(this::windowLosses);
        } finally {
            JniUtils.setGradMode(previousGradMode);
        }
    }

    private float[] windowLosses(Batch batch) {
        try (NDManager evalManager = manager.newSubManager()) {
            Shape shape = new Shape(batch.batchSize(), batch.contextLength());
            NDArray inputs = evalManager.create(batch.inputs(), shape);
            NDArray targets = evalManager.create(batch.targets(), shape);
            NDArray logits = network.forward(store, new NDList(inputs), false).singletonOrThrow();
            return GptModel.crossEntropyPerSequence(logits, targets).toFloatArray();
        }
    }

    /** CRC32C over all parameter bytes in the fixed order: equal on every rank iff the weights are bitwise equal. */
    public long weightChecksum() {
        CRC32C crc = new CRC32C();
        for (ByteBuffer buffer : parameterBuffers) {
            crc.update(buffer.duplicate().clear());
        }
        return crc.getValue();
    }

    /**
     * Under DiLoCo: CRC32C of the global parameters, identical on every rank of every data center at every step
     * (each data center's own parameters differ between syncs). Under plain data parallelism: {@link #weightChecksum()}.
     */
    public long syncedChecksum() {
        return outer == null ? weightChecksum() : outer.globalChecksum();
    }

    /** Whether this trainer runs DiLoCo's outer loop. */
    public boolean diloco() {
        return outer != null;
    }

    /** DiLoCo's global parameters in flat order (plain data parallelism: the parameters). */
    public float[] globalSnapshot() {
        return outer == null ? parameterSnapshot() : outer.globalSnapshot();
    }

    /** Overwrites all parameters from {@code values} in flat order (tests build reference runs with it). */
    void setParameters(float[] values) {
        if (values.length != parameterFloats) {
            throw new IllegalArgumentException(values.length + " values for " + parameterFloats + " parameters");
        }
        int offset = 0;
        for (MemorySegment w : parameterMemory) {
            int n = (int) (w.byteSize() / Float.BYTES);
            MemorySegment.copy(values, offset, w, F32, 0, n);
            offset += n;
        }
    }

    /** Copy of all parameters in flat order. */
    public float[] parameterSnapshot() {
        float[] out = new float[Math.toIntExact(parameterFloats)];
        int offset = 0;
        for (MemorySegment w : parameterMemory) {
            int n = (int) (w.byteSize() / Float.BYTES);
            MemorySegment.copy(w, F32, 0, out, offset, n);
            offset += n;
        }
        return out;
    }

    public long completedSteps() {
        return completedSteps;
    }

    public long parameterCount() {
        return parameterFloats;
    }

    public List<String> parameterNames() {
        return List.copyOf(parameterNames);
    }

    public int rank() {
        return rank;
    }

    private String settings = "";

    public int worldSize() {
        return worldSize;
    }

    public GptModel model() {
        return network;
    }

    public BatchSampler sampler() {
        return sampler;
    }

    /**
     * Writes parameters, AdamW moments and update count, and the step. The sampler is a pure function of
     * (seed, step), so seed and step are the whole RNG state. Written to a temporary file and moved into place.
     */
    public void saveCheckpoint(Path file) throws IOException {
        List<String> names = parameterNames;
        long[] sizes = sizes();
        List<List<MemorySegment>> sections = new ArrayList<>(List.of(parameterMemory, List.of(optimizer.firstMoment()),
                List.of(optimizer.secondMoment())));
        if (outer != null) {
            // DiLoCo's outer state follows the moments, listed after the parameters in the header. A running outer
            // all-reduce is waited for (not applied): its result is saved as pending, to be applied at its step.
            outer.awaitInFlight();
            names = new ArrayList<>(parameterNames);
            names.addAll(OuterLoop.CHECKPOINT_NAMES);
            sizes = concat(sizes, outer.checkpointSizes());
            sections.add(outer.checkpointSections());
        }
        CheckpointFile.Header header = new CheckpointFile.Header(CHECKPOINT_MAGIC, model.name(), config.seed(),
                completedSteps, optimizer.updates(), settings, names, sizes);
        CheckpointFile.write(file, header, sections);
    }

    private static long[] concat(long[] a, long[] b) {
        long[] all = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }

    /**
     * Records the run's settings (JSON: every option of the command that started the run, defaults included); every
     * checkpoint written from now on carries them, as nanoGPT keeps its config in its checkpoints.
     */
    public void recordSettings(String json) {
        settings = json == null ? "" : json;
    }

    /** The preset a checkpoint was trained with; a clear error for a file that is not a training checkpoint. */
    public static String checkpointPreset(Path file) throws IOException {
        return CheckpointFile.readHeader(file, CHECKPOINT_MAGIC).preset();
    }

    /** The settings a checkpoint carries (see {@link #recordSettings}); "" for one written without them. */
    public static String checkpointSettings(Path file) throws IOException {
        return CheckpointFile.readHeader(file, CHECKPOINT_MAGIC).settings();
    }

    /**
     * Restores a checkpoint written by a trainer of the same preset, seed and parameter layout. Under DiLoCo a
     * checkpoint with outer state continues it exactly; one without (plain data parallelism) starts the outer loop
     * from its weights. A DiLoCo checkpoint is refused by a plain data-parallel trainer (each data center's weights
     * differ between syncs).
     */
    public void loadCheckpoint(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new IOException("no checkpoint at " + file);
        }
        boolean hasOuter = CheckpointFile.readHeader(file, CHECKPOINT_MAGIC).names().size() > parameterNames.size();
        if (hasOuter && outer == null) {
            throw new IOException("checkpoint " + file + " holds DiLoCo's outer state: resume it with --sync diloco");
        }
        List<String> names = parameterNames;
        long[] sizes = sizes();
        List<List<MemorySegment>> sections = new ArrayList<>(List.of(parameterMemory, List.of(optimizer.firstMoment()),
                List.of(optimizer.secondMoment())));
        if (hasOuter) {
            names = new ArrayList<>(parameterNames);
            names.addAll(OuterLoop.CHECKPOINT_NAMES);
            sizes = concat(sizes, outer.checkpointSizes());
            sections.add(outer.checkpointSections());
        }
        List<String> expectedNames = names;
        long[] expectedSizes = sizes;
        CheckpointFile.Header header = CheckpointFile.read(file, CHECKPOINT_MAGIC, sections, h -> {
                    if (!h.preset().equals(model.name()) || h.seed() != config.seed()) {
                        throw new IOException("checkpoint " + file + " (preset " + h.preset() + ", seed " + h.seed()
                                + ") does not match this trainer (preset " + model.name() + ", seed " + config.seed()
                                + ")");
                    }
                    if (!h.names().equals(expectedNames) || !Arrays.equals(h.sizes(), expectedSizes)) {
                        throw new IOException("checkpoint " + file + " has another parameter layout"
                                + (hasOuter ? " or another number of DiLoCo fragments" : "") + " than this trainer");
                    }
                });
        completedSteps = header.step();
        optimizer.restoreUpdates(header.optimizerUpdates());
        if (outer != null && !hasOuter) {
            outer.reset();
        }
    }

    private long[] sizes() {
        long[] sizes = new long[parameterMemory.size()];
        for (int i = 0; i < sizes.length; i++) {
            sizes[i] = parameterMemory.get(i).byteSize() / Float.BYTES;
        }
        return sizes;
    }

    private static double millis(long nanos) {
        return nanos / 1e6;
    }

    @Override
    public void close() {
        backward.close(); // before the arena: an overlapped all-reduce writes into the flat buffer
        if (outer != null) {
            outer.close();
        }
        optimizer.close();
        manager.close();
        arena.close();
    }
}
