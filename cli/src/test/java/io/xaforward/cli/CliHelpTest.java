package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/** Every command and subcommand answers --help, and every option says what it does and its default. */
class CliHelpTest {

    private static void collect(CommandLine cl, List<CommandLine> out) {
        out.add(cl);
        for (CommandLine sub : cl.getSubcommands().values()) {
            if (!out.contains(sub)) collect(sub, out);
        }
    }

    private static List<CommandLine> allCommands() {
        List<CommandLine> all = new ArrayList<>();
        collect(Main.commandLine(), all);
        return all;
    }

    private static List<String> path(CommandLine cl) {
        List<String> names = new ArrayList<>();
        for (CommandLine c = cl; c.getParent() != null; c = c.getParent()) names.addFirst(c.getCommandName());
        return names;
    }

    @Test
    void everyCommandAnswersHelp() {
        List<CommandLine> all = allCommands();
        assertTrue(all.size() >= 12, "commands found: " + all.size());
        for (CommandLine cl : all) {
            if (cl.getCommandName().equals("help")) continue;
            List<String> args = new ArrayList<>(path(cl));
            args.add("--help");
            CommandLine root = Main.commandLine();
            StringWriter out = new StringWriter();
            root.setOut(new PrintWriter(out));
            int rc = root.execute(args.toArray(String[]::new));
            assertEquals(0, rc, "xaf " + String.join(" ", args));
            String text = out.toString();
            assertTrue(text.startsWith("Usage: xaf"), "xaf " + String.join(" ", args) + ":\n" + text);
            assertTrue(text.lines().count() > 2, text);
        }
    }

    @Test
    void everyOptionIsDescribedWithItsDefault() {
        List<String> problems = new ArrayList<>();
        for (CommandLine cl : allCommands()) {
            String cmd = "xaf " + String.join(" ", path(cl));
            if (cl.getCommandSpec().usageMessage().description().length == 0) problems.add(cmd + ": no description");
            for (OptionSpec o : cl.getCommandSpec().options()) {
                if (o.usageHelp() || o.versionHelp()) continue;
                String d = String.join(" ", o.description());
                if (d.isBlank()) problems.add(cmd + " " + o.longestName() + ": no description");
                else if (o.defaultValue() != null && !d.toLowerCase().contains("default"))
                    problems.add(cmd + " " + o.longestName() + ": default " + o.defaultValue() + " not stated");
            }
        }
        assertEquals(List.of(), problems);
    }
}
