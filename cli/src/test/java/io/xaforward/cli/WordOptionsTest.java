package io.xaforward.cli;

import io.xaforward.common.ConfigWord;
import io.xaforward.transport.WireSecurity;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every configuration word the CLI reads is read once, by the converter of its option ({@link Words}): each such
 * option is typed as its enum, a word that names nothing ends the command with the enum's own one line and exit
 * status 1, and what a run records writes the constants back as their words.
 */
class WordOptionsTest {

    private static List<CommandLine> commands(CommandLine cl, List<CommandLine> out) {
        out.add(cl);
        for (CommandLine sub : cl.getSubcommands().values()) if (!out.contains(sub)) commands(sub, out);
        return out;
    }

    @Test
    void everyOptionOfAConfigurationEnumHasItsWordConverter() {
        List<String> problems = new ArrayList<>();
        int typed = 0;
        for (CommandLine cl : commands(Main.commandLine(), new ArrayList<>())) {
            for (OptionSpec o : cl.getCommandSpec().options()) {
                boolean word = Stream.concat(Stream.of(o.type()), Stream.of(o.auxiliaryTypes()))
                        .anyMatch(ConfigWord.class::isAssignableFrom);
                if (!word) continue;
                typed++;
                boolean converted = Stream.of(o.converters()).anyMatch(c -> c instanceof Words.Word<?>);
                if (!converted) problems.add(cl.getCommandName() + " " + o.longestName() + " has no word converter");
            }
        }
        assertEquals(List.of(), problems);
        assertTrue(typed >= 20, "options typed as configuration enums: " + typed);
    }

    /** Runs xaf in-process; the exit status and the error output. */
    private static Map.Entry<Integer, String> xaf(String... args) {
        CommandLine cl = Main.commandLine();
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err, true));
        cl.setOut(new PrintWriter(new StringWriter(), true));
        int rc = cl.execute(args);
        return Map.entry(rc, err.toString());
    }

    @Test
    void aWordThatNamesNothingIsTheEnumsOneLine() {
        String security = "xaf: unknown wire security 'sealed'; expected one of crc32c, mac, encrypt";
        for (String command : List.of("worker", "agent", "train")) {
            assertEquals(Map.entry(1, security + System.lineSeparator()), xaf(command, "--wire-security", "sealed"), command);
        }
        assertEquals(Map.entry(1, "xaf: unknown network form 'ipv5'; expected one of ipv4, ipv6, id" + System.lineSeparator()),
                xaf("worker", "--form", "ipv5"));
        assertEquals(1, xaf("train", "--algorithm", "tree").getKey());
        assertTrue(xaf("train", "--algorithm", "tree").getValue().startsWith("xaf: unknown all-reduce algorithm 'tree'; expected one of "));
        assertEquals(Map.entry(1, "xaf: --overlap must be on or off, was 'sometimes'" + System.lineSeparator()),
                xaf("train", "--overlap", "sometimes"));
        assertTrue(xaf("gateway", "--attach", "glued").getValue().startsWith("xaf: unknown attach mode 'glued'"));
        assertTrue(xaf("bench", "train", "--modes", "xdp,warp").getValue().startsWith("xaf: unknown gateway mode 'warp'"));
        assertEquals(Map.entry(1, security + System.lineSeparator()), xaf("launch", "--local-ranks", "0", "--", "--job", "7",
                "--wire-security", "sealed", "--checkpoint-dir", "ckpt"), "xaf launch reads the workers' word as they will");

        // Other parse errors stay picocli's own: its message and the usage help, exit status 2.
        var steps = xaf("train", "--steps", "many");
        assertEquals(2, steps.getKey());
        assertTrue(steps.getValue().contains("Invalid value for option '--steps'") && steps.getValue().contains("Usage:"),
                steps.getValue());
    }

    @Test
    void theRecordedSettingsWriteTheWordsBack() {
        TrainCommand t = new TrainCommand();
        new CommandLine(t).parseArgs("--wire-security", " ENCRYPT", "--overlap", "off", "--gateway-mode", "Kernel-Tunnel",
                "--algorithm", "parameter-server", "--sync", "diloco", "--outer-dtype", "bf16");
        assertEquals(WireSecurity.ENCRYPT, t.wireSecurity);
        Map<String, String> recorded = RunSettings.options(RunSettings.json("xaf train", t));
        assertEquals("encrypt", recorded.get("--wire-security"));
        assertEquals("off", recorded.get("--overlap"));
        assertEquals("kernel-tunnel", recorded.get("--gateway-mode"));
        assertEquals("ps", recorded.get("--algorithm"));
        assertEquals("diloco", recorded.get("--sync"));
        assertEquals("bf16", recorded.get("--outer-dtype"));
        assertEquals("fp32", recorded.get("--wire-dtype"), "a default, as its word");
        assertEquals(null, recorded.get("--endpoint"), "not given and no default");
    }
}
