package io.xaforward.cli;

import io.xaforward.bench.train.TrainBench;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code xaf bench train}: the same training job under each gateway mode, interleaved, in three configurations:
 * compute-bound (tiny model, unlimited links), communication-bound across forms (wide model, 1 Gbit/s links,
 * IPv4 to IPv6: the kernel cannot forward) and communication-bound within one form (IPv4 to IPv4: the kernel can).
 */
@Command(name = "train", mixinStandardHelpOptions = true,
        description = "Training-time benchmark: the same job (seed, data, steps) under each gateway mode; md, json, png.")
final class BenchTrainCommand implements Callable<Integer> {
    @Option(names = "--runs", defaultValue = "3", description = "runs per mode (default: ${DEFAULT-VALUE})")
    int runs;

    @Option(names = "--quick", description = "one short run of the cross-form configuration (xdp and relay)")
    boolean quick;

    @Option(names = "--modes", split = ",", description = "gateway modes (default: xdp,relay,kernel where the forms allow)")
    List<String> modes;

    @Option(names = "--out", defaultValue = "docs/bench", description = "output directory (default: ${DEFAULT-VALUE})")
    Path out;

    @Override
    public Integer call() throws Exception {
        List<String> crossForm = modes != null ? modes.stream().filter(m -> !m.equals("kernel")).toList() : List.of("xdp", "relay");
        List<String> sameForm = modes != null ? modes : List.of("xdp", "kernel", "relay");
        List<TrainBench.Config> configs = new ArrayList<>();
        if (quick) {
            configs.add(new TrainBench.Config("quick", TrainCommand.shippedTopology("two-dc-ratelimited.yaml"), "wide", 6, 8,
                    0, crossForm, "Smoke run: wide model, 6 steps, 100 Mbit/s links."));
        } else {
            configs.add(new TrainBench.Config("compute-bound", TrainCommand.shippedTopology("two-dc.yaml"), "tiny", 200, 16, 0,
                    crossForm, "Tiny GPT (0.12 M parameters, 0.48 MB gradient), IPv4 DC and IPv6 DC, unlimited veth links:"
                            + " compute dominates; the kernel cannot translate between the forms."));
            configs.add(new TrainBench.Config("comm-bound-cross-form", TrainCommand.shippedTopology("two-dc-wan.yaml"), "wide",
                    40, 8, 0, crossForm, "Wide one-layer GPT (1.9 M parameters, 7.5 MB gradient), IPv4 DC and IPv6 DC,"
                            + " gateway links limited to 1 Gbit/s by HTB: communication dominates; the kernel cannot translate."));
            configs.add(new TrainBench.Config("comm-bound-same-form", TrainCommand.shippedTopology("two-dc-ipv4-wan.yaml"), "wide",
                    40, 8, 0, sameForm, "As comm-bound-cross-form, but both DCs speak IPv4, so the kernel/iptables baseline applies."));
        }
        Path work = Files.createTempDirectory("xaf-bench-train-");
        System.setProperty("xaf.bench.command", "./xaf bench train" + (quick ? " --quick" : " --runs " + runs)
                + (modes != null ? " --modes " + String.join(",", modes) : "") + " --out " + out);
        new TrainBench(configs, quick ? 1 : runs, out, work, System.out).run();
        return 0;
    }
}
