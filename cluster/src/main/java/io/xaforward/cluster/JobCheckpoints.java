package io.xaforward.cluster;

import io.xaforward.collective.CollectiveGroup;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Which rank of an {@code xaf train} job writes its checkpoints, and which file a resumed rank reads (the names are
 * {@link CheckpointNames}'). Under ddp every rank holds identical weights and optimizer state, so rank 0 alone writes
 * them; any rank (or a new job with {@code --resume}) can start from the file. Under diloco the ranks of one data
 * center hold identical state but the data centers differ (their own weights between syncs, their own AdamW moments
 * always), so the first rank of every data center writes one, data center K's beside the first's
 * ({@link CheckpointNames#forDatacenter}), and a resumed rank of data center K reads its own sibling of the file it is
 * given.
 */
public final class JobCheckpoints {
    private JobCheckpoints() {}

    /** The job's checkpoint written after {@code completedSteps} steps (the first data center's under diloco). */
    public static Path file(TrainJobSpec spec, long completedSteps) {
        return CheckpointNames.step(spec.checkpointDir(), completedSteps);
    }

    /**
     * The checkpoint a rank resumes from: the given file, or under diloco its data center's sibling when there is
     * one (a final model.ckpt has none: after the last step's sync every rank holds its weights, and the moments of
     * the first data center are the best there are).
     */
    static Path resumeFile(TrainJobSpec spec, CollectiveGroup group) {
        if (spec.sync() != SyncMode.DILOCO) return spec.resume();
        Path own = CheckpointNames.forDatacenter(spec.resume(), group.datacenterIndexOf(group.rank()));
        return Files.exists(own) ? own : spec.resume();
    }

    /**
     * The file this rank writes the checkpoint of {@code completedSteps} into, or null when it writes none: rank 0
     * writes the job's, under diloco the first rank of each data center its data center's.
     */
    static Path periodic(TrainJobSpec spec, CollectiveGroup group, long completedSteps) {
        int rank = group.rank();
        int datacenter = group.datacenterIndexOf(rank);
        if (spec.sync() != SyncMode.DILOCO) return rank == 0 ? file(spec, completedSteps) : null;
        return group.membersOf(datacenter)[0] == rank
                ? CheckpointNames.forDatacenter(file(spec, completedSteps), datacenter) : null;
    }

    /** The file this rank writes the final checkpoint into, or null: rank 0 alone, as every rank ends with its weights. */
    static Path last(TrainJobSpec spec, CollectiveGroup group) {
        return group.rank() == 0 ? CheckpointNames.jobFinal(spec.workDir()) : null;
    }
}
