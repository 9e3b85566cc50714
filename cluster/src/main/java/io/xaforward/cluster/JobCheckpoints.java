package io.xaforward.cluster;

import io.xaforward.collective.CollectiveGroup;
import io.xaforward.training.DataParallelTrainer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Periodic checkpoints of a distributed job. Under ddp every rank holds identical weights and optimizer state, so
 * rank 0 alone writes them; any rank (or a new job with {@code --resume}) can start from the file. Under diloco the
 * ranks of one data center hold identical state but the data centers differ (their own weights between syncs, their
 * own AdamW moments always), so the first rank of every data center writes one: {@code step-N.ckpt} for the first
 * data center, {@code step-N-dcK.ckpt} for data center K beside it, and a resumed rank of data center K reads its
 * own sibling of the file it is given.
 */
public final class JobCheckpoints {
    private JobCheckpoints() {}

    /** The checkpoint written after {@code completedSteps} steps. */
    public static Path file(TrainJobSpec spec, long completedSteps) {
        return spec.checkpointDir().resolve(String.format(Locale.ROOT, "step-%06d.ckpt", completedSteps));
    }

    /** Data center {@code datacenter}'s sibling of a checkpoint file (the file itself for data center 0). */
    public static Path forDatacenter(Path checkpoint, int datacenter) {
        if (datacenter == 0) return checkpoint;
        String name = checkpoint.getFileName().toString();
        int dot = name.lastIndexOf('.');
        String sibling = dot > 0 ? name.substring(0, dot) + "-dc" + datacenter + name.substring(dot)
                : name + "-dc" + datacenter;
        return checkpoint.resolveSibling(sibling);
    }

    /**
     * The checkpoint a rank resumes from: the given file, or under diloco its data center's sibling when there is
     * one (a final model.ckpt has none: after the last step's sync every rank holds its weights, and the moments of
     * the first data center are the best there are).
     */
    static Path resumeFile(TrainJobSpec spec, CollectiveGroup group) {
        if (spec.sync() != SyncMode.DILOCO) return spec.resume();
        Path own = forDatacenter(spec.resume(), group.datacenterIndexOf(group.rank()));
        return Files.exists(own) ? own : spec.resume();
    }

    /**
     * Called after every step: every {@link TrainJobSpec#checkpointEvery()} steps rank 0 writes a checkpoint, under
     * diloco the first rank of each data center.
     */
    static void afterStep(TrainJobSpec spec, CollectiveGroup group, DataParallelTrainer trainer) {
        long done = trainer.completedSteps();
        if (spec.trainer().checkpointEvery() <= 0 || done % spec.trainer().checkpointEvery() != 0) return;
        int rank = group.rank();
        int datacenter = group.datacenterIndexOf(rank);
        boolean writer = spec.sync() == SyncMode.DILOCO ? group.membersOf(datacenter)[0] == rank : rank == 0;
        if (!writer) return;
        Path file = spec.sync() == SyncMode.DILOCO ? forDatacenter(file(spec, done), datacenter) : file(spec, done);
        try {
            trainer.saveCheckpoint(file);
        } catch (IOException e) {
            throw new UncheckedIOException("rank " + rank + " could not write the checkpoint of step " + done, e);
        }
    }
}
