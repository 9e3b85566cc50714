package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/** One set of defaults: every option that xaf train and xaf worker (and so xaf launch's workers) share has the same. */
class JobDefaultsTest {

    private static Map<String, String> defaults(String command) {
        CommandLine cl = Main.commandLine().getSubcommands().get(command);
        Map<String, String> d = new TreeMap<>();
        for (OptionSpec o : cl.getCommandSpec().options()) {
            if (o.usageHelp() || o.versionHelp()) continue;
            d.put(o.longestName(), String.valueOf(o.defaultValue()));
        }
        return d;
    }

    @Test
    void trainAndWorkerShareEveryDefault() {
        Map<String, String> train = defaults("train");
        Map<String, String> worker = defaults("worker");
        for (String option : List.of("--preset", "--steps", "--batch", "--seed", "--lr", "--warmup", "--algorithm",
                "--bucket-mb", "--checksum-every", "--threads", "--tokenizer", "--wire-security", "--checkpoint-every")) {
            assertTrue(train.containsKey(option) && worker.containsKey(option), option);
        }
        int shared = 0;
        for (var e : train.entrySet()) {
            if (!worker.containsKey(e.getKey())) continue;
            shared++;
            assertEquals(e.getValue(), worker.get(e.getKey()), "default of " + e.getKey() + " in xaf train and xaf worker");
        }
        assertTrue(shared >= 13, "shared options: " + shared);
        assertEquals("gpt2-tiny", worker.get("--preset"));
        assertEquals("25", worker.get("--checksum-every"));
    }
}
