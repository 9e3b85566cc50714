package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.GradientReducer;
import io.xaforward.training.SyntheticCorpus;
import io.xaforward.training.TextDataset;
import io.xaforward.training.TokenDataset;
import io.xaforward.training.TrainerConfig;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code xaf data prepare}, {@code xaf generate} and {@code xaf export} as a user runs them: from another working
 * directory with relative paths (the launcher passes the caller's directory in XAF_CWD), in a separate JVM.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class DataAndGenerateCommandTest {

    /** Runs xaf in a fresh JVM whose own working directory is elsewhere; XAF_CWD names the user's. */
    private static String xaf(Path userDir, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Dai.djl.pytorch.num_threads=1", "-Dai.djl.offline=true",
                "-cp", System.getProperty("java.class.path"), Main.class.getName()));
        cmd.addAll(List.of(args));
        Path elsewhere = Files.createTempDirectory("xaf-elsewhere");
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(elsewhere.toFile()).redirectErrorStream(true);
        pb.environment().put(UserPaths.CWD_VARIABLE, userDir.toString());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), String.join(" ", args) + ":\n" + out);
        try (var left = Files.list(elsewhere)) {
            assertEquals(List.of(), left.map(Path::getFileName).map(Path::toString).toList(),
                    "nothing written to the JVM's own working directory");
        }
        Files.delete(elsewhere);
        return out;
    }

    @Test
    void prepareGenerateAndExportWithPathsRelativeToTheUser(@TempDir Path user) throws Exception {
        Files.writeString(user.resolve("notes.txt"), SyntheticCorpus.generate(1, 20_000));
        String prepared = xaf(user, "data", "prepare", "--input", "notes.txt", "--out", "prepared", "--tokenizer", "bytes");
        assertTrue(prepared.contains("train"), prepared);
        assertEquals(Files.size(user.resolve("notes.txt")) * 2,
                Files.size(user.resolve("prepared/train.bin")) + Files.size(user.resolve("prepared/val.bin")),
                "one uint16 per byte (the byte tokenizer has no end-of-text id)");

        TokenDataset.Split data = TextDataset.open(user.resolve("notes.txt")).split(0.1);
        TrainerConfig config = TrainerConfig.builder("tiny").steps(3).globalBatch(4).seed(4).build();
        try (DataParallelTrainer t = new DataParallelTrainer(config, data.train(), null, 0, 1, GradientReducer.single())) {
            t.train(null);
            t.saveCheckpoint(user.resolve("small.ckpt"));
        }
        String[] sampled = {"generate", "--checkpoint", "small.ckpt", "--prompt", "the ", "--tokens", "30",
                "--temperature", "0.9", "--seed", "5"};
        String first = xaf(user, sampled);
        assertEquals(first, xaf(user, sampled), "same checkpoint, prompt and seed: same text");
        assertTrue(first.startsWith("the "), first);
        assertNotEquals(first.strip(), "the");

        String exported = xaf(user, "export", "--checkpoint", "small.ckpt", "--out", "out/model.safetensors");
        assertTrue(Files.size(user.resolve("out/model.safetensors")) > 4 * 100_000, exported);
    }

    @Test
    void badInputGivesOneClearLine(@TempDir Path dir) {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        var cl = Main.commandLine();
        cl.setErr(new java.io.PrintWriter(new PrintStream(err, true), true));
        int rc = cl.execute("generate", "--checkpoint", dir.resolve("missing.ckpt").toString());
        assertEquals(1, rc);
        assertTrue(err.toString().contains("checkpoint") && err.toString().contains("not found"), err.toString());
        rc = cl.execute("data", "prepare", "--input", dir.resolve("missing.txt").toString(), "--out", dir.toString());
        assertEquals(1, rc);
    }
}
