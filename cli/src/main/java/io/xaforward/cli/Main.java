package io.xaforward.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.nio.file.Path;

/** Entry point of the {@code xaf} command line; each subcommand lives in its own class. */
@Command(name = "xaf",
        mixinStandardHelpOptions = true,
        version = "xaf 0.1.0",
        description = "XAForward: XDP gateways for data-parallel training across heterogeneous data centers.",
        footerHeading = "%nExample:%n",
        footer = {"  xaf demo", "  xaf COMMAND --help      (every command's options, defaults and an example)"},
        subcommands = {
                CommandLine.HelpCommand.class,
                GatewayCommand.class,
                TopoCommand.class,
                TrainCommand.class,
                WorkerCommand.class,
                AgentCommand.class,
                LaunchCommand.class,
                DemoCommand.class,
                BenchCommand.class,
                DataCommand.class,
                GenerateCommand.class,
                ExportCommand.class,
                ModelCommand.class,
        })
public final class Main {
    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    /** The configured command tree; tests run it in-process. */
    public static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new Main());
        cl.registerConverter(Path.class, UserPaths::resolve); // relative to the caller, not the install dir
        CommandLine.IParameterExceptionHandler usage = cl.getParameterExceptionHandler();
        cl.setParameterExceptionHandler((ex, args) -> {
            // A configuration word that names nothing is the one line its enum says, as any other bad input is;
            // other parse errors (an unknown option, a number that is not one) get picocli's message and usage help.
            Words.BadWord bad = Words.badWord(ex);
            if (bad == null) return usage.handleParseException(ex, args);
            ex.getCommandLine().getErr().println("xaf: " + bad.getMessage());
            return 1;
        });
        cl.setExecutionExceptionHandler((ex, cmd, parsed) -> {
            // Users get one clear line; XAF_DEBUG=1 shows the stack trace.
            cmd.getErr().println("xaf: " + UserPaths.describe(ex));
            if (System.getenv("XAF_DEBUG") != null) ex.printStackTrace(cmd.getErr());
            return 1;
        });
        return cl;
    }
}
