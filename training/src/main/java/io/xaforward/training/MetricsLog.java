package io.xaforward.training;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Per-step metrics as JSON lines, one object per optimizer step, flushed as written so that a running job can be
 * followed with {@code tail -f} and a crashed one keeps what it did. Keys are snake_case; a value that was not
 * measured at a step (validation loss between evaluations) is {@code null}.
 */
public final class MetricsLog implements AutoCloseable {

    private final BufferedWriter out;

    /** Appends when {@code append} (a resumed run continues its file), else starts the file afresh. */
    public MetricsLog(Path file, boolean append) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        Files.createDirectories(parent);
        out = Files.newBufferedWriter(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                append ? StandardOpenOption.APPEND : StandardOpenOption.TRUNCATE_EXISTING);
    }

    /** One step's record; fields in the order given. */
    public void write(Map<String, ?> record) throws IOException {
        out.write(Json.line(record));
        out.newLine();
        out.flush();
    }

    /** The standard record of one step, for writers that have these figures. */
    public static Map<String, Object> record(long step, double loss, double validationLoss, double learningRate,
                                             double tokensPerSecond, double computeMs, double commMs) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("step", step);
        r.put("loss", loss);
        r.put("val_loss", validationLoss);
        r.put("lr", learningRate);
        r.put("tokens_per_s", tokensPerSecond);
        r.put("compute_ms", computeMs);
        r.put("comm_ms", commMs);
        return r;
    }

    @Override
    public void close() throws IOException {
        out.close();
    }
}
