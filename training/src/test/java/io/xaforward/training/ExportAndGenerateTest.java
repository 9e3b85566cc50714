package io.xaforward.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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

/** A checkpoint of a few tiny steps, exported to safetensors and read back by hand; seeded generation from it. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ExportAndGenerateTest {

    @TempDir
    static Path dir;
    private static Path checkpoint;
    private static float[] weights;
    private static List<String> names;

    @BeforeAll
    static void train() throws Exception {
        TokenDataset.Split data = TextDataset.of(SyntheticCorpus.generate(3, 30_000)).split(0.1);
        TrainerConfig config = TrainerConfig.builder("tiny").steps(4).globalBatch(4).learningRate(3e-3).seed(9).build();
        try (DataParallelTrainer t = new DataParallelTrainer(config, data.train(), null, 0, 1, GradientReducer.single())) {
            t.train(null);
            checkpoint = dir.resolve("tiny.ckpt");
            t.saveCheckpoint(checkpoint);
            weights = t.parameterSnapshot();
            names = t.parameterNames();
        }
    }

    @Test
    void safetensorsHoldGpt2NamedTensorsEqualToTheWeights() throws Exception {
        Path file = dir.resolve("model.safetensors");
        try (CheckpointModel model = CheckpointModel.load(checkpoint)) {
            assertEquals(4, model.step());
            SafetensorsExport.write(model, file);
        }
        // Read the file by its specification: u64 LE header size, JSON header, raw little-endian data.
        byte[] bytes = Files.readAllBytes(file);
        ByteBuffer buf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        long headerSize = buf.getLong();
        assertEquals(0, (8 + headerSize) % 8, "data is 8-byte aligned");
        JsonObject header = JsonParser.parseString(new String(bytes, 8, (int) headerSize, StandardCharsets.UTF_8))
                .getAsJsonObject();
        assertEquals("tiny", header.getAsJsonObject("__metadata__").get("preset").getAsString());

        Set<String> expected = new TreeSet<>(Set.of("wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"));
        for (int layer = 0; layer < 2; layer++) {
            for (String n : List.of("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                    "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",
                    "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias")) {
                expected.add("h." + layer + "." + n);
            }
        }
        Set<String> actual = new TreeSet<>(header.keySet());
        actual.remove("__metadata__");
        assertEquals(expected, actual);

        JsonObject cAttn = header.getAsJsonObject("h.0.attn.c_attn.weight");
        assertEquals("F32", cAttn.get("dtype").getAsString());
        assertEquals(List.of(64L, 192L), longs(cAttn.getAsJsonArray("shape")), "GPT-2 Conv1D layout [in, out]");
        assertEquals(List.of(256L, 64L), longs(header.getAsJsonObject("wte.weight").getAsJsonArray("shape")));

        long dataStart = 8 + headerSize;
        long covered = 0;
        int flatOffset = 0;
        for (int p = 0; p < names.size(); p++) {
            String name = SafetensorsExport.gpt2Name(names.get(p));
            JsonObject entry = header.getAsJsonObject(name);
            List<Long> shape = longs(entry.getAsJsonArray("shape"));
            List<Long> offsets = longs(entry.getAsJsonArray("data_offsets"));
            long count = shape.stream().reduce(1L, (a, b) -> a * b);
            assertEquals(count * 4, offsets.get(1) - offsets.get(0));
            covered += offsets.get(1) - offsets.get(0);
            boolean conv1d = name.startsWith("h.") && name.endsWith(".weight") && shape.size() == 2;
            for (long i = 0; i < count; i += Math.max(1, count / 50)) {
                float stored = buf.getFloat((int) (dataStart + offsets.get(0) + 4 * i));
                // Our Linear weight is [out, in] row-major; the exported one is [in, out].
                long source = conv1d ? (i % shape.get(1)) * shape.get(0) + i / shape.get(1) : i;
                assertEquals(weights[flatOffset + (int) source], stored, 0f, name + "[" + i + "]");
            }
            flatOffset += (int) count;
        }
        assertEquals(weights.length, flatOffset);
        assertEquals(bytes.length - dataStart, covered, "the tensors cover the data section exactly");
    }

    private static List<Long> longs(JsonArray a) {
        return a.asList().stream().map(JsonElement::getAsLong).toList();
    }

    @Test
    void generationIsDeterministicForASeed() throws Exception {
        TextGenerator.Settings sampled = new TextGenerator.Settings(24, 0.8, 20, 7);
        TextGenerator.Settings greedy = new TextGenerator.Settings(24, 0, 0, 7);
        String a;
        String g;
        try (CheckpointModel model = CheckpointModel.load(checkpoint)) {
            TextGenerator gen = new TextGenerator(model, TextGenerator.tokenizerFor(model.config()));
            a = gen.generate("the ", sampled);
            g = gen.generate("the ", greedy);
            assertEquals(g, gen.generate("the ", new TextGenerator.Settings(24, 0, 0, 99)), "greedy ignores the seed");
            int[] ids = gen.generateIds(new int[] {116, 104}, sampled);
            assertEquals(2 + 24, ids.length);
            assertArrayEquals(new int[] {116, 104}, java.util.Arrays.copyOf(ids, 2));
        }
        try (CheckpointModel again = CheckpointModel.load(checkpoint)) {
            TextGenerator gen = new TextGenerator(again, ByteTokenizer.INSTANCE);
            assertEquals(a, gen.generate("the ", sampled), "same checkpoint, prompt and seed: same text");
        }
        assertTrue(a.startsWith("the "));
        assertNotEquals("", g.substring(4));
    }
}
