package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import io.xaforward.testbed.Netns;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.common.Json;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code xaf train} across two emulated data centers: its outputs (one metrics line per step, loss plot, final
 * checkpoint, periodic checkpoints, work directory removed), and a job resumed from a mid-run checkpoint ends with
 * exactly the weights and optimizer state of the uninterrupted job.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class TrainResumeTest {

    private static String train(String... args) {
        List<String> all = new ArrayList<>(List.of("--preset", "tiny", "--batch", "8", "--seed", "31",
                "--warmup", "2", "--eval-every", "3", "--checksum-every", "1", "--lr", "3e-3"));
        all.addAll(List.of(args));
        return xafTrain(all.toArray(String[]::new));
    }

    /** {@code xaf train ARGS} in this JVM; its output. */
    private static String xafTrain(String... args) {
        List<String> all = new ArrayList<>(List.of("train"));
        all.addAll(List.of(args));
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream old = System.out;
        int rc;
        try {
            System.setOut(new PrintStream(buf, true));
            rc = Main.commandLine().execute(all.toArray(String[]::new));
        } finally {
            System.setOut(old);
        }
        String out = buf.toString();
        System.out.println(out);
        assertEquals(0, rc, out);
        return out;
    }

    private static List<JsonObject> metrics(Path dir) throws Exception {
        return Files.readAllLines(dir.resolve("metrics.jsonl")).stream().map(l -> Json.parse(l).getAsJsonObject()).toList();
    }

    @Test
    void resumedJobEqualsUninterruptedJob(@TempDir Path dir) throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Path whole = dir.resolve("whole");
        Path resumed = dir.resolve("resumed");

        String out = train("--steps", "6", "--checkpoint-every", "3", "--out", whole.toString());
        Matcher removed = Pattern.compile("removed the work directory (\\S+)").matcher(out);
        assertTrue(removed.find(), out);
        assertFalse(Files.exists(Path.of(removed.group(1))), "work directory left behind");
        List<JsonObject> lines = metrics(whole);
        assertEquals(6, lines.size());
        for (int i = 0; i < 6; i++) {
            JsonObject l = lines.get(i);
            assertEquals(i + 1, l.get("step").getAsLong());
            assertTrue(l.get("loss").getAsDouble() > 0 && l.get("wire_bytes").getAsLong() > 0, l.toString());
            assertEquals((i + 1) % 3 == 0, !l.get("val_loss").isJsonNull(), l.toString());
            assertEquals((i + 1) % 3 == 0, !l.get("val_loss_se").isJsonNull(), l.toString());
            assertEquals((i + 1) % 3 == 0, !l.get("val_windows").isJsonNull(), l.toString());
            assertTrue(l.has("lr") && l.has("retransmits") && l.has("gateway_drops") && l.has("comm_ms"), l.toString());
        }
        assertTrue(Files.size(whole.resolve("loss.png")) > 1000);
        assertTrue(Files.exists(whole.resolve("checkpoints/step-000003.ckpt")));
        assertTrue(Files.exists(whole.resolve("checkpoints/step-000006.ckpt")));

        // config.json: every option, defaults included, beside metrics.jsonl and inside every checkpoint
        Map<String, String> settings = RunSettings.options(Files.readString(whole.resolve("config.json")));
        assertEquals("6", settings.get("--steps"));
        assertEquals("tiny", settings.get("--preset"));
        assertEquals("0.003", settings.get("--lr"));
        assertEquals("xdp", settings.get("--gateway-mode"), "a default, recorded too");
        assertEquals("hierarchical", settings.get("--algorithm"));
        assertTrue(settings.containsKey("--data") && settings.get("--resume") == null, settings.toString());
        assertEquals(Files.readString(whole.resolve("config.json")), DataParallelTrainer.checkpointSettings(whole.resolve("model.ckpt")));
        assertEquals(Files.readString(whole.resolve("config.json")),
                DataParallelTrainer.checkpointSettings(whole.resolve("checkpoints/step-000003.ckpt")));

        // --resume alone: every other option comes from the checkpoint's settings
        Path from = whole.resolve("checkpoints/step-000003.ckpt");
        String resumedOut = xafTrain("--resume", from.toString(), "--out", resumed.toString());
        assertTrue(resumedOut.contains("xaf: settings of the resumed run from " + from + ": "), resumedOut);
        assertTrue(resumedOut.contains("--steps 6") && resumedOut.contains("--preset tiny") && resumedOut.contains("--seed 31"), resumedOut);
        Map<String, String> again = new java.util.TreeMap<>(RunSettings.options(Files.readString(resumed.resolve("config.json"))));
        assertEquals(from.toString(), again.remove("--resume"));
        assertEquals(resumed.toString(), again.remove("--out"));
        Map<String, String> before = new java.util.TreeMap<>(settings);
        before.remove("--resume");
        before.remove("--out");
        assertEquals(before, again, "the resumed run ran with the recorded settings");
        List<JsonObject> after = metrics(resumed);
        assertEquals(List.of(4L, 5L, 6L), after.stream().map(l -> l.get("step").getAsLong()).toList());
        for (int i = 0; i < 3; i++) {
            assertEquals(lines.get(3 + i).get("loss").getAsDouble(), after.get(i).get("loss").getAsDouble(), 0.0,
                    "loss of step " + (4 + i));
        }
        // The same windows at every evaluation: the resumed job's last validation figures are the whole job's.
        assertEquals(lines.get(5).get("val_loss"), after.get(2).get("val_loss"));
        assertEquals(lines.get(5).get("val_loss_se"), after.get(2).get("val_loss_se"));
        // Same weights, AdamW moments, update count and step: the files are identical byte for byte but for the
        // settings (the resumed run's --resume and --out) and the CRC that covers them.
        assertArrayEquals(withoutSettings(whole.resolve("model.ckpt")), withoutSettings(resumed.resolve("model.ckpt")));
    }

    /** A checkpoint's bytes with its settings block and CRC left out (header layout: CheckpointFile). */
    static byte[] withoutSettings(Path checkpoint) throws Exception {
        byte[] b = Files.readAllBytes(checkpoint);
        java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(b);
        int presetLength = buf.getShort(8 + 1) & 0xffff;
        int at = 8 + 1 + 2 + presetLength + 3 * 8;
        int n = buf.getInt(at);
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        out.write(b, 0, at);
        out.write(b, at + 4 + n, b.length - 8 - (at + 4 + n));
        return out.toByteArray();
    }
}
