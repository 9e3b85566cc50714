package io.xaforward.cli;

import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.IGetter;
import picocli.CommandLine.Model.ISetter;
import picocli.CommandLine.Model.OptionSpec;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Some options of a command, copied into a command of their own: not required, outside any group, each bound to a
 * value of its own. Words that come from elsewhere than the command's own line (a cluster file's training section,
 * etcd, a checkpoint's recorded settings, the worker options xaf launch passes on) are parsed through them once, by
 * the rules of the command's options (their converters, their defaults, the command line's path rule), while the
 * command itself is left as it is and no other option has to be given a value to make the parse valid.
 */
final class DetachedOptions {
    private final CommandLine parser;
    private final Map<String, Value> values = new LinkedHashMap<>();

    /** Copies of the options of {@code command} that {@code which} accepts. */
    DetachedOptions(CommandSpec command, Predicate<OptionSpec> which) {
        CommandSpec copies = CommandSpec.create();
        for (OptionSpec o : command.options()) {
            if (o.usageHelp() || o.versionHelp() || !which.test(o)) continue;
            Value v = new Value();
            values.put(o.longestName(), v);
            copies.addOption(OptionSpec.builder(o).required(false).getter(v).setter(v).build());
        }
        parser = new CommandLine(copies);
        parser.registerConverter(Path.class, UserPaths::resolve); // as Main's: relative to the caller
    }

    /** Copies of the options of {@code command} that {@code args} names. */
    static DetachedOptions named(CommandSpec command, List<String> args) {
        return new DetachedOptions(command, o -> List.of(o.names()).stream().anyMatch(args::contains));
    }

    /**
     * Words of options the copies do not know are left for whoever reads them after (xaf launch passes every worker
     * option on; the worker judges those it alone reads).
     */
    DetachedOptions ignoringOthers() {
        parser.setUnmatchedArgumentsAllowed(true);
        parser.setUnmatchedOptionsArePositionalParams(false);
        return this;
    }

    /** Parses {@code args}; every copy not named there takes its default. Throws picocli's ParameterException. */
    DetachedOptions parse(List<String> args) {
        parser.parseArgs(args.toArray(String[]::new));
        return this;
    }

    /** The typed value of the option {@code name} (its longest name) after {@link #parse}. */
    @SuppressWarnings("unchecked")
    <T> T value(String name) {
        Value v = values.get(name);
        if (v == null) throw new IllegalArgumentException("no copied option " + name);
        return (T) v.value;
    }

    /** Whether {@link #parse} found the option {@code name} among its words. */
    boolean given(String name) {
        return parser.getParseResult().hasMatchedOption(name);
    }

    /** Where one copied option puts its value. */
    private static final class Value implements IGetter, ISetter {
        private Object value;

        @Override
        @SuppressWarnings("unchecked")
        public <T> T get() {
            return (T) value;
        }

        @Override
        @SuppressWarnings("unchecked")
        public <T> T set(T v) {
            T old = (T) value;
            value = v;
            return old;
        }
    }
}
