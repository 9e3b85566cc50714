package io.xaforward.cluster.deploy;

import io.xaforward.cluster.SyncMode;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainerConfig;

import java.nio.file.Path;
import java.util.Objects;

/**
 * What {@code xaf worker} is told: how it joins the job ({@link JoinSpec}, as {@code xaf agent} does), the same
 * trainer part a {@link TrainJobSpec} of {@code xaf train} is made of, and what only a training rank on a real host
 * needs (its data and tokenizer, checksum period, whether it resumes). The peers come from a cluster file or an etcd
 * rendezvous ({@link WorldSource}).
 *
 * @param join          who this rank is, its token, wire security and secret, timeouts, flows and collective
 *                      settings (with DiLoCo's outer format)
 * @param trainer       preset, steps, batch, seed, learning rate, warm-up, threads, DiLoCo's outer loop (null
 *                      under ddp), and the checkpoints: this rank's directory (required) and their period (0 = only
 *                      the final one)
 * @param data          a prepared directory (train.bin, val.bin, meta.json), a .bin file of uint16 ids, or text
 * @param tokenizer     for text, and for .bin files without meta.json (a directory's meta.json names its own)
 * @param checksumEvery print the weight checksum every N steps (0 = never)
 * @param resume        continue from the newest checkpoint that every rank has
 */
public record WorkerOptions(JoinSpec join, TrainerConfig trainer, Path data, Tokenizer tokenizer, long checksumEvery,
                            boolean resume) {
    public WorkerOptions {
        Objects.requireNonNull(join, "join");
        Objects.requireNonNull(trainer, "trainer");
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(tokenizer, "tokenizer");
        Objects.requireNonNull(trainer.checkpointDir(), "checkpointDir");
        if (trainer.steps() < 1) throw new IllegalArgumentException("--steps must be at least 1");
    }

    public int rank() {
        return join.rank();
    }

    /** Where this rank writes its checkpoints and its final weights. */
    public Path checkpointDir() {
        return trainer.checkpointDir();
    }

    /** ddp or diloco, as the trainer's outer loop says ({@link SyncMode#of}). */
    public SyncMode sync() {
        return SyncMode.of(trainer.diloco());
    }
}
