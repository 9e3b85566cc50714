package io.xaforward.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.ParameterStore;

import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Shapes, parameter counts, causality and gradients of the GPT model. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ModelTest {

    @Test
    void presetShapesAndAnalyticParameterCounts() {
        ModelConfig gpt2 = ModelConfig.preset("gpt2-124m");
        assertEquals(12, gpt2.layers());
        assertEquals(768, gpt2.embeddingSize());
        assertEquals(12, gpt2.heads());
        assertEquals(1024, gpt2.contextLength());
        assertEquals(50257, gpt2.vocabSize());
        // GPT-2 small with tied head: the well-known 124,439,808.
        assertEquals(124_439_808L, gpt2.parameterCount());

        ModelConfig pythia = ModelConfig.preset("pythia-70m");
        assertEquals(6, pythia.layers());
        assertEquals(512, pythia.embeddingSize());
        assertEquals(8, pythia.heads());
        assertEquals(2048, pythia.contextLength());
        assertEquals(50304, pythia.vocabSize());
        // Pythia-70m is 70,426,624 with rotary positions; this model adds 2048 x 512 learned positions.
        assertEquals(70_426_624L + 2048L * 512, pythia.parameterCount());

        ModelConfig small = ModelConfig.preset("SMALL");
        assertEquals(6, small.layers());
        assertEquals(384, small.embeddingSize());
        assertEquals(64, small.headSize());
        assertEquals(128, small.contextLength());

        ModelConfig tiny = ModelConfig.preset("tiny");
        assertEquals(256, tiny.vocabSize());
        assertEquals(64, tiny.contextLength());

        Exception e = assertThrows(IllegalArgumentException.class, () -> ModelConfig.preset("gpt5"));
        assertTrue(e.getMessage().contains("tiny"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new ModelConfig("x", 10, 8, 1, 30, 4, true));
    }

    @Test
    void builtModelsHaveTheAnalyticParameterCount() {
        DjlRuntime.load();
        for (ModelConfig config : List.of(ModelConfig.preset("tiny"),
                new ModelConfig("untied", 97, 16, 3, 24, 3, false))) {
            try (NDManager manager = NDManager.newBaseManager()) {
                GptModel model = new GptModel(config);
                model.initialize(manager);
                long count = 0;
                for (Parameter p : model.orderedParameters()) {
                    count += p.getArray().size();
                }
                assertEquals(config.parameterCount(), count, config.name());
                assertEquals(model.orderedParameters().size(), model.orderedParameterNames().size());
                assertTrue(model.orderedParameterNames().get(0).contains("wte"), model.orderedParameterNames().toString());
            }
        }
    }

    @Test
    void attentionIsCausal() {
        DjlRuntime.load();
        ModelConfig config = new ModelConfig("causal", 50, 12, 2, 16, 2, true);
        try (NDManager manager = NDManager.newBaseManager()) {
            GptModel model = randomModel(config, manager, 3);
            ParameterStore store = new ParameterStore(manager, false);
            long[] tokens = new long[12];
            for (int i = 0; i < tokens.length; i++) {
                tokens[i] = (i * 7) % 50;
            }
            float[] before = logits(model, store, manager, tokens);
            int changed = 8;
            tokens[changed] = (tokens[changed] + 1) % 50;
            float[] after = logits(model, store, manager, tokens);
            int v = config.vocabSize();
            for (int pos = 0; pos < tokens.length; pos++) {
                double diff = 0;
                for (int j = 0; j < v; j++) {
                    diff = Math.max(diff, Math.abs(before[pos * v + j] - after[pos * v + j]));
                }
                if (pos < changed) {
                    assertEquals(0.0, diff, 0.0, "position " + pos + " must not see token " + changed);
                } else {
                    assertTrue(diff > 1e-4, "position " + pos + " must see token " + changed + ": " + diff);
                }
            }
        }
    }

    /** Backprop against central differences, with a GC between forward and backward (the Java-scalar pitfall). */
    @Test
    void gradientsMatchFiniteDifferences() {
        DjlRuntime.load();
        ModelConfig config = new ModelConfig("grad", 20, 8, 1, 8, 2, true);
        try (NDManager manager = NDManager.newBaseManager()) {
            GptModel model = randomModel(config, manager, 11);
            ParameterStore store = new ParameterStore(manager, false);
            long[] inputs = {1, 5, 9, 3, 7, 2, 2, 8, 4, 6, 0, 19, 13, 11, 10, 12};
            long[] targets = {5, 9, 3, 7, 2, 2, 8, 4, 6, 0, 19, 13, 11, 10, 12, 1};
            Shape shape = new Shape(2, 8);
            List<Parameter> params = model.orderedParameters();
            try (NDManager step = manager.newSubManager()) {
                NDArray x = step.create(inputs, shape);
                NDArray y = step.create(targets, shape);
                JniUtils.setGradMode(true);
                try {
                    NDArray loss = GptModel.crossEntropy(model.forward(store, new NDList(x), true).singletonOrThrow(), y);
                    System.gc();
                    JniUtils.backward((PtNDArray) loss, (PtNDArray) step.ones(new Shape()), false, false);
                } finally {
                    JniUtils.setGradMode(false);
                }
            }
            int checked = 0;
            for (Parameter p : params) {
                NDArray w = p.getArray();
                float[] grad;
                try (NDArray g = w.getGradient()) {
                    grad = g.toFloatArray();
                }
                int best = 0;
                for (int i = 1; i < grad.length; i++) {
                    if (Math.abs(grad[i]) > Math.abs(grad[best])) {
                        best = i;
                    }
                }
                if (Math.abs(grad[best]) < 1e-3) {
                    continue;
                }
                float[] values = w.toFloatArray();
                float original = values[best];
                float h = 1e-2f;
                values[best] = original + h;
                w.toByteBuffer(true).asFloatBuffer().put(best, values[best]);
                double up = loss(model, store, manager, inputs, targets, shape);
                w.toByteBuffer(true).asFloatBuffer().put(best, original - h);
                double down = loss(model, store, manager, inputs, targets, shape);
                w.toByteBuffer(true).asFloatBuffer().put(best, original);
                double numeric = (up - down) / (2 * h);
                assertEquals(numeric, grad[best], 0.05 * Math.abs(numeric) + 2e-4, p.getName() + "[" + best + "]");
                checked++;
            }
            assertTrue(checked >= params.size() / 2, "checked only " + checked + " of " + params.size());
        }
    }

    private static double loss(GptModel model, ParameterStore store, NDManager manager, long[] inputs,
                               long[] targets, Shape shape) {
        try (NDManager m = manager.newSubManager()) {
            NDArray logits = model.forward(store, new NDList(m.create(inputs, shape)), false).singletonOrThrow();
            return GptModel.crossEntropy(logits.toType(DataType.FLOAT64, false), m.create(targets, shape)).getDouble();
        }
    }

    private static GptModel randomModel(ModelConfig config, NDManager manager, long seed) {
        GptModel model = new GptModel(config);
        model.initialize(manager);
        SplittableRandom random = new SplittableRandom(seed);
        for (Parameter p : model.orderedParameters()) {
            var buffer = p.getArray().toByteBuffer(true).asFloatBuffer();
            for (int i = 0; i < buffer.capacity(); i++) {
                buffer.put(i, (float) (random.nextGaussian() * 0.3));
            }
        }
        return model;
    }

    private static float[] logits(GptModel model, ParameterStore store, NDManager manager, long[] tokens) {
        try (NDManager m = manager.newSubManager()) {
            NDArray x = m.create(tokens, new Shape(1, tokens.length));
            return model.forward(store, new NDList(x), false).singletonOrThrow().toFloatArray();
        }
    }
}
