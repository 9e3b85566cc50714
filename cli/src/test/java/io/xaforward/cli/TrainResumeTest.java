package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import io.xaforward.testbed.Netns;
import io.xaforward.training.Json;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
        List<String> all = new ArrayList<>(List.of("train", "--preset", "tiny", "--batch", "8", "--seed", "31",
                "--warmup", "2", "--eval-every", "3", "--checksum-every", "1", "--lr", "3e-3"));
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

        train("--steps", "6", "--resume", whole.resolve("checkpoints/step-000003.ckpt").toString(),
                "--out", resumed.toString());
        List<JsonObject> after = metrics(resumed);
        assertEquals(List.of(4L, 5L, 6L), after.stream().map(l -> l.get("step").getAsLong()).toList());
        for (int i = 0; i < 3; i++) {
            assertEquals(lines.get(3 + i).get("loss").getAsDouble(), after.get(i).get("loss").getAsDouble(), 0.0,
                    "loss of step " + (4 + i));
        }
        // The same windows at every evaluation: the resumed job's last validation figures are the whole job's.
        assertEquals(lines.get(5).get("val_loss"), after.get(2).get("val_loss"));
        assertEquals(lines.get(5).get("val_loss_se"), after.get(2).get("val_loss_se"));
        // Same weights, AdamW moments, update count and step: the files are identical byte for byte.
        assertEquals(-1L, Files.mismatch(whole.resolve("model.ckpt"), resumed.resolve("model.ckpt")));
    }
}
