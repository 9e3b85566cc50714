package io.xaforward.cli;

import io.xaforward.cluster.SummaryTable;
import io.xaforward.cluster.TrainResult;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.collective.Algorithm;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.training.TextGenerator;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code xaf demo}, the main job: two data centers of different network forms (IPv4 and IPv6), two workers each,
 * one XAForward XDP gateway; trains the tiny GPT for a few minutes and prints the result table.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = {"The main job: GPT training across two emulated data centers through an XDP gateway.",
                "Brings up two data centers (IPv4 and IPv6, two workers each) joined by an XAForward XDP gateway, trains"
                        + " the gpt2-tiny GPT (GPT-2's vocabulary) on the shipped Europarl text data-parallel across them,"
                        + " prints a result table and a sample, and removes everything. Needs root."},
        footerHeading = "%nExample:%n",
        footer = {"  xaf demo --steps 200 --out runs/demo"})
final class DemoCommand implements Callable<Integer> {
    @Option(paramLabel = "N", names = "--steps", defaultValue = "200", description = "training steps (default: ${DEFAULT-VALUE}, a few minutes on two cores)")
    long steps;

    @Option(paramLabel = "DIR", names = "--out", description = "where metrics.jsonl, loss.png and model.ckpt go (default: xaf-runs/train-TIME in the working directory)")
    Path out;

    @Option(names = "--keep-work-dir", description = "keep the work directory (logs, configs) after the run")
    boolean keepWorkDir;

    /** The prompt of the sample printed at the end. */
    static final String SAMPLE_PROMPT = "Mr President, the Commission";

    @Override
    public Integer call() throws Exception {
        TrainCommand t = new TrainCommand();
        t.topology = TrainCommand.shippedTopology("two-dc.yaml");
        t.gatewayMode = GatewayMode.XDP;
        t.collective.algorithm = Algorithm.HIERARCHICAL;
        t.loop.preset = "gpt2-tiny"; // GPT-2 tokenizer; trains on the shipped Europarl text
        t.loop.steps = steps;
        t.loop.batch = 16;
        t.loop.seed = 1234;
        t.loop.lr = 1e-2;
        t.loop.warmup = Math.min(50, Math.max(1, steps / 10));
        t.loop.evalEvery = Math.max(1, steps / 10);
        t.loop.checksumEvery = Math.max(1, steps / 20);
        t.loop.threads = 1;
        t.collective.bucketMb = 4;
        t.out = out;
        t.keepWorkDir = keepWorkDir;
        t.commandName = "xaf demo";
        System.out.println("XAForward demo: GPT training across two emulated data centers (IPv4 + IPv6) through an XDP gateway");
        TrainJobSpec spec = t.spec();
        TrainResult r = TrainOutputs.run(spec, t, System.out);
        System.out.println();
        System.out.print(SummaryTable.render(r));
        Path results = TrainOutputs.finish(spec, t, r, System.out);
        System.out.println();
        System.out.println("Sample (xaf generate --checkpoint " + results.resolve(TrainOutputs.MODEL) + " --prompt \"" + SAMPLE_PROMPT + "\"):");
        System.out.println(GenerateCommand.generate(results.resolve(TrainOutputs.MODEL), SAMPLE_PROMPT, null,
                new TextGenerator.Settings(40, 0.8, 40, 1)));
        return 0;
    }
}
