package io.xaforward.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The GPT-2-vocabulary preset learns from a prepared nanoGPT directory of real (Europarl) text. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TrainFromBinTest {

    @Test
    void gpt2TinyLearnsFromPreparedEuroparl(@TempDir Path dir) throws Exception {
        List<String> documents = EuroparlCorpus.documents(true).subList(0, 60);
        CorpusPreparer.prepare(documents, EuroparlCorpus.NAME, Tokenizer.byName("gpt2"), dir, 0.1);
        TrainingData.Opened data = TrainingData.open(dir, Tokenizer.byName("bytes"));
        assertEquals("gpt2", data.tokenizer().name());

        TrainerConfig config = TrainerConfig.builder("gpt2-tiny").steps(20).globalBatch(8).learningRate(1e-2)
                .warmupSteps(3).seed(5).evalEvery(20).evalWindows(16).build();
        try (DataParallelTrainer t = new DataParallelTrainer(config, data.train(), data.validation(), 0, 1,
                GradientReducer.single())) {
            double initial = t.evaluate().loss();
            List<StepStats> stats = t.train(null);
            double last = stats.getLast().validationLoss();
            // Uniform guessing over 50257 ids costs ln(50257) = 10.8; frequent words are learned within steps.
            assertTrue(initial > 10.0, "initial validation loss " + initial);
            assertTrue(last < initial - 2.0, "validation loss " + initial + " -> " + last);
            System.out.printf("gpt2-tiny: %.1f ms/step (batch 8 x 64), val %.2f -> %.2f%n",
                    stats.stream().mapToDouble(s -> s.computeMillis() + s.optimizerMillis()).average().orElse(0),
                    initial, last);
        }
    }
}
