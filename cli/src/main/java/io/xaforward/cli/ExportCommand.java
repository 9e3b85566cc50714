package io.xaforward.cli;

import io.xaforward.training.CheckpointModel;
import io.xaforward.training.HuggingFaceExport;
import io.xaforward.training.SafetensorsExport;
import io.xaforward.training.Tokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code xaf export}: a training checkpoint as a Hugging Face model directory, or its weights as one .safetensors file. */
@Command(name = "export", mixinStandardHelpOptions = true,
        description = {"Export a training checkpoint for Hugging Face transformers.",
                "--out DIR writes model.safetensors, config.json and the tokenizer files (vocab.json, merges.txt),"
                        + " loadable with GPT2LMHeadModel.from_pretrained(DIR) and GPT2Tokenizer.from_pretrained(DIR).",
                "--out FILE.safetensors writes the weights alone under GPT-2's names (wte.weight, h.0.attn.c_attn.weight,"
                        + " ...; Conv1D weights as [in, out]). The model uses the exact (erf) GELU: config.json says \"gelu\"."},
        footerHeading = "%nExample:%n",
        footer = {"  xaf export --checkpoint xaf-runs/train-TIME/model.ckpt --out gpt2-europarl"})
final class ExportCommand implements Callable<Integer> {
    @Option(names = "--checkpoint", required = true, paramLabel = "FILE",
            description = "checkpoint file written by xaf train (e.g. OUT/model.ckpt)")
    Path checkpoint;

    @Option(names = "--out", required = true, paramLabel = "DIR|FILE.safetensors",
            description = "a model directory to create, or a .safetensors file for the weights alone")
    Path out;

    @Option(names = "--tokenizer", paramLabel = "NAME",
            description = "gpt2 or bytes (default: the one the checkpoint was trained with)")
    String tokenizer;

    @Option(names = "--force", description = "replace existing output files")
    boolean force;

    @Override
    public Integer call() throws Exception {
        boolean weightsOnly = weightsOnly(out);
        checkNotOverwriting(out, weightsOnly, force);
        UserPaths.requireFile(checkpoint, "checkpoint");
        try (CheckpointModel model = CheckpointModel.load(checkpoint)) {
            if (weightsOnly) {
                SafetensorsExport.write(model, out);
            } else {
                Tokenizer t = GenerateCommand.tokenizerFor(model, tokenizer);
                HuggingFaceExport.write(model, t, out);
            }
            System.out.printf("xaf export: %s (preset %s, step %d) -> %s%s%n", checkpoint, model.config().name(),
                    model.step(), out, weightsOnly ? "" : " (GPT2LMHeadModel.from_pretrained)");
        }
        return 0;
    }

    /**
     * True for FILE.safetensors, false for a directory (existing, or a name without an extension). Any other file
     * name is refused: a file named model.pt or model.bin would hold safetensors under a PyTorch pickle's name.
     */
    static boolean weightsOnly(Path out) {
        String name = out.getFileName().toString();
        if (name.toLowerCase(Locale.ROOT).endsWith(".safetensors")) return true;
        if (Files.isDirectory(out)) return false;
        int dot = name.lastIndexOf('.');
        if (Files.exists(out) || dot > 0) {
            throw new IllegalArgumentException("--out " + out + ": xaf export writes safetensors, not "
                    + (dot > 0 ? name.substring(dot) : "a file named " + name) + "; give a directory (for "
                    + "GPT2LMHeadModel.from_pretrained) or FILE.safetensors (the weights alone)");
        }
        return false;
    }

    private static void checkNotOverwriting(Path out, boolean weightsOnly, boolean force) {
        if (force) return;
        if (weightsOnly && Files.exists(out)) {
            throw new IllegalArgumentException(out + " exists (--force replaces it)");
        }
        if (!weightsOnly) {
            for (String f : HuggingFaceExport.FILES) {
                if (Files.exists(out.resolve(f))) {
                    throw new IllegalArgumentException(out + " already holds " + f + " (--force replaces the model files)");
                }
            }
        }
    }
}
