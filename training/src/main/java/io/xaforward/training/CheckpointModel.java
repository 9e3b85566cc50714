package io.xaforward.training;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.ParameterStore;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The weights of a training checkpoint loaded into a {@link GptModel} for inference and export (the optimizer state
 * in the file is skipped). The preset named in the checkpoint decides the model's shape.
 */
public final class CheckpointModel implements AutoCloseable {

    private final ModelConfig config;
    private final long step;
    private final NDManager manager;
    private final GptModel network;
    private final ParameterStore store;
    private final List<String> names;
    private final List<NDArray> arrays = new ArrayList<>();

    private CheckpointModel(ModelConfig config, long step, NDManager manager, GptModel network) {
        this.config = config;
        this.step = step;
        this.manager = manager;
        this.network = network;
        this.store = new ParameterStore(manager, false);
        this.names = network.orderedParameterNames();
        for (Parameter p : network.orderedParameters()) {
            arrays.add(p.getArray());
        }
    }

    /** Loads the weights of a checkpoint written by {@link DataParallelTrainer#saveCheckpoint}. */
    public static CheckpointModel load(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new IOException("no checkpoint at " + file);
        }
        CheckpointFile.Header header = CheckpointFile.readHeader(file, DataParallelTrainer.CHECKPOINT_MAGIC);
        ModelConfig config = ModelConfig.preset(header.preset());
        DjlRuntime.load();
        NDManager manager = NDManager.newBaseManager();
        try {
            GptModel network = new GptModel(config);
            network.initialize(manager);
            CheckpointModel model = new CheckpointModel(config, header.step(), manager, network);
            List<MemorySegment> memory = new ArrayList<>();
            long[] sizes = new long[model.arrays.size()];
            for (int i = 0; i < sizes.length; i++) {
                NDArray array = model.arrays.get(i);
                memory.add(MemorySegment.ofBuffer(array.toByteBuffer(true)));
                sizes[i] = array.size();
            }
            // Only the parameter section is read; the optimizer moments after it are not needed here.
            CheckpointFile.read(file, DataParallelTrainer.CHECKPOINT_MAGIC, List.of(memory), h -> {
                // A DiLoCo checkpoint lists its outer state after the parameters: only the parameters are read here.
                int n = model.names.size();
                if (h.names().size() < n || !h.names().subList(0, n).equals(model.names)
                        || !Arrays.equals(Arrays.copyOf(h.sizes(), Math.min(n, h.sizes().length)), sizes)) {
                    throw new IOException("checkpoint " + file + " does not match the parameter layout of preset "
                            + header.preset());
                }
            });
            return model;
        } catch (IOException | RuntimeException e) {
            manager.close();
            throw e;
        }
    }

    public ModelConfig config() {
        return config;
    }

    /** Training steps completed when the checkpoint was written. */
    public long step() {
        return step;
    }

    /** Parameter names in the model's fixed order (DJL block names, e.g. h0_attn_qkv_weight). */
    public List<String> parameterNames() {
        return List.copyOf(names);
    }

    /** The parameter tensors, in {@link #parameterNames()} order. */
    public List<NDArray> parameters() {
        return List.copyOf(arrays);
    }

    /** Logits [V] for the token after {@code context} (at most the model's context length, at least one id). */
    public float[] nextTokenLogits(long[] context) {
        boolean previous = JniUtils.isGradMode();
        JniUtils.setGradMode(false);
        try (NDManager scope = manager.newSubManager()) {
            NDArray input = scope.create(context, new Shape(1, context.length));
            NDArray logits = network.forward(store, new NDList(input), false).singletonOrThrow();
            return logits.get(0, context.length - 1).toFloatArray();
        } finally {
            JniUtils.setGradMode(previous);
        }
    }

    @Override
    public void close() {
        manager.close();
    }
}
