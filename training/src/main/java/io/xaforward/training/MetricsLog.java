package io.xaforward.training;

import io.xaforward.common.Json;

import java.io.BufferedWriter;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.MathContext;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Per-step metrics as JSON lines, one object per optimizer step, flushed as written so that a running job can be
 * followed with {@code tail -f} and a crashed one keeps what it did. Keys are snake_case; a value that was not
 * measured at a step (validation loss between evaluations) is {@code null}. Floating-point values are written with
 * {@link #SIGNIFICANT_DIGITS} significant digits: a timer's 1907.1575000000003 ms is noise past the fourth digit,
 * and short lines stay readable.
 */
public final class MetricsLog implements AutoCloseable {

    /** Significant digits of every floating-point value written. */
    public static final int SIGNIFICANT_DIGITS = 6;
    private static final MathContext ROUNDING = new MathContext(SIGNIFICANT_DIGITS);

    private final BufferedWriter out;

    /** Appends when {@code append} (a resumed run continues its file), else starts the file afresh. */
    public MetricsLog(Path file, boolean append) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        Files.createDirectories(parent);
        out = Files.newBufferedWriter(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                append ? StandardOpenOption.APPEND : StandardOpenOption.TRUNCATE_EXISTING);
    }

    /** One step's record; fields in the order given, floating-point values rounded. */
    public void write(Map<String, ?> record) throws IOException {
        Map<String, Object> rounded = new LinkedHashMap<>();
        record.forEach((k, v) -> rounded.put(k, v instanceof Double || v instanceof Float
                ? round(((Number) v).doubleValue()) : v));
        out.write(Json.line(rounded));
        out.newLine();
        out.flush();
    }

    /** {@code v} to {@link #SIGNIFICANT_DIGITS} significant digits; NaN and infinities unchanged. */
    public static double round(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v) || v == 0) {
            return v;
        }
        return new BigDecimal(v).round(ROUNDING).doubleValue();
    }

    /**
     * The standard record of one step, for writers that have these figures, stamped with the current time (UTC,
     * ISO-8601, milliseconds).
     *
     * @param tokensSeen training tokens consumed up to and including this step (all ranks, resumed steps included)
     */
    public static Map<String, Object> record(long step, long tokensSeen, double loss, double validationLoss,
                                             double learningRate, double tokensPerSecond, double computeMs,
                                             double commMs) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("step", step);
        r.put("time", Instant.now().truncatedTo(ChronoUnit.MILLIS).toString());
        r.put("tokens", tokensSeen);
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
