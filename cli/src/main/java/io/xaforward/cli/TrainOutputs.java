package io.xaforward.cli;

import io.xaforward.cluster.CheckpointNames;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.TrainResult;
import io.xaforward.cluster.TrainingJob;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;

/**
 * What a training command leaves behind: the outputs a user keeps (metrics.jsonl, loss.png, model.ckpt and any
 * periodic checkpoints, in --out) and the work directory (testbed configs, worker logs), which is named before the
 * job starts and removed after a successful one unless --keep-work-dir; a failed job keeps it for its logs.
 */
final class TrainOutputs {
    static final String METRICS = "metrics.jsonl";
    static final String PLOT = "loss.png";
    static final String MODEL = CheckpointNames.JOB_FINAL;

    private TrainOutputs() {}

    /** Runs the job, naming the work directory first and again when the job fails. */
    static TrainResult run(TrainJobSpec spec, TrainCommand cmd, PrintStream out) throws Exception {
        out.println("xaf: work directory " + spec.workDir());
        // Every option, defaults included: the workers put it into every checkpoint, finish() beside metrics.jsonl.
        RunSettings.write(spec.workDir().resolve(RunSettings.FILE), RunSettings.json(cmd.commandName, cmd));
        try {
            return new TrainingJob(spec, out).run();
        } catch (Exception e) {
            if (cmd.createdWorkDir && !hasLogs(spec.workDir())) {
                DataCommand.deleteTree(spec.workDir()); // failed before any worker or gateway wrote a log: nothing to keep
            } else {
                out.println("xaf: the job failed; work directory kept with the logs: " + spec.workDir());
            }
            throw e;
        }
    }

    /** True when a worker or gateway of the job wrote a log into {@code workDir}. */
    static boolean hasLogs(Path workDir) throws IOException {
        if (!Files.isDirectory(workDir)) return false;
        try (var files = Files.walk(workDir)) {
            return files.anyMatch(f -> f.getFileName().toString().endsWith(".log"));
        }
    }

    /** Copies the outputs into --out, draws the loss plot, removes the work directory; returns the output directory. */
    static Path finish(TrainJobSpec spec, TrainCommand cmd, TrainResult result, PrintStream out) throws IOException {
        Path dir = cmd.out != null ? cmd.out : UserPaths.workingDirectory().resolve("xaf-runs")
                .resolve("train-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
        Files.createDirectories(dir);
        Path metrics = dir.resolve(METRICS);
        Files.copy(TrainingJob.metricsFile(spec), metrics, StandardCopyOption.REPLACE_EXISTING);
        LossPlot.write(metrics, dir.resolve(PLOT), "GPT training (" + spec.trainer().preset() + "), " + result.worldSize()
                + " workers through the " + spec.cluster().gatewayMode().configName() + " gateway");
        // Moved like the periodic checkpoints: the run leaves one final checkpoint, in --out.
        Files.move(TrainingJob.finalCheckpoint(spec), CheckpointNames.jobFinal(dir), StandardCopyOption.REPLACE_EXISTING);
        Files.copy(spec.workDir().resolve(RunSettings.FILE), dir.resolve(RunSettings.FILE), StandardCopyOption.REPLACE_EXISTING);
        if (Files.isDirectory(spec.checkpointDir())) {
            Path checkpoints = Files.createDirectories(CheckpointNames.jobDirectory(dir));
            try (var files = Files.list(spec.checkpointDir())) {
                for (Path f : files.toList()) {
                    Files.move(f, checkpoints.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
        out.println("xaf: outputs in " + dir + ": " + METRICS + " (one JSON line per step), " + RunSettings.FILE
                + " (every option of the run), " + PLOT + ", " + MODEL + " (for xaf generate, xaf export, --resume)");
        if (cmd.createdWorkDir && !cmd.keepWorkDir) {
            DataCommand.deleteTree(spec.workDir());
            out.println("xaf: removed the work directory " + spec.workDir() + " (--keep-work-dir keeps it)");
        } else {
            out.println("xaf: work directory kept: " + spec.workDir());
        }
        return dir;
    }
}
