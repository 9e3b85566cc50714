package io.xaforward.cli;

import io.xaforward.training.CheckpointModel;
import io.xaforward.training.SafetensorsExport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code xaf export}: a training checkpoint as a .safetensors file with GPT-2 parameter names. */
@Command(name = "export", mixinStandardHelpOptions = true,
        description = {"Export a training checkpoint's weights to .safetensors under Hugging Face GPT-2 names",
                "(wte.weight, h.0.attn.c_attn.weight, ...; Conv1D weights as [in, out]), readable by the safetensors",
                "library and loadable into a GPT2Model state dict of the same shape."})
final class ExportCommand implements Callable<Integer> {
    @Option(names = "--checkpoint", required = true, description = "checkpoint file written by xaf train")
    Path checkpoint;

    @Option(names = "--out", required = true, description = "the .safetensors file to write")
    Path out;

    @Override
    public Integer call() throws Exception {
        UserPaths.requireFile(checkpoint, "checkpoint");
        try (CheckpointModel model = CheckpointModel.load(checkpoint)) {
            SafetensorsExport.write(model, out);
            System.out.printf("xaf export: %s (preset %s, step %d) -> %s%n", checkpoint, model.config().name(), model.step(), out);
        }
        return 0;
    }
}
