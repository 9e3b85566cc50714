package io.xaforward.training;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Activation;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.LayerNorm;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * One pre-LN GPT block: x + attn(ln1(x)), then x + mlp(ln2(x)) with a 4x GELU MLP. LayerNorm is given axis 2 (the
 * channel axis of [B, T, C]); DJL's default would normalise over T and C together.
 */
final class TransformerBlock extends AbstractBlock {

    private final LayerNorm ln1;
    private final CausalSelfAttention attention;
    private final LayerNorm ln2;
    private final Linear fc;
    private final Linear fcProj;

    TransformerBlock(int channels, int heads) {
        super((byte) 1);
        ln1 = addChildBlock("ln1", LayerNorm.builder().axis(2).build());
        attention = addChildBlock("attn", new CausalSelfAttention(channels, heads));
        ln2 = addChildBlock("ln2", LayerNorm.builder().axis(2).build());
        fc = addChildBlock("fc", Linear.builder().setUnits(4L * channels).build());
        fcProj = addChildBlock("proj", Linear.builder().setUnits(channels).build());
    }

    @Override
    protected NDList forwardInternal(ParameterStore store, NDList inputs, boolean training,
                                     PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        NDArray a = attention.forward(store, ln1.forward(store, new NDList(x), training), training).singletonOrThrow();
        x = x.add(a);
        NDArray h = fc.forward(store, ln2.forward(store, new NDList(x), training), training).singletonOrThrow();
        NDArray m = fcProj.forward(store, new NDList(Activation.gelu(h)), training).singletonOrThrow();
        return new NDList(x.add(m));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return new Shape[] {inputShapes[0]};
    }

    @Override
    protected void initializeChildBlocks(NDManager manager, DataType dataType, Shape... inputShapes) {
        Shape x = inputShapes[0];
        ln1.initialize(manager, dataType, x);
        attention.initialize(manager, dataType, x);
        ln2.initialize(manager, dataType, x);
        fc.initialize(manager, dataType, x);
        fcProj.initialize(manager, dataType, new Shape(x.get(0), x.get(1), x.get(2) * 4));
    }
}
