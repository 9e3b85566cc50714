package io.xaforward.cli;

import picocli.CommandLine.Option;

/**
 * The options that shape the training job itself, with one set of defaults: {@code xaf train} (all ranks in one
 * testbed), {@code xaf worker} (one rank of a real deployment) and {@code xaf launch} (which passes its options on to
 * xaf worker) must agree on them, so they are declared once, here.
 */
final class TrainingLoopOptions {
    /** The model of a job unless --preset says otherwise: GPT-2's vocabulary, small enough for two cores. */
    static final String DEFAULT_PRESET = "gpt2-tiny";

    @Option(paramLabel = "PRESET", names = "--preset", defaultValue = DEFAULT_PRESET,
            description = "model shape, the same on every rank: gpt2-tiny (GPT-2 vocabulary), tiny (bytes), wide, small, gpt2-124m or pythia-70m; docs/DATA.md lists their shapes (default: ${DEFAULT-VALUE})")
    String preset = DEFAULT_PRESET;

    @Option(paramLabel = "NAME", names = "--tokenizer", description = "gpt2 or bytes, for text and for .bin files without meta.json (default: from the preset's vocabulary)")
    String tokenizer;

    @Option(paramLabel = "N", names = "--checksum-every", defaultValue = "25", description = "every rank's weight checksum every N steps, compared"
            + " across the ranks (xaf train) or printed (xaf worker); 0 = never (default: ${DEFAULT-VALUE})")
    long checksumEvery = 25;

    @Option(paramLabel = "N", names = "--threads", defaultValue = "1", description = "intra-op threads per worker (default: ${DEFAULT-VALUE})")
    int threads = 1;

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
