package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.GradientReducer;
import io.xaforward.training.IdArrayDataset;
import io.xaforward.training.SyntheticCorpus;
import io.xaforward.training.TextDataset;
import io.xaforward.training.TrainerConfig;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every input {@code xaf train} and {@code xaf demo} need is checked before anything is created: each bad one ends
 * the command with exit status 1 and one {@code xaf:} line, with no network namespace, no work directory and no
 * output directory made. Needs root (it checks that no namespace appears; a check that slipped would bring one up).
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EarlyErrorsTest {
    @TempDir
    static Path dir;
    static Path tinyCheckpoint;
    static Path gpt2Checkpoint;

    @BeforeAll
    static void checkpoints() throws Exception {
        tinyCheckpoint = dir.resolve("tiny.ckpt");
        TrainerConfig tiny = TrainerConfig.builder("tiny").steps(1).globalBatch(2).seed(3).build();
        Files.writeString(dir.resolve("corpus.txt"), SyntheticCorpus.generate(3, 20_000));
        try (DataParallelTrainer t = new DataParallelTrainer(tiny, TextDataset.open(dir.resolve("corpus.txt")), null, 0, 1,
                GradientReducer.single())) {
            t.saveCheckpoint(tinyCheckpoint);
        }
        gpt2Checkpoint = dir.resolve("gpt2.ckpt");
        int[] ids = new int[4096];
        for (int i = 0; i < ids.length; i++) ids[i] = (i * 7919) % 50257;
        TrainerConfig gpt2 = TrainerConfig.builder("gpt2-tiny").steps(1).globalBatch(2).seed(3).build();
        try (DataParallelTrainer t = new DataParallelTrainer(gpt2, new IdArrayDataset(ids, 50257), null, 0, 1,
                GradientReducer.single())) {
            t.saveCheckpoint(gpt2Checkpoint);
        }
    }

    record Result(int rc, String out, String err) {
        /** Exactly one line on stderr, beginning with "xaf: ". */
        String oneLine() {
            List<String> lines = err.lines().filter(l -> !l.isBlank()).toList();
            assertEquals(1, lines.size(), "one line on stderr:\n" + err + "\nstdout:\n" + out);
            assertTrue(lines.getFirst().startsWith("xaf: "), lines.getFirst());
            assertFalse(err.contains("\tat "), "no stack trace");
            return lines.getFirst();
        }
    }

    /** Runs xaf in-process with the user in {@link #dir}; stdout and stderr captured. */
    static Result xaf(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream stdout = System.out;
        var cl = Main.commandLine();
        cl.setErr(new PrintWriter(new PrintStream(err, true, StandardCharsets.UTF_8), true));
        cl.setOut(new PrintWriter(new PrintStream(out, true, StandardCharsets.UTF_8), true));
        int rc;
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            rc = cl.execute(args);
        } finally {
            System.setOut(stdout);
        }
        return new Result(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    static Set<String> namespaces() throws Exception {
        Process p = new ProcessBuilder("ip", "netns", "list").redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), text);
        Set<String> names = new TreeSet<>();
        // "Error: ..." is ip's line for a namespace being removed at this moment (by another process).
        text.lines().map(l -> l.split(" ")[0]).filter(l -> !l.isBlank() && !l.startsWith("Error")).forEach(names::add);
        return names;
    }

    static Set<String> workDirs() throws Exception {
        Set<String> names = new TreeSet<>();
        try (var files = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            files.map(f -> f.getFileName().toString()).filter(n -> n.startsWith("xaf-train-")).forEach(names::add);
        }
        return names;
    }

    /** What {@code after} holds that {@code before} did not (what others remove meanwhile does not matter). */
    static Set<String> added(Set<String> before, Set<String> after) {
        Set<String> added = new TreeSet<>(after);
        added.removeAll(before);
        return added;
    }

    /** Runs a command that must fail early: exit 1, one xaf: line containing {@code expected}, nothing created. */
    static String failsEarly(String expected, String... args) throws Exception {
        assertTrue(io.xaforward.testbed.Netns.isRoot(), "this test needs root: it checks that no namespace is created");
        Set<String> namespacesBefore = namespaces();
        Set<String> workDirsBefore = workDirs();
        Result r = xaf(args);
        assertEquals(1, r.rc(), String.join(" ", args) + "\n" + r.out() + r.err());
        String line = r.oneLine();
        assertTrue(line.contains(expected), "'" + expected + "' in: " + line);
        assertEquals(Set.of(), added(namespacesBefore, namespaces()), "no namespace created by: " + String.join(" ", args));
        assertEquals(Set.of(), added(workDirsBefore, workDirs()), "no work directory left by: " + String.join(" ", args));
        assertFalse(r.out().contains("bringing up"), r.out());
        return line;
    }

    @Test
    void trainChecksEveryInputBeforeAnyNamespace() throws Exception {
        Path safetensors = dir.resolve("model.safetensors");
        Files.write(safetensors, new byte[]{0x40, 0, 0, 0, 0, 0, 0, 0, '{', '}'});
        String line = failsEarly("is not a training checkpoint", "train", "--resume", safetensors.toString(), "--steps", "1");
        assertTrue(line.contains("model.ckpt") && line.contains(".safetensors"), line);

        failsEarly("trained with preset tiny, not gpt2-tiny", "train", "--resume", tinyCheckpoint.toString(), "--steps", "2");
        failsEarly("--preset nonsense", "train", "--preset", "nonsense", "--steps", "1");

        Path shipped = TrainCommand.shippedTopology("two-dc.yaml");
        Path typo = dir.resolve("typo.yaml");
        Files.writeString(typo, Files.readString(shipped).replace("datacenters:", "datacentres:"));
        assertTrue(failsEarly("datacentres", "train", "--topology", typo.toString()).contains(typo.toString()));
        failsEarly("not found", "train", "--topology", dir.resolve("missing.yaml").toString());

        failsEarly("data " + dir.resolve("missing.txt") + " not found", "train", "--data", dir.resolve("missing.txt").toString());
        Path binary = dir.resolve("binary.txt");
        Files.write(binary, new byte[]{'a', 'b', 'c', (byte) 0xff, 'd'});
        failsEarly("byte offset 3", "train", "--data", binary.toString(), "--tokenizer", "gpt2");
        failsEarly("tokenizer gpt2 has 50257 ids", "train", "--preset", "tiny", "--tokenizer", "gpt2");

        Path file = dir.resolve("a-file");
        Files.writeString(file, "x");
        failsEarly("--out " + file + " is a file", "train", "--out", file.toString());
        failsEarly("--out /proc/xaf-run cannot be written", "train", "--out", "/proc/xaf-run");
        Path nested = dir.resolve("new/run");
        failsEarly("--work-dir " + file.resolve("w") + " cannot be written", "train", "--out", nested.toString(),
                "--work-dir", file.resolve("w").toString());
        assertFalse(Files.exists(dir.resolve("new")), "the probe of --out removes what it created");

        failsEarly("unknown gateway mode 'warp'", "train", "--gateway-mode", "warp");
    }

    @Test
    void demoChecksItsOutputBeforeAnyNamespace() throws Exception {
        Path file = dir.resolve("demo-file");
        Files.writeString(file, "x");
        failsEarly("--out " + file + " is a file", "demo", "--out", file.toString());
    }

    @Test
    void generateRefusesATokenizerThatDoesNotFitTheVocabulary() {
        Result r = xaf("generate", "--checkpoint", gpt2Checkpoint.toString(), "--tokenizer", "bytes", "--tokens", "3");
        assertEquals(1, r.rc(), r.out());
        String line = r.oneLine();
        assertTrue(line.contains("--tokenizer bytes") && line.contains("50257"), line);
        assertEquals("", r.out(), "no text generated");

        r = xaf("generate", "--checkpoint", tinyCheckpoint.toString(), "--tokenizer", "gpt2", "--tokens", "3");
        assertEquals(1, r.rc(), r.out());
        assertTrue(r.oneLine().contains("--tokenizer gpt2"), r.err());

        r = xaf("generate", "--checkpoint", tinyCheckpoint.toString(), "--tokenizer", "bytes", "--tokens", "3",
                "--prompt", "ab", "--temperature", "0");
        assertEquals(0, r.rc(), r.err());
        assertTrue(r.out().startsWith("ab"), r.out());
    }

    @Test
    void dataPrepareNamesTheByteOffsetOfNonUtf8InputAndWarnsOfAShortValidationSplit() throws Exception {
        Path latin1 = dir.resolve("latin1.txt");
        byte[] text = "Le d\u00e9put\u00e9".getBytes(StandardCharsets.ISO_8859_1); // 0xe9 at offset 4
        Files.write(latin1, text);
        Result r = xaf("data", "prepare", "--input", latin1.toString(), "--out", dir.resolve("p1").toString());
        assertEquals(1, r.rc(), r.out());
        String line = r.oneLine();
        assertTrue(line.contains(latin1.toString()) && line.contains("byte offset 4") && line.contains("0xe9"), line);
        assertFalse(Files.exists(dir.resolve("p1")), "no output directory for input that cannot be read");

        Path small = dir.resolve("small.txt");
        Files.writeString(small, SyntheticCorpus.generate(5, 300));
        r = xaf("data", "prepare", "--input", small.toString(), "--out", dir.resolve("p2").toString(), "--tokenizer", "bytes");
        assertEquals(0, r.rc(), r.err());
        assertTrue(r.out().contains("warning: the validation split has"), r.out());

        Path large = dir.resolve("large.txt");
        Files.writeString(large, SyntheticCorpus.generate(5, 40_000));
        r = xaf("data", "prepare", "--input", large.toString(), "--out", dir.resolve("p3").toString(), "--tokenizer", "bytes");
        assertEquals(0, r.rc(), r.err());
        assertFalse(r.out().contains("warning"), r.out());
    }
}
