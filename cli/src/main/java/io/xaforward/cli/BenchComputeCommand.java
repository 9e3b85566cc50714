package io.xaforward.cli;

import io.xaforward.bench.compute.ComputeBench;
import io.xaforward.bench.compute.ComputeReport;
import io.xaforward.bench.soak.SoakBench;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code xaf bench compute}: one training step (forward, backward, clipping, AdamW) of the presets' models on this
 * machine's CPU, in the Java trainer and in PyTorch, same shapes, weights and data, no network.
 */
@Command(name = "compute", mixinStandardHelpOptions = true,
        description = {"Compute per training step: the Java trainer (DJL, libtorch; overlap off and on) against PyTorch"
                + " (Debian's python3-torch on an optimised BLAS) on the same model, micro-batch, initial weights and"
                + " token windows, at each intra-op thread count; interleaved runs, medians. Writes compute.md,"
                + " compute.json and compute.png."},
        footerHeading = "%nExample:%n",
        footer = {"  xaf bench compute --cases wide:2,gpt2-tiny:4 --threads 1 --out bench-results",
                "  xaf bench compute --quick"})
final class BenchComputeCommand implements Callable<Integer> {
    @Option(names = "--quick", description = "one run of three steps, tiny:2, one thread: a check that the bench works")
    boolean quick;

    @Option(paramLabel = "LIST", names = "--cases", split = ",", description = "PRESET:BATCH pairs, batch = windows one"
            + " process computes per step (default: tiny:2,wide:2,wide:8,small:2,gpt2-tiny:4; gpt2-124m:1 is accepted"
            + " but needs several GB and minutes per step here)")
    List<String> cases;

    @Option(paramLabel = "LIST", names = "--threads", split = ",", description = "intra-op thread counts (default: 1 and"
            + " every core of this machine)")
    List<Integer> threads;

    @Option(paramLabel = "LIST", names = "--trainers", split = ",", description = "among java, \"java overlap\", pytorch, \"pytorch stock-heap\""
            + " (default: all)")
    List<String> trainers;

    @Option(paramLabel = "N", names = "--runs", defaultValue = "3", description = "interleaved runs per cell (default: ${DEFAULT-VALUE})")
    int runs;

    @Option(paramLabel = "N", names = "--steps", defaultValue = "5", description = "timed steps per run (default: ${DEFAULT-VALUE})")
    int steps;

    @Option(paramLabel = "N", names = "--warmup", defaultValue = "2", description = "untimed steps before them (default: ${DEFAULT-VALUE})")
    int warmup;

    @Option(paramLabel = "DIR", names = "--out", description = "output directory (default: xaf-bench/compute-TIME in the working directory; docs/bench holds the shipped report)")
    Path out;

    @Override
    public Integer call() throws Exception {
        int cores = Runtime.getRuntime().availableProcessors();
        ComputeBench.Options o = quick ? ComputeBench.Options.quick()
                : new ComputeBench.Options(cases == null ? ComputeBench.DEFAULT_CASES : cases.stream().map(ComputeBench.Case::parse).toList(),
                        threads != null ? threads : cores > 1 ? List.of(1, cores) : List.of(1),
                        trainers != null ? trainers : ComputeBench.TRAINERS, runs, warmup, steps);
        out = BenchCommand.outputDirectory(out, "compute");
        String command = "./xaf bench compute" + (quick ? " --quick" : " --cases "
                + String.join(",", o.cases().stream().map(ComputeBench.Case::word).toList())
                + " --threads " + String.join(",", o.threads().stream().map(String::valueOf).toList())
                + (o.trainers().equals(ComputeBench.TRAINERS) ? "" : " --trainers '" + String.join(",", o.trainers()) + "'")
                + " --runs " + o.runs() + " --steps " + o.steps() + " --warmup " + o.warmupSteps()) + " --out " + out;
        Path work = Files.createTempDirectory("xaf-compute-");
        ComputeBench.Result r = new ComputeBench(o, work, System.out).run(command);
        ComputeReport.write(r, out);
        System.out.println("bench: wrote " + out.resolve("compute.md") + ", compute.json, compute.png");
        SoakBench.deleteTree(work);
        return 0;
    }
}
