package io.xaforward.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * How {@code --python} command lines split (docs/PYTORCH.md, "Launch"): xaf train passes everything after {@code --}
 * to the script; xaf launch passes what follows the first {@code --} to the agents and what follows the second to
 * the script.
 */
class PythonLaunchOptionsTest {

    @Test
    void trainGivesTheScriptEverythingAfterTheSeparatorEvenOptionsTrainHasItself() {
        TrainCommand train = new TrainCommand();
        new CommandLine(train).parseArgs("--python", "t.py", "--steps", "7", "--", "--data", "d", "--steps", "20");
        assertEquals(Path.of("t.py"), train.python);
        assertEquals(List.of("--data", "d", "--steps", "20"), train.scriptArgs);
        assertEquals(7, train.loop.steps, "the option before -- is xaf train's own");
    }

    @Test
    void trainWithoutPythonRefusesScriptArguments() {
        TrainCommand train = new TrainCommand();
        new CommandLine(train).parseArgs("--", "--data", "d");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, train::call);
        assertTrue(e.getMessage().contains("--python"), e.getMessage());
    }

    @Test
    void launchKeepsTheSecondSeparatorBetweenAgentOptionsAndScriptArguments() {
        LaunchCommand launch = new LaunchCommand();
        new CommandLine(launch).parseArgs("--local-ranks", "0,1", "--python", "t.py", "--", "--job", "7", "--world", "4",
                "--", "--data", "d");
        assertEquals(List.of("--job", "7", "--world", "4", "--", "--data", "d"), launch.workerArgs);
    }

    @Test
    void launchRefusesRestartsWithAScriptBeforeStartingAnything() {
        LaunchCommand launch = new LaunchCommand();
        new CommandLine(launch).parseArgs("--local-ranks", "0", "--max-restarts", "1", "--python", "t.py", "--", "--world", "1");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, launch::call);
        assertTrue(e.getMessage().contains("--max-restarts"), e.getMessage());
    }
}
