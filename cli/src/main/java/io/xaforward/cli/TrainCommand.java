package io.xaforward.cli;

import io.xaforward.cluster.SummaryTable;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.TrainResult;
import io.xaforward.cluster.TrainingJob;
import io.xaforward.collective.Algorithm;
import io.xaforward.testbed.mode.GatewayMode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.Callable;

/** {@code xaf train}: data-parallel GPT training across the emulated data centers of a topology. */
@Command(name = "train", mixinStandardHelpOptions = true,
        description = {"Train a GPT model data-parallel across the data centers of a topology.",
                "One worker JVM per host namespace, gradients all-reduced through the gateways. Needs root."})
final class TrainCommand implements Callable<Integer> {
    @Option(names = "--topology", defaultValue = "topologies/two-dc.yaml", description = "topology file (default: ${DEFAULT-VALUE})")
    Path topology;

    @Option(names = "--gateway-mode", defaultValue = "xdp", description = "xdp (default), relay, afxdp or kernel")
    String gatewayMode;

    @Option(names = "--algorithm", defaultValue = "hierarchical", description = "hierarchical (default), ring or ps")
    String algorithm;

    @Option(names = "--preset", defaultValue = "tiny", description = "tiny (default), small, gpt2-124m, pythia-70m")
    String preset;

    @Option(names = "--steps", defaultValue = "300", description = "training steps (default: ${DEFAULT-VALUE})")
    long steps;

    @Option(names = "--batch", defaultValue = "16", description = "global batch in sequences (default: ${DEFAULT-VALUE})")
    int batch;

    @Option(names = "--seed", defaultValue = "1234")
    long seed;

    @Option(names = "--lr", defaultValue = "3e-3", description = "peak learning rate (default: ${DEFAULT-VALUE})")
    double lr;

    @Option(names = "--warmup", defaultValue = "20", description = "warm-up steps (default: ${DEFAULT-VALUE})")
    long warmup;

    @Option(names = "--eval-every", defaultValue = "50")
    long evalEvery;

    @Option(names = "--checksum-every", defaultValue = "25", description = "compare weight checksums of all ranks every N steps")
    long checksumEvery;

    @Option(names = "--data", description = "UTF-8 text file to train on (default: a generated corpus)")
    Path data;

    @Option(names = "--threads", defaultValue = "1", description = "intra-op threads per worker")
    int threads;

    @Option(names = "--bucket-mb", defaultValue = "4")
    long bucketMb;

    @Option(names = "--pacing-mbps", defaultValue = "0", description = "pace each worker's sending to this many Mbit/s (0 = off)")
    long pacingMbps;

    @Option(names = "--work-dir", description = "where logs, configs and the corpus go (default: a new temp dir)")
    Path workDir;

    /** A topology shipped under topologies/, found from XAF_HOME, the working directory or its parent. */
    static Path shippedTopology(String name) {
        for (String base : new String[]{System.getenv("XAF_HOME"), ".", ".."}) {
            if (base == null) continue;
            Path p = Path.of(base, "topologies", name);
            if (Files.exists(p)) return p;
        }
        throw new IllegalArgumentException("topologies/" + name + " not found (run from the XAForward directory or set XAF_HOME)");
    }

    TrainJobSpec spec() throws Exception {
        if (!Files.exists(topology)) throw new IllegalArgumentException("topology file " + topology + " not found");
        GatewayMode.fromName(gatewayMode); // unknown names fail here, before anything is set up
        Algorithm.fromName(algorithm);
        Path dir = workDir != null ? workDir : Files.createTempDirectory("xaf-train-");
        String prefix = "t" + Integer.toHexString(new Random().nextInt(0x100, 0x1000));
        return new TrainJobSpec(topology, prefix, gatewayMode, algorithm, preset, steps, batch, seed, lr, warmup,
                evalEvery, checksumEvery, data != null ? data : dir.resolve("corpus.txt"), 1, 0x5eed0001, threads,
                bucketMb << 20, pacingMbps * 1_000_000 / 8, dir, "none");
    }

    @Override
    public Integer call() throws Exception {
        TrainResult r = new TrainingJob(spec(), System.out).run();
        System.out.println();
        System.out.print(SummaryTable.render(r));
        return 0;
    }
}
