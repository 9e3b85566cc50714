package io.xaforward.training;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Continues a prompt with a trained model, one token at a time: greedy (temperature 0) or sampled from the
 * temperature-scaled softmax over the top-k logits. The random generator is seeded, and the engine runs with a fixed
 * thread count, so the same checkpoint, prompt and settings always give the same text.
 */
public final class TextGenerator {

    /**
     * @param temperature 0 picks the most likely token; above 0 divides the logits before sampling
     * @param topK        sample among the k most likely tokens (0 = all)
     */
    public record Settings(int maxNewTokens, double temperature, int topK, long seed) {
        public Settings {
            if (maxNewTokens < 0 || temperature < 0 || topK < 0) {
                throw new IllegalArgumentException("generation needs tokens >= 0, temperature >= 0, top-k >= 0");
            }
        }
    }

    private final CheckpointModel model;
    private final Tokenizer tokenizer;

    public TextGenerator(CheckpointModel model, Tokenizer tokenizer) {
        if (tokenizer.vocabSize() > model.config().vocabSize()) {
            throw new IllegalArgumentException("tokenizer " + tokenizer.name() + " (" + tokenizer.vocabSize()
                    + " ids) does not fit the model's vocabulary of " + model.config().vocabSize());
        }
        this.model = model;
        this.tokenizer = tokenizer;
    }

    /** The tokenizer a model of this vocabulary was trained with: GPT-2's for 50257 ids, bytes for 256. */
    public static Tokenizer tokenizerFor(ModelConfig config) {
        return config.vocabSize() >= Gpt2Tokenizer.VOCAB_SIZE ? Gpt2Tokenizer.get() : ByteTokenizer.INSTANCE;
    }

    /** Token ids of the prompt followed by the generated ones. */
    public int[] generateIds(int[] prompt, Settings settings) {
        int context = model.config().contextLength();
        int[] ids = Arrays.copyOf(prompt, prompt.length + settings.maxNewTokens());
        int length = prompt.length;
        if (length == 0) {
            // An empty prompt starts a new document.
            ids = Arrays.copyOf(new int[] {Math.max(0, tokenizer.endOfText())}, 1 + settings.maxNewTokens());
            length = 1;
        }
        SplittableRandom random = new SplittableRandom(settings.seed());
        for (int n = 0; n < settings.maxNewTokens(); n++) {
            int from = Math.max(0, length - context);
            long[] window = new long[length - from];
            for (int i = 0; i < window.length; i++) {
                window[i] = ids[from + i];
            }
            float[] logits = model.nextTokenLogits(window);
            ids[length++] = pick(logits, settings, random, tokenizer.vocabSize());
        }
        return Arrays.copyOf(ids, length);
    }

    /** The prompt and its continuation as text. */
    public String generate(String prompt, Settings settings) {
        return tokenizer.decode(generateIds(tokenizer.encode(prompt), settings));
    }

    static int pick(float[] logits, Settings settings, SplittableRandom random, int vocab) {
        int n = Math.min(vocab, logits.length);
        if (settings.temperature() == 0) {
            int best = 0;
            for (int i = 1; i < n; i++) {
                if (logits[i] > logits[best]) {
                    best = i;
                }
            }
            return best;
        }
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        // Stable sort by descending logit: ties keep id order, so sampling stays deterministic.
        Arrays.sort(order, (a, b) -> Float.compare(logits[b], logits[a]));
        int k = settings.topK() == 0 ? n : Math.min(settings.topK(), n);
        double max = logits[order[0]];
        double[] weights = new double[k];
        double sum = 0;
        for (int i = 0; i < k; i++) {
            weights[i] = Math.exp((logits[order[i]] - max) / settings.temperature());
            sum += weights[i];
        }
        double u = random.nextDouble() * sum;
        for (int i = 0; i < k; i++) {
            u -= weights[i];
            if (u < 0) {
                return order[i];
            }
        }
        return order[k - 1];
    }
}
