package io.xaforward.training;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.ndarray.types.SparseFormat;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Parameter;
import ai.djl.nn.norm.LayerNorm;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import ai.djl.util.PairList;

import java.util.ArrayList;
import java.util.List;

/**
 * Decoder-only transformer language model (GPT-2 layout): token + learned position embeddings, N pre-LN blocks, a
 * final LayerNorm and an output head (tied to the token embedding when the config says so). Input: int64 token ids
 * [B, T]; output: logits [B, T, V]. Kept as plain DJL AbstractBlocks so that parameters have a stable, documented
 * order ({@link #orderedParameters()}), which is what a flat all-reduce buffer needs.
 */
public final class GptModel extends AbstractBlock {

    private final ModelConfig config;
    private final Parameter tokenEmbedding;
    private final Parameter positionEmbedding;
    private final List<TransformerBlock> blocks = new ArrayList<>();
    private final LayerNorm finalNorm;
    private final Parameter head;

    public GptModel(ModelConfig config) {
        super((byte) 1);
        this.config = config;
        long d = config.embeddingSize();
        tokenEmbedding = addParameter(Parameter.builder().setName("wte").setType(Parameter.Type.WEIGHT)
                .optShape(new Shape(config.vocabSize(), d)).optInitializer(Initializer.ZEROS).build());
        positionEmbedding = addParameter(Parameter.builder().setName("wpe").setType(Parameter.Type.WEIGHT)
                .optShape(new Shape(config.contextLength(), d)).optInitializer(Initializer.ZEROS).build());
        for (int i = 0; i < config.layers(); i++) {
            blocks.add(addChildBlock("h" + i, new TransformerBlock(config.embeddingSize(), config.heads())));
        }
        finalNorm = addChildBlock("ln_f", LayerNorm.builder().axis(2).build());
        head = config.tiedHead() ? null : addParameter(Parameter.builder().setName("lm_head")
                .setType(Parameter.Type.WEIGHT).optShape(new Shape(config.vocabSize(), d))
                .optInitializer(Initializer.ZEROS).build());
    }

    public ModelConfig config() {
        return config;
    }

    /** Allocates the parameters for inputs of [batch, contextLength] on the manager's device. */
    public void initialize(NDManager manager) {
        initialize(manager, DataType.FLOAT32, new Shape(1, config.contextLength()));
    }

    /** All trainable parameters in the fixed order used for flat gradient buffers and checksums. */
    public List<Parameter> orderedParameters() {
        List<Parameter> out = new ArrayList<>();
        getParameters().forEach(pair -> out.add(pair.getValue()));
        return out;
    }

    /** Parameter names in {@link #orderedParameters()} order (for checkpoints and diagnostics). */
    public List<String> orderedParameterNames() {
        List<String> out = new ArrayList<>();
        getParameters().forEach(pair -> out.add(pair.getKey()));
        return out;
    }

    @Override
    protected NDList forwardInternal(ParameterStore store, NDList inputs, boolean training,
                                     PairList<String, Object> params) {
        NDArray tokens = inputs.singletonOrThrow();
        NDArray x = embed(store, tokens, training);
        for (int i = 0; i < blocks.size(); i++) {
            x = block(store, i, x, training);
        }
        return new NDList(head(store, x, training));
    }

    /** Number of transformer blocks (the stages of a block-by-block backward pass are embed, blocks, head). */
    public int blockCount() {
        return blocks.size();
    }

    /** First stage of the forward pass: token plus position embedding, [B, T] ids to [B, T, C]. */
    public NDArray embed(ParameterStore store, NDArray tokens, boolean training) {
        long t = tokens.getShape().get(1);
        if (t > config.contextLength()) {
            throw new IllegalArgumentException("sequence length " + t + " exceeds context " + config.contextLength());
        }
        NDArray wte = store.getValue(tokenEmbedding, tokens.getDevice(), training);
        NDArray wpe = store.getValue(positionEmbedding, tokens.getDevice(), training);
        NDArray tok = wte.getNDArrayInternal().embedding(tokens, wte, SparseFormat.DENSE).singletonOrThrow();
        return tok.add(wpe.get(new NDIndex("0:" + t)));
    }

    /** Transformer block {@code index}, [B, T, C] to [B, T, C]. */
    public NDArray block(ParameterStore store, int index, NDArray x, boolean training) {
        return blocks.get(index).forward(store, new NDList(x), training).singletonOrThrow();
    }

    /** Last stage: final LayerNorm and output head, [B, T, C] to logits [B, T, V]. */
    public NDArray head(ParameterStore store, NDArray x, boolean training) {
        NDArray normed = finalNorm.forward(store, new NDList(x), training).singletonOrThrow();
        NDArray headWeight = store.getValue(head == null ? tokenEmbedding : head, x.getDevice(), training);
        return normed.matMul(headWeight.transpose());
    }

    /** The parameters of each stage in forward order: embed, block 0 .. block N-1, head (final norm, lm_head). */
    public List<List<Parameter>> stageParameters() {
        List<List<Parameter>> stages = new ArrayList<>();
        List<Parameter> embedding = new ArrayList<>(List.of(tokenEmbedding, positionEmbedding));
        stages.add(embedding);
        for (TransformerBlock block : blocks) {
            List<Parameter> own = new ArrayList<>();
            block.getParameters().forEach(pair -> own.add(pair.getValue()));
            stages.add(own);
        }
        List<Parameter> last = new ArrayList<>();
        finalNorm.getParameters().forEach(pair -> last.add(pair.getValue()));
        if (head != null) {
            last.add(head);
        }
        stages.add(last);
        return stages;
    }

    /**
     * Mean next-token cross-entropy of logits [B, T, V] against int64 targets [B, T]. Written with logSoftmax and
     * gather instead of SoftmaxCrossEntropyLoss, whose weight multiplication uses a Java-backed scalar in backward.
     */
    public static NDArray crossEntropy(NDArray logits, NDArray targets) {
        NDArray logProbs = logits.logSoftmax(-1);
        return logProbs.gather(targets.expandDims(-1), -1).mean().neg();
    }

    /** Mean next-token cross-entropy of each sequence: [B] from logits [B, T, V] and int64 targets [B, T]. */
    public static NDArray crossEntropyPerSequence(NDArray logits, NDArray targets) {
        NDArray logProbs = logits.logSoftmax(-1);
        return logProbs.gather(targets.expandDims(-1), -1).squeeze(-1).mean(new int[] {1}).neg();
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape in = inputShapes[0];
        return new Shape[] {new Shape(in.get(0), in.get(1), config.vocabSize())};
    }

    @Override
    protected void initializeChildBlocks(NDManager manager, DataType dataType, Shape... inputShapes) {
        Shape hidden = new Shape(inputShapes[0].get(0), inputShapes[0].get(1), config.embeddingSize());
        for (TransformerBlock block : blocks) {
            block.initialize(manager, dataType, hidden);
        }
        finalNorm.initialize(manager, dataType, hidden);
    }
}
