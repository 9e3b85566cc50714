package io.xaforward.bench;

import io.xaforward.testbed.LinkLimit;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.WanImpairment;
import io.xaforward.testbed.WanLink;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A named kind of wide-area link ({@code --wan-profile lan,metro,continental} of {@code xaf bench train} and
 * {@code xaf bench allreduce}): the rate, one-way delay and random loss a bench sets on its topology's {@code wan:}
 * section for one cell, so that one bench run can interleave the same cells over several WANs.
 *
 * <p>A profile replaces the WAN's whole impairment (its jitter, burst loss and reordering go) and its rate, and keeps
 * the file's queue, MTU and ends. Every profile has a delay, so every profile's traffic crosses the testbed's delay
 * line: profiles then differ only in delay and loss, not in what forwards the WAN's frames (the bridge of a WAN
 * without impairment costs less CPU than the delay line on the workers' core).
 *
 * @param name        the word on the command line
 * @param rate        the WAN's rate per direction, tc units as in a topology file
 * @param oneWayDelay the delay added in each direction, as a topology duration ({@code 25ms})
 * @param loss        the random loss per frame and direction, as a topology percentage ({@code 0.1%})
 * @param emulates    what kind of link it stands for, for reports and help
 */
public record WanProfile(String name, String rate, String oneWayDelay, String loss, String emulates) {
    /** The profiles {@code --wan-profile} knows, shortest round trip first. */
    public static final List<WanProfile> KNOWN = List.of(
            new WanProfile("lan", "200mbit", "50us", "0%",
                    "two halls of one campus: 0.1 ms round trip, no loss"),
            new WanProfile("metro", "200mbit", "5ms", "0.01%",
                    "data centers in one metro region: 10 ms round trip, 0.01% random loss"),
            new WanProfile("continental", "200mbit", "25ms", "0.1%",
                    "data centers across a continent: 50 ms round trip, 0.1% random loss"));

    /** The {@code wan:} keys a profile sets or removes; any other key of the file's WAN stays. */
    private static final Set<String> REPLACED_KEYS = Set.of("rate", "delay", "jitter", "loss", "loss-burst", "reorder");

    /**
     * Parses {@code --wan-profile}'s comma-separated names in order; an unknown name fails naming the known ones, an
     * empty list or a name given twice fails too.
     */
    public static List<WanProfile> parseList(String csv) {
        if (csv == null || csv.isBlank()) throw new IllegalArgumentException("--wan-profile needs at least one of " + knownNames());
        List<WanProfile> profiles = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (String word : csv.split(",", -1)) {
            String w = word.strip();
            WanProfile p = KNOWN.stream().filter(k -> k.name.equals(w)).findFirst().orElseThrow(() ->
                    new IllegalArgumentException("unknown WAN profile '" + w + "' (known: " + knownNames() + ")"));
            if (!seen.add(w)) throw new IllegalArgumentException("--wan-profile names '" + w + "' twice");
            profiles.add(p);
        }
        return List.copyOf(profiles);
    }

    private static String knownNames() {
        return String.join(", ", KNOWN.stream().map(WanProfile::name).toList());
    }

    /** The round trip the profile adds, in milliseconds (twice the one-way delay). */
    public double roundTripMs() {
        return 2 * impairment().delayNanos() / 1e6;
    }

    /** The rate in bit/s. */
    public long bitsPerSecond() {
        return LinkLimit.parseRate(rate);
    }

    /** Delay and loss as the topology parser reads them (the fields written, parsed back). */
    public WanImpairment impairment() {
        Topology t = Topology.parse("""
                name: p
                datacenters:
                  - name: a
                    form: ipv4
                    hosts: 1
                  - name: b
                    form: ipv4
                    hosts: 1
                gateways:
                  - name: gw
                    joins: [a, b]
                wan:
                """ + wanFields("  "), "WAN profile " + name);
        return t.wan().orElseThrow().impairment();
    }

    /** A short description for tables: "metro (10 ms round trip, 0.01% loss, 200mbit)". */
    public String describe() {
        return String.format(Locale.ROOT, "%s (%s ms round trip, %s loss, %s)", name, trim(roundTripMs()), loss, rate);
    }

    private static String trim(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }

    private String wanFields(String indent) {
        return indent + "gateway: gw\n" + indent + "dc: b\n" + indent + "rate: " + rate + "\n"
                + indent + "delay: " + oneWayDelay + "\n" + (loss.equals("0%") ? "" : indent + "loss: " + loss + "\n");
    }

    /**
     * {@code yaml} with its {@code wan:} section's rate, delay and loss set to this profile's and its jitter, burst
     * loss and reordering removed; every other line kept. Fails when the text has no block-style {@code wan:} section.
     */
    public String applyTo(String yaml, String source) {
        List<String> lines = yaml.lines().toList();
        int start = -1;
        for (int i = 0; i < lines.size(); i++) if (lines.get(i).matches("wan:\\s*(#.*)?")) start = i;
        if (start < 0) throw new IllegalArgumentException(source + " has no wan: section (a block at the top level) for WAN profile " + name);
        List<String> out = new ArrayList<>(lines.subList(0, start + 1));
        String indent = null;
        boolean dropping = false; // inside a replaced key's nested block (loss-burst's p, r, ...)
        int i = start + 1;
        for (; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.isBlank() || line.strip().startsWith("#")) {
                out.add(line);
                continue;
            }
            int lead = line.length() - line.stripLeading().length();
            if (lead == 0) break; // the next top-level key ends the section
            if (indent == null) indent = line.substring(0, lead);
            if (lead > indent.length()) {
                if (!dropping) out.add(line);
                continue;
            }
            Matcher key = KEY.matcher(line.strip());
            dropping = key.lookingAt() && REPLACED_KEYS.contains(key.group(1));
            if (!dropping) out.add(line);
        }
        if (indent == null) throw new IllegalArgumentException(source + ": its wan: section is empty");
        String fields = wanFields(indent);
        // gateway and dc stay the file's own: only rate and the impairment are the profile's
        for (String f : fields.lines().toList()) {
            Matcher key = KEY.matcher(f.strip());
            if (key.lookingAt() && REPLACED_KEYS.contains(key.group(1))) out.add(f);
        }
        out.addAll(lines.subList(i, lines.size()));
        return String.join("\n", out) + "\n";
    }

    private static final Pattern KEY = Pattern.compile("([A-Za-z][A-Za-z0-9_-]*)\\s*:");

    /**
     * Writes {@code topology} with this profile applied to {@code file} and checks that the file reads back with the
     * profile's rate, delay and loss (a file the rewrite could not handle fails here, not in the testbed).
     */
    public Path writeApplied(Path topology, Path file) throws IOException {
        String changed = applyTo(Files.readString(topology), topology.toString());
        Files.createDirectories(file.toAbsolutePath().getParent());
        Files.writeString(file, changed);
        WanLink wan = Topology.load(file).wan().orElseThrow();
        WanImpairment want = impairment();
        if (wan.bitsPerSecond() != bitsPerSecond() || !wan.impairment().equals(want)) {
            throw new IllegalStateException("WAN profile " + name + " applied to " + topology + " reads back as rate "
                    + wan.rate() + ", " + wan.impairment() + " instead of " + rate + ", " + want);
        }
        return file;
    }
}
