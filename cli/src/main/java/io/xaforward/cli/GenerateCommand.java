package io.xaforward.cli;

import io.xaforward.training.CheckpointModel;
import io.xaforward.training.TextGenerator;
import io.xaforward.training.Tokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code xaf generate}: continue a prompt with a trained checkpoint. */
@Command(name = "generate", mixinStandardHelpOptions = true,
        description = {"Continue a prompt with a model from a training checkpoint and print the text.",
                "Greedy with --temperature 0, else sampled from the top-k tokens; the same seed gives the same text."},
        footerHeading = "%nExample:%n",
        footer = {"  xaf generate --checkpoint xaf-runs/train-TIME/model.ckpt \\", "      --prompt \"Mr President, the Commission\" --temperature 0"})
final class GenerateCommand implements Callable<Integer> {
    @Option(paramLabel = "FILE", names = "--checkpoint", required = true, description = "checkpoint file written by xaf train (e.g. OUT/model.ckpt)")
    Path checkpoint;

    @Option(paramLabel = "TEXT", names = "--prompt", defaultValue = "", description = "text to continue (default: empty, a new document)")
    String prompt;

    @Option(paramLabel = "N", names = "--tokens", defaultValue = "60", description = "tokens to generate (default: ${DEFAULT-VALUE})")
    int tokens;

    @Option(paramLabel = "T", names = "--temperature", defaultValue = "0.8",
            description = "0 = greedy; higher = more varied (default: ${DEFAULT-VALUE})")
    double temperature;

    @Option(paramLabel = "K", names = "--top-k", defaultValue = "40", description = "sample among the k most likely tokens, 0 = all (default: ${DEFAULT-VALUE})")
    int topK;

    @Option(paramLabel = "N", names = "--seed", defaultValue = "1", description = "random seed of the sampling (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(paramLabel = "NAME", names = "--tokenizer", description = "gpt2 or bytes (default: from the model's vocabulary: 50257 -> gpt2, 256 -> bytes)")
    String tokenizer;

    @Override
    public Integer call() throws Exception {
        System.out.println(generate(checkpoint, prompt, tokenizer, new TextGenerator.Settings(tokens, temperature, topK, seed)));
        return 0;
    }

    static String generate(Path checkpoint, String prompt, String tokenizerName, TextGenerator.Settings settings) throws Exception {
        UserPaths.requireFile(checkpoint, "checkpoint");
        try (CheckpointModel model = CheckpointModel.load(checkpoint)) {
            return new TextGenerator(model, tokenizerFor(model, tokenizerName)).generate(prompt, settings);
        }
    }

    /** The tokenizer named on the command line, else the one the checkpoint's model was trained with. */
    static Tokenizer tokenizerFor(CheckpointModel model, String tokenizerName) {
        Tokenizer trained = TextGenerator.tokenizerFor(model.config());
        if (tokenizerName == null) return trained;
        Tokenizer t = Tokenizer.byName(tokenizerName);
        if (!t.name().equals(trained.name())) {
            // Another tokenizer's ids mean other text: the output would be garbage, not an error.
            throw new IllegalArgumentException("--tokenizer " + t.name() + " (" + t.vocabSize() + " ids) does not fit the checkpoint's"
                    + " vocabulary of " + model.config().vocabSize() + " ids, which is " + trained.name() + "'s: leave --tokenizer out or give "
                    + trained.name());
        }
        return t;
    }
}
