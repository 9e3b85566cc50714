package io.xaforward.cluster;

import io.xaforward.training.Evaluation;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The one-line progress protocol between worker processes and the launcher: {@code @xaf KIND key=value ...}.
 * Values never contain spaces. Anything else a worker prints is passed through as log output.
 */
public record WorkerLine(String kind, Map<String, String> values) {
    public static final String TAG = "@xaf";

    public static String format(String kind, Object... keyValues) {
        return keyValues.length < 2 ? TAG + ' ' + kind : TAG + ' ' + kind + ' ' + values(keyValues);
    }

    /** {@code key=value} pairs separated by spaces, to append to a line begun by {@link #format}. */
    public static String values(Object... keyValues) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i + 1 < keyValues.length; i += 2) {
            if (i > 0) b.append(' ');
            b.append(keyValues[i]).append('=').append(String.valueOf(keyValues[i + 1]).replace(' ', '_'));
        }
        return b.toString();
    }

    /** The validation figures of a step line (what the launcher reads back into an {@link Evaluation}). */
    public static String validationValues(Evaluation v) {
        return values("val", String.format(Locale.ROOT, "%.6f", v.loss()),
                "val_se", String.format(Locale.ROOT, "%.6g", v.standardError()), "val_windows", v.windows(),
                "val_split_windows", v.splitWindows());
    }

    /** Parses a line, or returns null when it is not a protocol line. */
    public static WorkerLine parse(String line) {
        if (!line.startsWith(TAG + " ")) return null;
        String[] parts = line.substring(TAG.length() + 1).trim().split(" +");
        Map<String, String> values = new LinkedHashMap<>();
        for (int i = 1; i < parts.length; i++) {
            int eq = parts[i].indexOf('=');
            if (eq > 0) values.put(parts[i].substring(0, eq), parts[i].substring(eq + 1));
        }
        return new WorkerLine(parts[0], values);
    }

    public String get(String key) {
        String v = values.get(key);
        if (v == null) throw new IllegalArgumentException("worker line '" + kind + "' has no " + key + ": " + values);
        return v;
    }

    public double number(String key) {
        return Double.parseDouble(get(key));
    }

    public long integer(String key) {
        return Long.parseLong(get(key));
    }
}
