package io.xaforward.training;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * Multi-head causal self-attention over [B, T, C]: one fused qkv projection, scaled dot-product attention with an
 * additive -inf mask above the diagonal, output projection. DJL has no tril/triu and its TransformerEncoderBlock is
 * not a GPT block, so the mask and head split are written out here. Every scalar that takes part in backward is
 * created natively (see field notes: NDArray.mul(Number) corrupts gradients after a GC).
 */
final class CausalSelfAttention extends AbstractBlock {

    private final int channels;
    private final int heads;
    private final Linear qkv;
    private final Linear proj;

    CausalSelfAttention(int channels, int heads) {
        super((byte) 1);
        this.channels = channels;
        this.heads = heads;
        this.qkv = addChildBlock("qkv", Linear.builder().setUnits(3L * channels).build());
        this.proj = addChildBlock("proj", Linear.builder().setUnits(channels).build());
    }

    @Override
    protected NDList forwardInternal(ParameterStore store, NDList inputs, boolean training,
                                     PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        long b = x.getShape().get(0);
        long t = x.getShape().get(1);
        long headSize = channels / heads;
        NDManager manager = x.getManager();

        NDList parts = qkv.forward(store, new NDList(x), training).singletonOrThrow().split(3, 2);
        // [B, T, C] -> [B, H, T, D]
        NDArray q = parts.get(0).reshape(b, t, heads, headSize).transpose(0, 2, 1, 3);
        NDArray k = parts.get(1).reshape(b, t, heads, headSize).transpose(0, 2, 1, 3);
        NDArray v = parts.get(2).reshape(b, t, heads, headSize).transpose(0, 2, 1, 3);

        NDArray scale = manager.full(new Shape(), (float) (1.0 / Math.sqrt(headSize)), DataType.FLOAT32);
        NDArray scores = q.mul(scale).matMul(k.transpose(0, 1, 3, 2)).add(causalMask(manager, t));
        NDArray attended = scores.softmax(-1).matMul(v); // [B, H, T, D]
        NDArray merged = attended.transpose(0, 2, 1, 3).reshape(b, t, channels);
        return proj.forward(store, new NDList(merged), training);
    }

    /** [T, T] with 0 on and below the diagonal and -inf above it, built from native arange/where only. */
    static NDArray causalMask(NDManager manager, long t) {
        NDArray rows = manager.arange(0, (int) t, 1, DataType.INT64).reshape(t, 1);
        NDArray cols = manager.arange(0, (int) t, 1, DataType.INT64).reshape(1, t);
        NDArray future = cols.gt(rows);
        NDArray negInf = manager.full(new Shape(t, t), Float.NEGATIVE_INFINITY, DataType.FLOAT32);
        NDArray zero = manager.zeros(new Shape(t, t), DataType.FLOAT32);
        return NDArrays.where(future, negInf, zero);
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return new Shape[] {inputShapes[0]};
    }

    @Override
    protected void initializeChildBlocks(NDManager manager, DataType dataType, Shape... inputShapes) {
        qkv.initialize(manager, dataType, inputShapes[0]);
        proj.initialize(manager, dataType, inputShapes[0]);
    }
}
