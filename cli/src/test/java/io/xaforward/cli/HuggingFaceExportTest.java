package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.xaforward.training.CheckpointModel;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.Gpt2Tokenizer;
import io.xaforward.training.GradientReducer;
import io.xaforward.common.Json;
import io.xaforward.training.SyntheticCorpus;
import io.xaforward.training.TextGenerator;
import io.xaforward.training.TokenDataset;
import io.xaforward.training.TrainerConfig;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code xaf export --out DIR} gives a Hugging Face model directory: a reference GPT-2 written in PyTorch from
 * config.json alone (gpt2_reference.py, Debian's python3-torch) loads it, its BPE tokenizer built from vocab.json and
 * merges.txt encodes text as {@link Gpt2Tokenizer} does, its logits match the model's, and its greedy continuation
 * equals {@code xaf generate --temperature 0}.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class HuggingFaceExportTest {

    private static final String PYTHON = "/usr/bin/python3";
    private static final String PROMPT = "Mr President, the Commission";
    private static final int TOKENS = 12;

    @TempDir
    static Path dir;
    private static Path checkpoint;

    @BeforeAll
    static void train() throws Exception {
        int[] ids = Gpt2Tokenizer.get().encode(SyntheticCorpus.generate(5, 40_000));
        TokenDataset data = new TokenDataset() {
            @Override
            public long size() {
                return ids.length;
            }

            @Override
            public int vocabSize() {
                return Gpt2Tokenizer.VOCAB_SIZE;
            }

            @Override
            public int tokenAt(long index) {
                return ids[(int) index];
            }
        };
        TrainerConfig config = TrainerConfig.builder("gpt2-tiny").steps(6).globalBatch(4).learningRate(1e-2)
                .warmupSteps(1).seed(11).build();
        try (DataParallelTrainer t = new DataParallelTrainer(config, data, null, 0, 1, GradientReducer.single())) {
            t.train(null);
            checkpoint = dir.resolve("model.ckpt");
            t.saveCheckpoint(checkpoint);
        }
    }

    record Run(int rc, String out, String err) {
    }

    static Run xaf(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream oldOut = System.out;
        int rc;
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            var cl = Main.commandLine();
            cl.setErr(new java.io.PrintWriter(err, true, StandardCharsets.UTF_8));
            rc = cl.execute(args);
        } finally {
            System.setOut(oldOut);
        }
        return new Run(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void exportDirectoryRunsInAReferenceGpt2AndContinuesAsXafGenerate() throws Exception {
        Path model = dir.resolve("hf");
        Run export = xaf("export", "--checkpoint", checkpoint.toString(), "--out", model.toString());
        assertEquals(0, export.rc(), export.err());
        for (String f : List.of("model.safetensors", "config.json", "vocab.json", "merges.txt", "tokenizer_config.json",
                "special_tokens_map.json")) {
            assertTrue(Files.isRegularFile(model.resolve(f)), f);
        }
        JsonObject config = Json.parse(Files.readString(model.resolve("config.json"))).getAsJsonObject();
        assertEquals(50257, config.get("vocab_size").getAsInt());
        assertEquals(64, config.get("n_positions").getAsInt());
        assertEquals(32, config.get("n_embd").getAsInt());
        assertEquals(2, config.get("n_layer").getAsInt());
        assertEquals(4, config.get("n_head").getAsInt());
        assertEquals("gelu", config.get("activation_function").getAsString(), "the exact GELU, not GPT-2's gelu_new");
        assertTrue(config.get("tie_word_embeddings").getAsBoolean());
        List<String> merges = Files.readAllLines(model.resolve("merges.txt"));
        assertEquals(1 + 50000, merges.size(), "header and GPT-2's 50,000 merges");
        assertEquals("Ġ t", merges.get(1), "GPT-2's first merge");

        String sample = SyntheticCorpus.generate(8, 3000) + " naïve café, don't 3.14 -- ok!\n\n  x";
        JsonObject reference = reference(model, Map.of("prompt", PROMPT, "texts", List.of(sample, "Hello world")));

        assertArrayEquals(Gpt2Tokenizer.get().encode(sample), ints(reference.getAsJsonArray("encoded").get(0).getAsJsonArray()),
                "vocab.json + merges.txt encode as the r50k_base ranks do");
        assertArrayEquals(new int[] {15496, 995}, ints(reference.getAsJsonArray("encoded").get(1).getAsJsonArray()));
        int[] promptIds = Gpt2Tokenizer.get().encode(PROMPT);
        assertArrayEquals(promptIds, ints(reference.getAsJsonArray("prompt_ids")));

        try (CheckpointModel loaded = CheckpointModel.load(checkpoint)) {
            long[] context = new long[promptIds.length];
            for (int i = 0; i < context.length; i++) context[i] = promptIds[i];
            float[] ours = loaded.nextTokenLogits(context);
            JsonArray theirs = reference.getAsJsonArray("last_logits");
            assertEquals(ours.length, theirs.size());
            double maxDiff = 0;
            for (int i = 0; i < ours.length; i++) maxDiff = Math.max(maxDiff, Math.abs(ours[i] - theirs.get(i).getAsDouble()));
            assertTrue(maxDiff < 1e-4, "logits differ by up to " + maxDiff);

            int[] greedy = new TextGenerator(loaded, Gpt2Tokenizer.get())
                    .generateIds(promptIds, new TextGenerator.Settings(TOKENS, 0, 0, 1));
            assertArrayEquals(greedy, ints(reference.getAsJsonArray("ids")), "greedy continuation");
        }
        Run generate = xaf("generate", "--checkpoint", checkpoint.toString(), "--prompt", PROMPT, "--temperature", "0",
                "--tokens", Integer.toString(TOKENS));
        assertEquals(0, generate.rc(), generate.err());
        assertEquals(reference.get("text").getAsString(), generate.out().stripTrailing());
    }

    @Test
    void exportRefusesToOverwriteAndMisnamedFiles() throws Exception {
        Path model = dir.resolve("twice");
        assertEquals(0, xaf("export", "--checkpoint", checkpoint.toString(), "--out", model.toString()).rc());
        Run again = xaf("export", "--checkpoint", checkpoint.toString(), "--out", model.toString());
        assertEquals(1, again.rc());
        assertTrue(again.err().startsWith("xaf: ") && again.err().contains("--force"), again.err());
        assertEquals(0, xaf("export", "--checkpoint", checkpoint.toString(), "--out", model.toString(), "--force").rc());

        Path weights = dir.resolve("weights.safetensors");
        assertEquals(0, xaf("export", "--checkpoint", checkpoint.toString(), "--out", weights.toString()).rc());
        assertEquals(1, xaf("export", "--checkpoint", checkpoint.toString(), "--out", weights.toString()).rc());

        Path pt = dir.resolve("model.pt");
        Run misnamed = xaf("export", "--checkpoint", checkpoint.toString(), "--out", pt.toString());
        assertEquals(1, misnamed.rc());
        assertTrue(misnamed.err().contains("not .pt"), misnamed.err());
        assertEquals(1, misnamed.err().lines().count(), misnamed.err());
        assertFalse(Files.exists(pt));
    }

    /** Runs gpt2_reference.py on the model directory; a missing python3-torch fails the test, it is never skipped. */
    private static JsonObject reference(Path model, Map<String, Object> request) throws Exception {
        Path script = dir.resolve("gpt2_reference.py");
        try (InputStream in = HuggingFaceExportTest.class.getResourceAsStream("/gpt2_reference.py")) {
            Files.copy(in, script, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
        Process p = new ProcessBuilder(PYTHON, script.toString(), model.toString(), Integer.toString(TOKENS))
                .redirectError(ProcessBuilder.Redirect.PIPE).start();
        p.getOutputStream().write(Json.line(request).getBytes(StandardCharsets.UTF_8));
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), "the reference GPT-2 needs Debian's python3-torch (./xaf test installs it): " + err);
        return Json.parse(new String(out, StandardCharsets.UTF_8)).getAsJsonObject();
    }

    private static int[] ints(JsonArray a) {
        int[] r = new int[a.size()];
        for (int i = 0; i < r.length; i++) r[i] = a.get(i).getAsInt();
        return r;
    }
}
