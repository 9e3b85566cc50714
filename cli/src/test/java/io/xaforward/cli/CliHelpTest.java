package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

    /** Whether an option has a default that its description must state: a declared one, or a non-empty initial value. */
    private static boolean hasDefault(OptionSpec o) {
        if (o.defaultValue() != null) return true;
        if (o.arity().max() == 0 || o.required()) return false; // a flag is off unless given; a required option has none
        Object v = o.initialValue();
        return v != null && !(v instanceof java.util.Collection<?> c && c.isEmpty());
    }

    /**
     * One help style (docs: issue 20): named placeholders (FILE, N, URL, ...), never picocli's {@code <javaField>};
     * every default written "(default: X)" and no other way; descriptions made of whole sentences, so the one-line
     * summary a parent command lists is never cut off mid-sentence; an example on every command.
     */
    @Test
    void everyHelpPageHasOneStyle() {
        List<String> problems = new ArrayList<>();
        java.util.regex.Pattern label = java.util.regex.Pattern.compile("[A-Z][A-Z0-9_]*([|.,=-][A-Za-z0-9_.]+)*(\\.\\.\\.)?|[a-z0-9]+(\\|[a-z0-9]+)+");
        for (CommandLine cl : allCommands()) {
            if (cl.getCommandName().equals("help")) continue;
            String cmd = "xaf " + String.join(" ", path(cl));
            String[] desc = cl.getCommandSpec().usageMessage().description();
            for (String d : desc) {
                if (!d.isEmpty() && !d.strip().matches("(?s).*[.:]$")) problems.add(cmd + ": description line not a whole sentence: '" + d + "'");
            }
            String usage = cl.getUsageMessage(CommandLine.Help.Ansi.OFF);
            if (!usage.contains("\nExample")) problems.add(cmd + ": no example");
            else if (!usage.substring(usage.indexOf("\nExample")).contains(cmd)) problems.add(cmd + ": the example does not run " + cmd);
            for (String f : cl.getCommandSpec().usageMessage().footer()) {
                if (f.length() > 79) problems.add(cmd + ": example line longer than the help's width (it would wrap mid-word): " + f);
            }
            if (usage.contains("<")) problems.add(cmd + ": a <placeholder> in the help:\n" + usage);
            for (OptionSpec o : cl.getCommandSpec().options()) {
                if (o.usageHelp() || o.versionHelp()) continue;
                String name = cmd + " " + o.longestName();
                if (o.arity().max() > 0 && !label.matcher(o.paramLabel()).matches()) problems.add(name + ": placeholder " + o.paramLabel());
                if (o.description().length > 1) problems.add(name + ": description in " + o.description().length + " pieces (lines break mid-sentence)");
                String d = String.join(" ", o.description());
                int mentions = d.split("(?i)default", -1).length - 1;
                int styled = d.split("\\(default: ", -1).length - 1;
                if (mentions != styled) problems.add(name + ": a default not written '(default: X)': " + d);
                if (hasDefault(o) && styled == 0) problems.add(name + ": default " + o.initialValue() + " not stated as '(default: X)'");
            }
            for (CommandLine.Model.PositionalParamSpec p : cl.getCommandSpec().positionalParameters()) {
                if (!label.matcher(p.paramLabel()).matches() && !p.paramLabel().startsWith("[")) problems.add(cmd + ": positional placeholder " + p.paramLabel());
            }
        }
        assertEquals("", String.join("\n", problems));
    }

    /** README's list of the system packages that ./xaf installs is the launcher's list. */
    @Test
    void readmeListsEveryPackageTheLauncherInstalls() throws Exception {
        String launcher = java.nio.file.Files.readString(java.nio.file.Path.of("..", "xaf"));
        String readme = java.nio.file.Files.readString(java.nio.file.Path.of("..", "README.md"));
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("need\\+=\\(([^)]*)\\)").matcher(launcher);
        int packages = 0;
        while (m.find()) {
            for (String pkg : m.group(1).trim().split("\\s+")) {
                packages++;
                assertTrue(readme.contains(pkg + ",") || readme.contains(pkg + ";") || readme.contains(pkg + ")") || readme.contains(pkg + " "),
                        "README does not name the package " + pkg);
            }
        }
        assertTrue(packages >= 12, "packages found in ./xaf: " + packages);
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

    /** A benchmark without --out writes into a new directory under the working directory, never into docs/bench. */
    @Test
    void benchmarksDefaultToANewDirectoryUnderTheWorkingDirectory() {
        java.nio.file.Path d = BenchCommand.outputDirectory(null, "forward");
        assertEquals(UserPaths.workingDirectory().resolve("xaf-bench"), d.getParent());
        assertTrue(d.getFileName().toString().matches("forward-\\d{8}-\\d{6}"), d.toString());
        assertEquals(java.nio.file.Path.of("/tmp/x"), BenchCommand.outputDirectory(java.nio.file.Path.of("/tmp/x"), "forward"));
        for (CommandLine cl : allCommands()) {
            for (OptionSpec o : cl.getCommandSpec().options()) {
                if (o.longestName().equals("--out")) assertFalse(String.valueOf(o.defaultValue()).contains("docs"), path(cl) + " --out " + o.defaultValue());
            }
        }
    }

    /** The topology is --topology FILE everywhere; topo keeps the file as its one argument too, and says when both differ. */
    @Test
    void topoTakesTheTopologyAsAnOptionOrItsArgument() {
        for (String sub : List.of("up", "down", "show")) {
            CommandLine cl = Main.commandLine();
            StringWriter err = new StringWriter();
            cl.setErr(new PrintWriter(err));
            assertEquals(1, cl.execute("topo", sub, "--topology", "a.yaml", "b.yaml"));
            assertTrue(err.toString().contains("xaf: two topologies given:"), err.toString());
            err.getBuffer().setLength(0);
            assertEquals(1, cl.execute("topo", sub));
            assertTrue(err.toString().contains("xaf: missing the topology: --topology FILE"), err.toString());
            err.getBuffer().setLength(0);
            assertEquals(1, cl.execute("topo", sub, "--topology", "no-such-topology.yaml"));
            assertTrue(err.toString().contains("no-such-topology.yaml"), err.toString());
        }
    }
}
