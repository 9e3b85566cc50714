package io.xaforward.testbed;

import io.xaforward.common.ConfigWord;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A rate limit on the link between a gateway port and its DC, applied by tc in both directions; emulates a
 * thin inter-DC pipe.
 *
 * @param rate          the rate as written in the file (e.g. {@code 100mbit})
 * @param bitsPerSecond the same rate in bit/s
 */
public record LinkLimit(String gateway, String datacenter, String rate, long bitsPerSecond, Qdisc qdisc) {

    /** The tc queueing discipline that enforces the rate. */
    public enum Qdisc implements ConfigWord {
        HTB, TBF;

        /** Reads a link's {@code qdisc:} word, htb or tbf ({@link ConfigWord#parse}). */
        public static Qdisc fromName(String name) {
            return ConfigWord.parse(Qdisc.class, "qdisc", name);
        }

        @Override
        public String configName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private static final Pattern RATE = Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*([kmgt]?)(bit|bps)");

    /**
     * Parses a tc-style rate: a number followed by bit, kbit, mbit, gbit, tbit (bits per second) or bps, kbps, mbps,
     * gbps, tbps (bytes per second, as tc reads them). Units are decimal (k = 1000).
     */
    public static long parseRate(String text) {
        Matcher m = RATE.matcher(text.trim().toLowerCase(Locale.ROOT));
        if (!m.matches())
            throw new IllegalArgumentException("'" + text + "' is not a rate (expected e.g. 100mbit, 1gbit, 500kbit, 10mbps)");
        double value = Double.parseDouble(m.group(1));
        double scale = switch (m.group(2)) {
            case "k" -> 1e3;
            case "m" -> 1e6;
            case "g" -> 1e9;
            case "t" -> 1e12;
            default -> 1;
        };
        double bits = value * scale * (m.group(3).equals("bps") ? 8 : 1);
        if (bits < 8000 || bits > 4e12)
            throw new IllegalArgumentException("'" + text + "' is outside the supported range 8kbit..4tbit");
        return (long) bits;
    }
}
