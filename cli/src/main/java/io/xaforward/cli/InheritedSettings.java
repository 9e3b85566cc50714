package io.xaforward.cli;

import io.xaforward.transport.WireSecurity;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The rule for settings a run takes from outside its own command line: a cluster file's {@code training:} section
 * and etcd's {@code /xaf/jobs/JOB/training} for {@code xaf worker}, a checkpoint's recorded settings for
 * {@code xaf train --resume}. Whoever can write those is not necessarily whoever starts the process, so what they say
 * is checked before it is used, and said:
 *
 * <ul>
 *   <li>Wire security never drops below what the command line or its default says (crc32c &lt; mac &lt; encrypt): a
 *       lower inherited mode is refused, naming its source; a higher one is taken. A worker that is meant to run
 *       unauthenticated says {@code --wire-security crc32c} itself.</li>
 *   <li>Numbers are checked as the options mean them: a learning rate finite and above 0, steps and batch at least 1,
 *       counts that may be 0 not negative.</li>
 *   <li>A data path must lie inside a data root the operator allowed ({@code --data-root DIR}, repeatable; default:
 *       the directory xaf runs from), after symbolic links are resolved: otherwise a training section could make the
 *       worker read any file it can read (a key, a password file) into a model whose checkpoints and generated text
 *       others can see.</li>
 *   <li>Every inherited setting is printed once, with its source.</li>
 * </ul>
 */
final class InheritedSettings {
    /** Weakest first: an inherited mode earlier in this list than the command line's is refused. */
    static final List<WireSecurity> STRENGTH = List.of(WireSecurity.CRC32C, WireSecurity.MAC, WireSecurity.ENCRYPT);

    /** Options that must be at least 1. */
    private static final Set<String> POSITIVE = Set.of("--steps", "--batch", "--threads", "--bucket-mb", "--op-timeout",
            "--start-timeout", "--eval-windows", "--flows");
    /** Options that may be 0 (off) but not negative. */
    private static final Set<String> NOT_NEGATIVE = Set.of("--warmup", "--checkpoint-every", "--checksum-every",
            "--eval-every", "--pacing-mbps");

    private InheritedSettings() {}

    /**
     * Checks every option of {@code inherited} (name -> the value parsed from the outside source, typed as the option
     * is) against the value {@code own} holds now (the command line's or the default), then prints each, one line,
     * naming {@code source}. Throws {@link IllegalArgumentException} naming {@code source} and the key on the first
     * value refused; nothing has been applied then.
     */
    static void check(String source, String keyPrefix, Map<String, Object> inherited, CommandSpec own, List<Path> dataRoots) {
        for (var e : inherited.entrySet()) {
            String option = e.getKey();
            Object value = e.getValue();
            String key = keyPrefix + option.substring(2);
            switch (option) {
                case "--wire-security" -> {
                    WireSecurity mine = own.findOption(option).getValue();
                    WireSecurity theirs = (WireSecurity) value;
                    if (STRENGTH.indexOf(theirs) < STRENGTH.indexOf(mine)) {
                        throw new IllegalArgumentException(source + ": " + key + " " + theirs.configName()
                                + " is weaker than this process's " + mine.configName() + " (its command line or default);"
                                + " refused: a setting from outside never lowers the wire security. To run with "
                                + theirs.configName() + ", give --wire-security " + theirs.configName()
                                + " on the command line");
                    }
                }
                case "--lr" -> {
                    double lr = ((Number) value).doubleValue();
                    if (!Double.isFinite(lr) || lr <= 0) {
                        throw new IllegalArgumentException(source + ": " + key + " " + value
                                + " is not a learning rate: it must be a finite number above 0");
                    }
                }
                case "--data" -> checkDataPath(source, key, (Path) value, dataRoots);
                default -> {
                    if (value instanceof Number n && POSITIVE.contains(option) && n.longValue() < 1) {
                        throw new IllegalArgumentException(source + ": " + key + " " + value + " must be at least 1");
                    }
                    if (value instanceof Number n && NOT_NEGATIVE.contains(option) && n.longValue() < 0) {
                        throw new IllegalArgumentException(source + ": " + key + " " + value + " must not be negative");
                    }
                }
            }
        }
    }

    /** One line per inherited setting, naming its source: what the process runs with that its command line did not say. */
    static void log(PrintStream out, String who, String source, Map<String, Object> inherited) {
        for (var e : inherited.entrySet()) {
            out.println(who + ": " + e.getKey() + " " + Words.text(e.getValue()) + " from " + source);
        }
    }

    /** The data roots of {@code given} (the --data-root values), or the working directory when none was given. */
    static List<Path> dataRoots(List<Path> given) {
        return given == null || given.isEmpty() ? List.of(UserPaths.workingDirectory().toAbsolutePath()) : given;
    }

    private static void checkDataPath(String source, String key, Path data, List<Path> roots) {
        Path real = real(data);
        for (Path root : roots) {
            if (real.startsWith(real(root))) return;
        }
        throw new IllegalArgumentException(source + ": " + key + " " + data + (real.equals(data.toAbsolutePath().normalize())
                ? "" : " (" + real + ")") + " is outside the data roots this process allows ("
                + String.join(", ", roots.stream().map(Path::toString).toList()) + "); refused: give --data on the"
                + " command line, or --data-root DIR for a directory that holds it");
    }

    /**
     * The path with every symbolic link resolved, so that a link inside a root that points outside it is judged by
     * where it leads; a path that does not exist (yet) by its normalized form, its existing parent resolved.
     */
    private static Path real(Path p) {
        Path abs = p.toAbsolutePath().normalize();
        Path existing = abs;
        while (existing != null && !Files.exists(existing)) existing = existing.getParent();
        if (existing == null) return abs;
        try {
            return existing.toRealPath().resolve(existing.relativize(abs));
        } catch (IOException e) {
            return abs;
        }
    }

    /**
     * The typed values that {@code args} (option words from outside the command line, as
     * {@link RunSettings#inherited} lists them) give the options of {@code own} they name, in their order: each word
     * is read once, by the option's own converter and the command line's path rule ({@link DetachedOptions}), and
     * {@code own} is left as it is, so that {@link #check} can still refuse the lot. A word that names no constant is
     * its enum's own error, as when the command itself reads it; any other word picocli refuses is
     * {@code source: } and picocli's message.
     */
    static Map<String, Object> parse(String source, CommandSpec own, List<String> args) {
        DetachedOptions words = DetachedOptions.named(own, args);
        try {
            words.parse(args);
        } catch (CommandLine.ParameterException e) {
            Words.BadWord bad = Words.badWord(e);
            throw new IllegalArgumentException(bad != null ? bad.getMessage() : source + ": " + e.getMessage());
        }
        Map<String, Object> parsed = new LinkedHashMap<>();
        for (String a : args) {
            OptionSpec o = a.startsWith("--") ? own.findOption(a) : null;
            if (o != null) parsed.put(a, words.value(o.longestName()));
        }
        return parsed;
    }
}
