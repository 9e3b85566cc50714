package io.xaforward.cluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The one place that names checkpoint files, for {@code xaf train} and {@code xaf worker} alike (docs/DATA.md,
 * "Checkpoint files"). Every file is written by {@link TrainingRank} through the trainer's one save code, so they all
 * have the same format; only who writes them differs:
 * <ul>
 *   <li>{@code xaf train}: its ranks share one directory, so one rank writes for the job ({@link JobCheckpoints}):
 *       {@link #step} files in {@link #jobDirectory}, their {@link #forDatacenter} siblings under DiLoCo, and
 *       {@link #jobFinal} in the work directory;</li>
 *   <li>{@code xaf worker}: each host has its own disk, so every rank writes its own {@link #rankStep} files and
 *       {@link #rankFinal} into its checkpoint directory, and a restart agrees on the newest step every rank holds
 *       ({@link #rankSteps}, {@link io.xaforward.cluster.deploy.ResumePoint}).</li>
 * </ul>
 */
public final class CheckpointNames {
    private static final Pattern RANK_STEP = Pattern.compile("ckpt-rank(\\d{1,9})-step(\\d{1,18})\\.bin");

    private CheckpointNames() {}

    /** Where {@code xaf train}'s periodic checkpoints go inside its work directory. */
    public static Path jobDirectory(Path workDir) {
        return workDir.resolve("checkpoints");
    }

    /** The job's checkpoint after {@code completedSteps} steps ({@code xaf train}; the first data center's under DiLoCo). */
    public static Path step(Path dir, long completedSteps) {
        return dir.resolve(String.format(Locale.ROOT, "step-%06d.ckpt", completedSteps));
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

    /** The job's final checkpoint ({@code xaf train}: rank 0 writes it into the work directory). */
    public static Path jobFinal(Path workDir) {
        return workDir.resolve("final-rank0.ckpt");
    }

    /** Rank {@code rank}'s own checkpoint after {@code completedSteps} steps ({@code xaf worker}). */
    public static Path rankStep(Path dir, int rank, long completedSteps) {
        return dir.resolve(String.format(Locale.ROOT, "ckpt-rank%d-step%06d.bin", rank, completedSteps));
    }

    /** Rank {@code rank}'s final checkpoint ({@code xaf worker}). */
    public static Path rankFinal(Path dir, int rank) {
        return dir.resolve("final-rank" + rank + ".ckpt");
    }

    /** The steps for which {@code dir} holds a {@link #rankStep} file of {@code rank}. */
    public static Set<Long> rankSteps(Path dir, int rank) throws IOException {
        Set<Long> steps = new TreeSet<>();
        if (!Files.isDirectory(dir)) return steps;
        try (Stream<Path> files = Files.list(dir)) {
            files.forEach(f -> {
                Matcher m = RANK_STEP.matcher(f.getFileName().toString());
                if (m.matches() && Integer.parseInt(m.group(1)) == rank) steps.add(Long.parseLong(m.group(2)));
            });
        }
        return steps;
    }
}
