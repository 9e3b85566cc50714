package io.xaforward.training;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.pytorch.engine.PtNDArray;
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
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

/**
 * One rank of synchronous data-parallel training of a {@link GptModel}. Each step: forward and backward on this
 * rank's micro-batch, gather every parameter gradient into ONE flat native-order buffer in the model's fixed
 * parameter order, all-reduce it to the mean through the {@link GradientReducer}, copy the mean back into each
 * gradient tensor's own memory, clip by the global norm of the mean (so every rank clips identically), then AdamW.
 * Ranks start from the same seeded weights and apply identical updates, so their weights stay identical; compare
 * {@link #weightChecksum()} to check.
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

    private final boolean overlap;
    /** Offset in floats of each parameter in the flat buffer; one extra entry: the total. */
    private final long[] parameterOffsets;
    /** Per backward stage: first parameter of the longest flat-buffer suffix whose gradients are final after it. */
    private final int[] readyFrom;
    private final ExecutorService communication;
    private final List<Future<Double>> pendingReductions = new ArrayList<>();
    /** First parameter already handed to the communication thread in the current step. */
    private int issuedFrom;

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
        this.parameterOffsets = new long[parameters.size() + 1];
        for (int i = 0; i < parameters.size(); i++) {
            parameterOffsets[i + 1] = parameterOffsets[i] + parameters.get(i).getArray().size();
        }
        this.readyFrom = readySuffixes(network.stageParameters(), parameters);
        this.overlap = config.overlap() && worldSize > 1; // with one rank there is nothing to overlap
        this.communication = overlap ? Executors.newSingleThreadExecutor(r -> {
            Thread thread = new Thread(r, "gradient-allreduce-rank" + rank);
            thread.setDaemon(true);
            return thread;
        }) : null;
        initializeWeights(config.seed());
    }

    /**
     * For backward stage s (0 = embedding .. last = head; backward runs them last to first), the first parameter of
     * the longest suffix of the flat order whose parameters all belong to stages >= s, i.e. whose gradients are
     * final once stage s's backward is done. A parameter used by several stages (a tied head) counts as belonging to
     * the earliest one.
     */
    private static int[] readySuffixes(List<List<Parameter>> stages, List<Parameter> ordered) {
        Map<Parameter, Integer> stageOf = new IdentityHashMap<>();
        for (int s = 0; s < stages.size(); s++) {
            for (Parameter parameter : stages.get(s)) {
                stageOf.putIfAbsent(parameter, s);
            }
        }
        if (stageOf.size() != ordered.size() || !stageOf.keySet().containsAll(ordered)) {
            throw new IllegalStateException("model stages cover " + stageOf.size() + " parameters, the flat order "
                    + ordered.size());
        }
        int[] from = new int[stages.size()];
        for (int s = 0; s < stages.size(); s++) {
            int p = ordered.size();
            while (p > 0 && stageOf.get(ordered.get(p - 1)) >= s) {
                p--;
            }
            from[s] = p;
        }
        return from;
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

    /** Runs steps until {@link TrainerConfig#steps()}, evaluating and checkpointing as configured. */
    public List<StepStats> train(StepListener listener) throws IOException {
        List<StepStats> all = new ArrayList<>();
        while (completedSteps < config.steps()) {
            StepStats stats = trainStep();
            all.add(stats);
            if (listener != null) {
                listener.onStep(stats);
            }
            if (config.checkpointEvery() > 0 && completedSteps % config.checkpointEvery() == 0) {
                Path file = config.checkpointDir().resolve(String.format("ckpt-rank%d-step%06d.bin", rank,
                        completedSteps));
                saveCheckpoint(file);
                if (listener != null) {
                    listener.onCheckpoint(completedSteps, file);
                }
            }
        }
        return all;
    }

    /** One synchronous data-parallel step (every rank must call it the same number of times). */
    public StepStats trainStep() {
        long step = completedSteps;
        long start = System.nanoTime();
        Batch batch = sampler.batch(step);
        double sumSquares;
        float localLoss;
        long computed;
        if (overlap) {
            localLoss = forwardBackwardOverlapped(batch);
            computed = System.nanoTime();
            sumSquares = awaitReductions();
        } else {
            localLoss = forwardBackwardAndGather(batch);
            flat.setAtIndex(F32, parameterFloats, localLoss);
            computed = System.nanoTime();
            reducer.allReduceMean(flat, Math.toIntExact(parameterFloats + 1));
            sumSquares = sumOfSquares(0, parameterFloats);
        }
        long reduced = System.nanoTime();

        float meanLoss = flat.getAtIndex(F32, parameterFloats);
        double norm = Math.sqrt(sumSquares);
        float scale = config.gradClipNorm() > 0 && norm > config.gradClipNorm()
                ? (float) (config.gradClipNorm() / (norm + 1e-6)) : 1f;
        double lr = schedule.at(step);
        optimizer.step(parameterMemory, flat, scale, decay, lr, config.weightDecay());
        completedSteps++;
        long end = System.nanoTime();
        Evaluation validation = config.evalEvery() > 0 && completedSteps % config.evalEvery() == 0
                && evaluator != null ? evaluate() : null;
        double tokens = (double) config.globalBatch() * model.contextLength();
        return new StepStats(step, meanLoss, localLoss, lr, norm, millis(computed - start),
                millis(reduced - computed), millis(end - reduced), tokens / ((end - start) / 1e9), validation);
    }

    /** One backward call over the whole graph, then every gradient gathered into the flat buffer. */
    private float forwardBackwardAndGather(Batch batch) {
        try (NDManager stepManager = manager.newSubManager()) {
            Shape shape = new Shape(batch.batchSize(), batch.contextLength());
            NDArray inputs = stepManager.create(batch.inputs(), shape).duplicate();
            NDArray targets = stepManager.create(batch.targets(), shape).duplicate();
            float loss;
            boolean previousGradMode = JniUtils.isGradMode();
            JniUtils.setGradMode(true);
            try {
                NDArray logits = network.forward(store, new NDList(inputs), true).singletonOrThrow();
                NDArray lossArray = GptModel.crossEntropy(logits, targets);
                NDArray seed = stepManager.ones(new Shape(), DataType.FLOAT32);
                JniUtils.backward((PtNDArray) lossArray, (PtNDArray) seed, false, false);
                loss = lossArray.getFloat();
            } finally {
                JniUtils.setGradMode(previousGradMode);
            }
            gatherGradients(0, parameters.size());
            return loss;
        }
    }

    /**
     * Forward with the graph cut at every stage boundary (embedding, each block, head): each stage's input is a
     * detached leaf that requires a gradient. Backward then runs stage by stage from the loss down; as soon as the
     * stages behind a suffix of the flat buffer are done, that suffix is gathered and handed to the communication
     * thread, whose all-reduce runs while the main thread continues with the earlier stages' backward.
     */
    private float forwardBackwardOverlapped(Batch batch) {
        try (NDManager stepManager = manager.newSubManager()) {
            Shape shape = new Shape(batch.batchSize(), batch.contextLength());
            NDArray inputs = stepManager.create(batch.inputs(), shape).duplicate();
            NDArray targets = stepManager.create(batch.targets(), shape).duplicate();
            int blocks = network.blockCount();
            NDArray[] stageOutputs = new NDArray[blocks + 1];
            NDArray[] stageInputs = new NDArray[blocks + 2];
            boolean previousGradMode = JniUtils.isGradMode();
            JniUtils.setGradMode(true);
            try {
                NDArray x = network.embed(store, inputs, true);
                stageOutputs[0] = x;
                for (int i = 0; i < blocks; i++) {
                    stageInputs[i + 1] = detachedLeaf(x, stepManager);
                    x = network.block(store, i, stageInputs[i + 1], true);
                    stageOutputs[i + 1] = x;
                }
                stageInputs[blocks + 1] = detachedLeaf(x, stepManager);
                NDArray lossArray = GptModel.crossEntropy(network.head(store, stageInputs[blocks + 1], true), targets);
                float loss = lossArray.getFloat();
                flat.setAtIndex(F32, parameterFloats, loss);
                issuedFrom = parameters.size();
                NDArray seed = stepManager.ones(new Shape(), DataType.FLOAT32);
                JniUtils.backward((PtNDArray) lossArray, (PtNDArray) seed, false, false);
                issueReadySuffix(blocks + 1);
                for (int s = blocks; s >= 0; s--) {
                    NDArray upstream = stageInputs[s + 1].getGradient();
                    upstream.attach(stepManager);
                    JniUtils.backward((PtNDArray) stageOutputs[s], (PtNDArray) upstream, false, false);
                    issueReadySuffix(s);
                }
                return loss;
            } finally {
                JniUtils.setGradMode(previousGradMode);
            }
        }
    }

    /** A leaf sharing {@code x}'s storage, cut from its graph, whose gradient backward will fill. */
    private static NDArray detachedLeaf(NDArray x, NDManager owner) {
        NDArray leaf = x.stopGradient();
        leaf.attach(owner);
        leaf.setRequiresGradient(true);
        return leaf;
    }

    /**
     * After the backward of stage {@code stage}: gathers the parameters from {@link #readyFrom}[stage] up to the
     * last issued one and submits their all-reduce (the first submission of a step also carries the loss float).
     */
    private void issueReadySuffix(int stage) {
        int from = readyFrom[stage];
        if (from >= issuedFrom) {
            return;
        }
        gatherGradients(from, issuedFrom);
        long first = parameterOffsets[from];
        long last = issuedFrom == parameters.size() ? parameterFloats + 1 : parameterOffsets[issuedFrom];
        long gradientEnd = Math.min(last, parameterFloats);
        issuedFrom = from;
        pendingReductions.add(communication.submit(() -> {
            reducer.allReduceMean(flat.asSlice(first * Float.BYTES), Math.toIntExact(last - first));
            return sumOfSquares(first, gradientEnd);
        }));
    }

    /** Waits for this step's reductions in submission order; returns the sum of squares of the mean gradient. */
    private double awaitReductions() {
        if (issuedFrom != 0) {
            throw new IllegalStateException("backward left parameters " + 0 + ".." + issuedFrom + " unreduced");
        }
        double sumSquares = 0;
        RuntimeException failure = null;
        for (Future<Double> pending : pendingReductions) {
            try {
                sumSquares += pending.get();
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (failure == null) {
                    failure = cause instanceof RuntimeException r ? r
                            : new IllegalStateException("gradient all-reduce failed", cause);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for the gradient all-reduce", e);
            }
        }
        pendingReductions.clear();
        if (failure != null) {
            throw failure;
        }
        return sumSquares;
    }

    /**
     * Copies the gradients of parameters [from, to) into their place in the flat buffer and zeroes them (backward
     * accumulates into gradients, and the optimizer reads the flat buffer, not the tensors).
     */
    private void gatherGradients(int from, int to) {
        for (int p = from; p < to; p++) {
            try (NDArray grad = parameters.get(p).getArray().getGradient()) {
                MemorySegment gradMemory = gradientMemory(grad);
                MemorySegment.copy(gradMemory, 0, flat, parameterOffsets[p] * Float.BYTES, gradMemory.byteSize());
                gradMemory.fill((byte) 0);
            }
        }
    }

    private static MemorySegment gradientMemory(NDArray grad) {
        ByteBuffer buffer = grad.toByteBuffer(true);
        if (!buffer.isDirect() || buffer.capacity() != grad.size() * Float.BYTES) {
            throw new IllegalStateException("gradient is not a dense float32 tensor in native memory");
        }
        return MemorySegment.ofBuffer(buffer);
    }

    /** Sum of squares of flat floats [from, to), summed in index order (identical on every rank). */
    private double sumOfSquares(long from, long to) {
        double sum = 0;
        for (long i = from; i < to; i++) {
            double g = flat.getAtIndex(F32, i);
            sum += g * g;
        }
        return sum;
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
        CheckpointFile.Header header = new CheckpointFile.Header(CHECKPOINT_MAGIC, model.name(), config.seed(),
                completedSteps, optimizer.updates(), settings, parameterNames, sizes());
        CheckpointFile.write(file, header, List.of(parameterMemory, List.of(optimizer.firstMoment()),
                List.of(optimizer.secondMoment())));
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

    /** Restores a checkpoint written by a trainer of the same preset, seed and parameter layout. */
    public void loadCheckpoint(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new IOException("no checkpoint at " + file);
        }
        CheckpointFile.Header header = CheckpointFile.read(file, CHECKPOINT_MAGIC, List.of(parameterMemory,
                List.of(optimizer.firstMoment()), List.of(optimizer.secondMoment())), h -> {
                    if (!h.preset().equals(model.name()) || h.seed() != config.seed()
                            || !h.names().equals(parameterNames) || !java.util.Arrays.equals(h.sizes(), sizes())) {
                        throw new IOException("checkpoint " + file + " (preset " + h.preset() + ", seed " + h.seed()
                                + ") does not match this trainer (preset " + model.name() + ", seed " + config.seed()
                                + ")");
                    }
                });
        completedSteps = header.step();
        optimizer.restoreUpdates(header.optimizerUpdates());
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
        if (communication != null) {
            communication.shutdownNow();
            try {
                // The reduction thread writes into the flat buffer: it must be gone before the arena is freed.
                if (!communication.awaitTermination(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("gradient all-reduce thread of rank " + rank + " did not stop");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        optimizer.close();
        manager.close();
        arena.close();
    }
}
