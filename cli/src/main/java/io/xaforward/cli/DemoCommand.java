package io.xaforward.cli;

import io.xaforward.cluster.SummaryTable;
import io.xaforward.cluster.TrainResult;
import io.xaforward.cluster.TrainingJob;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.concurrent.Callable;

/**
 * {@code xaf demo}, the main job: two data centers of different network forms (IPv4 and IPv6), two workers each,
 * one XAForward XDP gateway; trains the tiny GPT for a few minutes and prints the result table.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = {"The main job: GPT training across two emulated data centers through an XDP gateway.",
                "Brings up two data centers (IPv4 and IPv6, two workers each) joined by an XAForward XDP gateway, trains the tiny GPT data-parallel across them, prints a result table,",
                "and removes everything. Needs root."})
final class DemoCommand implements Callable<Integer> {
    @Option(names = "--steps", defaultValue = "1000", description = "training steps (default: ${DEFAULT-VALUE}, a few minutes)")
    long steps;

    @Override
    public Integer call() throws Exception {
        TrainCommand t = new TrainCommand();
        t.topology = TrainCommand.shippedTopology("two-dc.yaml");
        t.gatewayMode = "xdp";
        t.algorithm = "hierarchical";
        t.preset = "tiny";
        t.steps = steps;
        t.batch = 16;
        t.seed = 1234;
        t.lr = 3e-3;
        t.warmup = Math.min(50, Math.max(1, steps / 10));
        t.evalEvery = Math.max(1, steps / 10);
        t.checksumEvery = Math.max(1, steps / 20);
        t.threads = 1;
        t.bucketMb = 4;
        System.out.println("XAForward demo: GPT training across two emulated data centers (IPv4 + IPv6) through an XDP gateway");
        TrainResult r = new TrainingJob(t.spec(), System.out).run();
        System.out.println();
        System.out.print(SummaryTable.render(r));
        return 0;
    }
}
