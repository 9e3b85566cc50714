package io.xaforward.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An option's default is the one it declares: a field that starts with a value of its own (what a command filled in
 * by code, such as xaf demo's TrainCommand, runs with) starts with the declared default, converted as the command
 * line converts it.
 */
class DeclaredDefaultsTest {
    @Test
    void fieldsThatStartWithAValueStartWithTheDeclaredDefault() {
        List<String> problems = new ArrayList<>();
        int compared = 0;
        List<CommandLine> all = new ArrayList<>();
        collect(Main.commandLine(), all);
        for (CommandLine cl : all) {
            DetachedOptions defaults = new DetachedOptions(cl.getCommandSpec(), o -> true).parse(List.of());
            for (OptionSpec o : cl.getCommandSpec().options()) {
                if (o.usageHelp() || o.versionHelp() || o.defaultValue() == null) continue;
                Object initial = o.initialValue();
                if (initial == null || isZero(initial)) continue; // no value of its own: the parse sets the default
                compared++;
                Object declared = defaults.value(o.longestName());
                if (!Objects.equals(initial, declared)) {
                    problems.add(cl.getCommandName() + " " + o.longestName() + ": starts at " + initial + ", declares "
                            + o.defaultValue());
                }
            }
        }
        assertEquals(List.of(), problems);
        assertTrue(compared >= 30, "options compared: " + compared);
    }

    private static boolean isZero(Object v) {
        return v instanceof Number n && n.doubleValue() == 0 || Boolean.FALSE.equals(v);
    }

    private static void collect(CommandLine cl, List<CommandLine> out) {
        out.add(cl);
        for (CommandLine sub : cl.getSubcommands().values()) if (!out.contains(sub)) collect(sub, out);
    }
}
