package io.xaforward.common;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The strict checks every XAForward YAML reader (the gateway config, the cluster file, the topology file) applies to
 * the tree {@link YamlTree} reads, where every scalar is the text that was written: a mapping where one is expected,
 * no key beyond the allowed ones, required keys present, a single value where one is expected, integers written
 * exactly (decimal or 0x hexadecimal; YAML 1.1's octal, base-60 and floats refused) within bounds, and booleans
 * spelled true or false. Every error names the entry and the key; the reader decides how an error is raised
 * ({@link Failure}), so each file kind keeps its own exception and names its file.
 */
public final class YamlFields {
    /** How a reader raises an error. */
    @FunctionalInterface
    public interface Failure {
        /**
         * @param where   the entry, e.g. {@code ports[2]} or {@code top level}
         * @param key     the key the error is about, or null when it is about the entry itself
         * @param problem what is wrong, naming the key where there is one
         */
        RuntimeException at(String where, String key, String problem);
    }

    private final Failure fail;

    public YamlFields(Failure fail) {
        this.fail = fail;
    }

    /** Errors raised as {@code fail.apply("WHERE: PROBLEM")}. */
    public static YamlFields prefixed(Function<String, RuntimeException> fail) {
        return new YamlFields((where, key, problem) -> fail.apply(where + ": " + problem));
    }

    /** {@code node} as a mapping. */
    public Map<?, ?> map(Object node, String where) {
        if (!(node instanceof Map<?, ?> m)) throw fail.at(where, null, "expected a mapping");
        return m;
    }

    /** Refuses a key of {@code m} that is not in {@code allowed}, naming the allowed ones. */
    public void allowOnly(Map<?, ?> m, String where, Set<String> allowed) {
        for (Object k : m.keySet()) {
            if (!allowed.contains(String.valueOf(k))) {
                throw fail.at(where, String.valueOf(k), "unknown key '" + k + "' (allowed: "
                        + String.join(", ", allowed.stream().sorted().toList()) + ")");
            }
        }
    }

    /** The list under {@code key}; required. */
    public List<?> list(Map<?, ?> m, String key, String where) {
        Object v = m.get(key);
        if (v == null) throw fail.at(where, key, "'" + key + "' is required");
        if (!(v instanceof List<?> l)) throw fail.at(where, key, "'" + key + "' must be a list");
        return l;
    }

    /** The single value under {@code key}; {@code dflt} when absent, required when {@code dflt} is null. */
    public String string(Map<?, ?> m, String key, String dflt, String where) {
        Object v = m.get(key);
        if (v == null) {
            if (dflt == null) throw fail.at(where, key, "'" + key + "' is required");
            return dflt;
        }
        if (!(v instanceof String s)) throw fail.at(where, key, key + " must be a single value, not a list or mapping");
        return s;
    }

    /** The single value under {@code key}; required. */
    public String required(Map<?, ?> m, String key, String where) {
        return string(m, key, null, where);
    }

    /** true or false, {@code dflt} when absent. */
    public boolean bool(Map<?, ?> m, String key, boolean dflt, String where) {
        Object v = m.get(key);
        if (v == null) return dflt;
        if ("true".equals(v)) return true;
        if ("false".equals(v)) return false;
        throw fail.at(where, key, key + " must be true or false, got '" + v + "'");
    }

    /** An unsigned 32-bit integer; {@code dflt} when absent, required when {@code dflt} is null. */
    public long unsigned32(Map<?, ?> m, String key, Long dflt, String where) {
        if (m.get(key) == null && dflt == null) throw fail.at(where, key, "'" + key + "' is required");
        return integer(m, key, dflt == null ? 0 : dflt, 0, 0xFFFF_FFFFL, where);
    }

    /**
     * An integer in [min, max], {@code dflt} when absent. Only decimal without a leading zero and 0x hexadecimal are
     * numbers, so YAML 1.1's octal (0123), base-60 (1:30), floats (1.9) and values that would wrap (2^64+5) are
     * errors rather than silently different numbers.
     */
    public long integer(Map<?, ?> m, String key, long dflt, long min, long max, String where) {
        Object v = m.get(key);
        if (v == null) return dflt;
        String s = numberText(v, key, where);
        BigInteger n;
        if (s.matches("-?(0|[1-9][0-9]*)")) n = new BigInteger(s);
        else if (s.matches("0[xX][0-9a-fA-F]+")) n = new BigInteger(s.substring(2), 16);
        else if (s.matches(DECIMAL)) throw fail.at(where, key, key + ": '" + s + "' is not an integer");
        else throw notANumber(s, key, where);
        if (n.compareTo(BigInteger.valueOf(min)) < 0 || n.compareTo(BigInteger.valueOf(max)) > 0) {
            String range = max == 0xFFFF_FFFFL && min == 0 ? "must fit in 32 bits unsigned" : "must be " + min + ".." + max;
            throw fail.at(where, key, key + " " + range + ", got " + s);
        }
        return n.longValue();
    }

    /** An integer in [min, max]; required. */
    public long requiredInteger(Map<?, ?> m, String key, long min, long max, String where) {
        if (m.get(key) == null) throw fail.at(where, key, "'" + key + "' is required");
        return integer(m, key, 0, min, max, where);
    }

    /**
     * A number in [min, max], {@code dflt} when absent, required when {@code dflt} is null: decimal digits with an
     * optional fraction and exponent (2, 0.5, .5, 1e-3). As for integers, a leading zero (octal in YAML 1.1), base-60
     * and anything else are errors.
     */
    public double decimal(Map<?, ?> m, String key, Double dflt, double min, double max, String where) {
        Object v = m.get(key);
        if (v == null) {
            if (dflt == null) throw fail.at(where, key, "'" + key + "' is required");
            return dflt;
        }
        String s = numberText(v, key, where);
        if (!s.matches(DECIMAL)) throw notANumber(s, key, where);
        double d = Double.parseDouble(s);
        if (!(d >= min && d <= max)) throw fail.at(where, key, key + " must be " + plain(min) + ".." + plain(max) + ", got " + s);
        return d;
    }

    /** Decimal digits, no leading zero, with an optional fraction and exponent; or a fraction alone. */
    private static final String DECIMAL = "-?((0|[1-9][0-9]*)(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+)?";

    private String numberText(Object v, String key, String where) {
        if (!(v instanceof String s)) throw fail.at(where, key, key + ": expected a number, got a " + (v instanceof List ? "list" : "mapping"));
        return s;
    }

    private RuntimeException notANumber(String s, String key, String where) {
        if (s.matches("-?0[0-9]+")) return fail.at(where, key, key + ": '" + s + "' has a leading zero (octal in YAML 1.1); write it without the zero or as 0x hex");
        if (s.matches("-?[0-9]+(:[0-9]+)+")) return fail.at(where, key, key + ": '" + s + "' is not a number (base-60 is not accepted; quote strings)");
        return fail.at(where, key, key + ": '" + s + "' is not a number");
    }

    private static String plain(double d) {
        return BigDecimal.valueOf(d).stripTrailingZeros().toPlainString();
    }
}
