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
 * "Checkpoint files"). A name says what the file holds, then whose it is:
 * {@code step-NNNNNN} (after that many steps) or {@code model} (the final one), then nothing (the job's),
 * {@code -dcK} (data center K's, under DiLoCo) or {@code -rankR} (rank R's own), then {@code .ckpt}. Every file is
 * written by {@link TrainingRank} through the trainer's one save code, so they all have the same format; only who
 * writes them differs:
 * <ul>
 *   <li>{@code xaf train}: its ranks share one directory, so one rank writes for the job ({@link JobCheckpoints}):
 *       {@link #step} files in {@link #jobDirectory}, their {@link #forDatacenter} siblings under DiLoCo, and
 *       {@link #jobFinal} in the work directory (moved into {@code --out} at the end);</li>
 *   <li>{@code xaf worker}: each host has its own disk, so every rank writes its own {@link #rankStep} files and
 *       {@link #rankFinal} into its checkpoint directory, and a restart agrees on the newest step every rank holds
 *       ({@link #rankSteps}, {@link io.xaforward.cluster.deploy.ResumePoint}). Beside them it keeps the settings it
 *       ran with ({@link #rankSettings}), by which a restarted worker of an etcd rendezvous asks for the ranks it
 *       ran before ({@link #ranksWithSettings}).</li>
 * </ul>
 * The per-rank names of earlier versions ({@code ckpt-rankR-stepNNNNNN.bin}, same format) are still read, so a job
 * restarted with {@code --resume} after an update continues from them.
 */
public final class CheckpointNames {
    /** The final checkpoint of an {@code xaf train} job, in its work directory and in {@code --out}. */
    public static final String JOB_FINAL = "model.ckpt";

    private static final Pattern RANK_SETTINGS = Pattern.compile("config-rank(0|[1-9][0-9]{0,8})\\.json");
    private static final Pattern RANK_STEP = Pattern.compile("step-(\\d{1,18})-rank(\\d{1,9})\\.ckpt");
    /** {@link #rankStep}'s name before this scheme: read, never written. */
    private static final Pattern OLD_RANK_STEP = Pattern.compile("ckpt-rank(\\d{1,9})-step(\\d{1,18})\\.bin");

    private CheckpointNames() {}

    /** Where {@code xaf train}'s periodic checkpoints go inside its work directory (and its {@code --out}). */
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
        return workDir.resolve(JOB_FINAL);
    }

    /** Rank {@code rank}'s own checkpoint after {@code completedSteps} steps ({@code xaf worker}). */
    public static Path rankStep(Path dir, int rank, long completedSteps) {
        return dir.resolve(String.format(Locale.ROOT, "step-%06d-rank%d.ckpt", completedSteps, rank));
    }

    /** Rank {@code rank}'s final checkpoint ({@code xaf worker}). */
    public static Path rankFinal(Path dir, int rank) {
        return dir.resolve("model-rank" + rank + ".ckpt");
    }

    /** The settings (JSON, every option of {@code xaf worker}) rank {@code rank} ran with, beside its checkpoints. */
    public static Path rankSettings(Path dir, int rank) {
        return dir.resolve("config-rank" + rank + ".json");
    }

    /** The ranks whose {@link #rankSettings} {@code dir} holds: the ranks that ran with this directory before. */
    public static Set<Integer> ranksWithSettings(Path dir) throws IOException {
        Set<Integer> ranks = new TreeSet<>();
        if (!Files.isDirectory(dir)) return ranks;
        try (Stream<Path> files = Files.list(dir)) {
            files.forEach(f -> {
                Matcher m = RANK_SETTINGS.matcher(f.getFileName().toString());
                if (m.matches()) ranks.add(Integer.parseInt(m.group(1)));
            });
        }
        return ranks;
    }

    /**
     * The file to resume rank {@code rank} from after {@code completedSteps} steps: its {@link #rankStep} file, or
     * the name earlier versions gave it when only that one is there.
     */
    public static Path rankStepToRead(Path dir, int rank, long completedSteps) {
        Path current = rankStep(dir, rank, completedSteps);
        Path old = oldRankStep(dir, rank, completedSteps);
        return !Files.exists(current) && Files.exists(old) ? old : current;
    }

    /** The steps for which {@code dir} holds a checkpoint of {@code rank}, under its name or the earlier one. */
    public static Set<Long> rankSteps(Path dir, int rank) throws IOException {
        Set<Long> steps = new TreeSet<>();
        if (!Files.isDirectory(dir)) return steps;
        try (Stream<Path> files = Files.list(dir)) {
            files.forEach(f -> {
                String name = f.getFileName().toString();
                Matcher m = RANK_STEP.matcher(name);
                if (m.matches()) {
                    add(steps, rank, name, Long.parseLong(m.group(1)), Integer.parseInt(m.group(2)),
                            rankStep(dir, rank, Long.parseLong(m.group(1))));
                }
                Matcher old = OLD_RANK_STEP.matcher(name);
                if (old.matches()) {
                    add(steps, rank, name, Long.parseLong(old.group(2)), Integer.parseInt(old.group(1)),
                            oldRankStep(dir, rank, Long.parseLong(old.group(2))));
                }
            });
        }
        return steps;
    }

    /** Counts a file only under the name this class gives it (not {@code rank02} or {@code step-7}). */
    private static void add(Set<Long> steps, int rank, String name, long step, int fileRank, Path canonical) {
        if (fileRank == rank && canonical.getFileName().toString().equals(name)) steps.add(step);
    }

    private static Path oldRankStep(Path dir, int rank, long completedSteps) {
        return dir.resolve(String.format(Locale.ROOT, "ckpt-rank%d-step%06d.bin", rank, completedSteps));
    }
}
