package io.xaforward.training;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.ParameterStore;

/** One backward call over the whole graph, every gradient gathered into the flat buffer, then one all-reduce. */
final class WholeGraphBackward implements Backward {
    private final NDManager manager;
    private final GptModel network;
    private final ParameterStore store;
    private final FlatGradients gradients;
    private final GradientReducer reducer;

    WholeGraphBackward(NDManager manager, GptModel network, ParameterStore store, FlatGradients gradients,
                       GradientReducer reducer) {
        this.manager = manager;
        this.network = network;
        this.store = store;
        this.gradients = gradients;
        this.reducer = reducer;
    }

    @Override
    public float forwardBackward(Batch batch) {
        try (NDManager stepManager = manager.newSubManager()) {
            NDArray[] tensors = Backward.inputsAndTargets(stepManager, batch);
            NDArray inputs = tensors[0], targets = tensors[1];
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
            gradients.gather(0, gradients.parameterCount());
            gradients.loss(loss);
            return loss;
        }
    }

    @Override
    public double meanGradient() {
        reducer.allReduceMean(gradients.flat(), Math.toIntExact(gradients.floats() + 1));
        return gradients.sumOfSquares(0, gradients.floats());
    }

    @Override
    public void close() {
    }
}
