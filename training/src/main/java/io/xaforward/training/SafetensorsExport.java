package io.xaforward.training;

import io.xaforward.common.Json;

import ai.djl.ndarray.NDArray;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Writes a model's weights as a .safetensors file (8-byte little-endian header length, a JSON header mapping each
 * tensor name to dtype, shape and byte offsets, then the raw little-endian data) under Hugging Face GPT-2's parameter
 * names: {@code wte.weight}, {@code h.0.attn.c_attn.weight}, {@code ln_f.bias} ... Linear weights are transposed to
 * GPT-2's Conv1D layout [in, out], so the file loads into a GPT2Model state dict of the same shape. The tied output
 * head is not repeated (GPT-2 ties it to wte as well).
 */
public final class SafetensorsExport {

    private static final Pattern CHILD_INDEX = Pattern.compile("(?<=^|_)\\d{2}(?=[a-z])");
    private static final Pattern BLOCK = Pattern.compile("h(\\d+)_(.+)");
    private static final Map<String, String> BLOCK_NAMES = Map.ofEntries(
            Map.entry("ln1_gamma", "ln_1.weight"), Map.entry("ln1_beta", "ln_1.bias"),
            Map.entry("attn_qkv_weight", "attn.c_attn.weight"), Map.entry("attn_qkv_bias", "attn.c_attn.bias"),
            Map.entry("attn_proj_weight", "attn.c_proj.weight"), Map.entry("attn_proj_bias", "attn.c_proj.bias"),
            Map.entry("ln2_gamma", "ln_2.weight"), Map.entry("ln2_beta", "ln_2.bias"),
            Map.entry("fc_weight", "mlp.c_fc.weight"), Map.entry("fc_bias", "mlp.c_fc.bias"),
            Map.entry("proj_weight", "mlp.c_proj.weight"), Map.entry("proj_bias", "mlp.c_proj.bias"));
    private static final Map<String, String> TOP_NAMES = Map.of(
            "wte", "wte.weight", "wpe", "wpe.weight", "ln_f_gamma", "ln_f.weight", "ln_f_beta", "ln_f.bias",
            "lm_head", "lm_head.weight");

    private SafetensorsExport() {
    }

    /** GPT-2's name for one of {@link GptModel}'s parameters. */
    public static String gpt2Name(String blockName) {
        // DJL prefixes each child block's name with its two-digit position: 01h0_02attn_01qkv_weight.
        String modelName = CHILD_INDEX.matcher(blockName).replaceAll("");
        String top = TOP_NAMES.get(modelName);
        if (top != null) {
            return top;
        }
        Matcher m = BLOCK.matcher(modelName);
        if (m.matches() && BLOCK_NAMES.containsKey(m.group(2))) {
            return "h." + m.group(1) + "." + BLOCK_NAMES.get(m.group(2));
        }
        throw new IllegalArgumentException("no GPT-2 name for parameter " + blockName);
    }

    private static int shapeRank(NDArray a) {
        return a.getShape().dimension();
    }

    /** [rows, cols] row-major to [cols, rows] row-major. */
    static float[] transpose(float[] m, int rows, int cols) {
        float[] t = new float[m.length];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                t[c * rows + r] = m[r * cols + c];
            }
        }
        return t;
    }

    /** Writes {@code model}'s weights to {@code file}; metadata records the preset and training step. */
    public static void write(CheckpointModel model, Path file) throws IOException {
        write(model, file, "");
    }

    /**
     * As {@link #write(CheckpointModel, Path)}, with {@code prefix} before every name but the output head's:
     * {@code "transformer."} gives the state dict of GPT2LMHeadModel (whose untied {@code lm_head.weight} sits beside
     * the {@code transformer} module), {@code ""} that of GPT2Model.
     */
    public static void write(CheckpointModel model, Path file, String prefix) throws IOException {
        List<String> names = model.parameterNames();
        List<NDArray> arrays = model.parameters();
        List<String> exportNames = new ArrayList<>();
        List<long[]> shapes = new ArrayList<>();
        List<float[]> data = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            NDArray a = arrays.get(i);
            String gpt2 = gpt2Name(names.get(i));
            boolean linearWeight = gpt2.startsWith("h.") && gpt2.endsWith(".weight") && shapeRank(a) == 2;
            long[] shape = a.getShape().getShape();
            float[] values = a.toFloatArray();
            if (linearWeight) {
                values = transpose(values, (int) shape[0], (int) shape[1]);
                shape = new long[] {shape[1], shape[0]};
            }
            exportNames.add(gpt2.equals("lm_head.weight") ? gpt2 : prefix + gpt2);
            shapes.add(shape);
            data.add(values);
        }
        Map<String, Object> header = new LinkedHashMap<>();
        Map<String, String> metadata = new LinkedHashMap<>();
        metadata.put("format", "pt");
        metadata.put("preset", model.config().name());
        metadata.put("step", Long.toString(model.step()));
        header.put("__metadata__", metadata);
        long offset = 0;
        for (int i = 0; i < exportNames.size(); i++) {
            long bytes = (long) data.get(i).length * Float.BYTES;
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("dtype", "F32");
            entry.put("shape", shapes.get(i));
            entry.put("data_offsets", new long[] {offset, offset + bytes});
            header.put(exportNames.get(i), entry);
            offset += bytes;
        }
        byte[] json = Json.line(header).getBytes(StandardCharsets.UTF_8);
        // The data starts 8-byte aligned, as the reference writer pads its header with spaces.
        int padded = (json.length + 7) / 8 * 8;
        Path parent = file.toAbsolutePath().getParent();
        Files.createDirectories(parent);
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 20)) {
            out.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(padded).array());
            out.write(json);
            for (int i = json.length; i < padded; i++) {
                out.write(' ');
            }
            for (float[] tensor : data) {
                ByteBuffer buffer = ByteBuffer.allocate(tensor.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
                buffer.asFloatBuffer().put(tensor);
                out.write(buffer.array());
            }
        }
    }
}
