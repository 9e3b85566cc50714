package io.xaforward.cli;

import picocli.CommandLine.Option;

/**
 * The options that shape the training loop itself, the same for a whole job: {@code xaf train} (all ranks in one
 * testbed) and {@code xaf worker} (one rank of a real deployment) must agree on them, so they are declared once.
 */
final class TrainingLoopOptions {
    @Option(paramLabel = "N", names = "--steps", defaultValue = "300", description = "training steps (default: ${DEFAULT-VALUE})")
    long steps = 300;

    @Option(paramLabel = "N", names = "--batch", defaultValue = "16", description = "global batch in sequences (default: ${DEFAULT-VALUE})")
    int batch = 16;

    @Option(paramLabel = "N", names = "--seed", defaultValue = "1234", description = "seeds weights and batch sampling (default: ${DEFAULT-VALUE})")
    long seed = 1234;

    @Option(paramLabel = "RATE", names = "--lr", defaultValue = "3e-3", description = "peak learning rate (default: ${DEFAULT-VALUE})")
    double lr = 3e-3;

    @Option(paramLabel = "N", names = "--warmup", defaultValue = "20", description = "warm-up steps (default: ${DEFAULT-VALUE})")
    long warmup = 20;

    @Option(paramLabel = "MB", names = "--bucket-mb", defaultValue = "4", description = "all-reduce bucket size in MB (default: ${DEFAULT-VALUE})")
    long bucketMb = 4;

    @Option(paramLabel = "ALGORITHM", names = "--algorithm", defaultValue = "hierarchical", description = "hierarchical, ring or ps (default: ${DEFAULT-VALUE})")
    String algorithm = "hierarchical";
}
