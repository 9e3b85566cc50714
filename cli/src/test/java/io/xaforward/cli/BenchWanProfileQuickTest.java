package io.xaforward.cli;

import io.xaforward.common.Json;
import io.xaforward.testbed.Netns;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --wan-profile} of {@code xaf bench train} and {@code xaf bench allreduce}: a bad list fails before anything
 * is set up, naming the known profiles; {@code xaf bench train --quick --modes xdp --wan-profile lan,continental} runs
 * the cell over both WANs through the delay line, with the same losses, and reports each profile's table, the floor
 * columns and the plot of step time against round trip.
 */
@Timeout(300)
class BenchWanProfileQuickTest {
    @TempDir
    Path dir;

    @Test
    void badProfileListsFailBeforeAnythingRunsNamingTheKnownProfiles() {
        Path out = dir.resolve("never");
        EarlyErrorsTest.Result train = EarlyErrorsTest.xaf("bench", "train", "--wan-profile", "lan,moon", "--out", out.toString());
        assertNotEquals(0, train.rc());
        String line = train.oneLine();
        assertTrue(line.contains("unknown WAN profile 'moon'") && line.contains("lan, metro, continental"), line);
        EarlyErrorsTest.Result allreduce = EarlyErrorsTest.xaf("bench", "allreduce", "--wan-profile", "metro,metro", "--out", out.toString());
        assertNotEquals(0, allreduce.rc());
        assertTrue(allreduce.oneLine().contains("twice"), allreduce.err());
        EarlyErrorsTest.Result gatewayBound = EarlyErrorsTest.xaf("bench", "train", "--wan-profile", "metro", "--configs", "gateway-bound",
                "--out", out.toString());
        assertTrue(gatewayBound.oneLine().contains("comm-bound configuration only"), gatewayBound.err());
        assertFalse(Files.exists(out), "nothing was written");
    }

    @Test
    void quickRunOverTwoProfilesReportsEachAndPlotsStepTimeAgainstRoundTrip() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Path out = dir.resolve("out");
        int rc = new picocli.CommandLine(new BenchTrainCommand()).execute("--quick", "--modes", "xdp", "--wan-profile", "lan,continental",
                "--out", out.toString());
        assertEquals(0, rc);
        String md = Files.readString(out.resolve("train.md"));
        assertTrue(md.contains("## quick-lan") && md.contains("## quick-continental"), md);
        assertTrue(md.contains("| endpoint | gateway | step, ms | slowest step, ms | compute alone, ms | exposed communication, ms"), md);
        assertTrue(md.contains("## quick across WAN profiles") && md.contains("continental (50 ms round trip, 0.1% loss, 200mbit)"), md);

        JsonArray runs = Json.parse(Files.readString(out.resolve("train.json"))).getAsJsonArray();
        assertEquals(2, runs.size());
        Map<String, JsonObject> byProfile = new HashMap<>();
        for (var e : runs) byProfile.put(e.getAsJsonObject().get("wan_profile").getAsString(), e.getAsJsonObject());
        for (JsonObject r : byProfile.values()) {
            double compute = r.get("compute_alone_ms").getAsDouble(), floor = r.get("floor_ms").getAsDouble();
            assertTrue(compute > 0 && floor > compute, "the floor adds the WAN's time to compute: " + r);
            assertTrue(r.get("slowest_step_ms").getAsDouble() >= r.get("median_step_ms").getAsDouble(), r.toString());
            assertTrue(r.get("exposed_comm_ms").getAsDouble() >= 0, r.toString());
            assertTrue(r.get("retransmits").getAsLong() >= 0, r.toString());
        }
        for (JsonObject r : byProfile.values()) {
            JsonObject counters = r.getAsJsonObject("counters");
            assertTrue(counters.get("delay_line.to-dc.received").getAsLong() > 0, "every profile crosses the delay line: " + counters);
        }
        assertEquals(0, byProfile.get("lan").get("delay_line_lost").getAsDouble(), "lan asks for no loss");
        assertEquals(0.1, byProfile.get("lan").get("round_trip_ms").getAsDouble(), 1e-9);
        assertEquals(50, byProfile.get("continental").get("round_trip_ms").getAsDouble(), 1e-9);
        // delay and loss change when gradients arrive, never what is summed: the same losses step by step
        assertEquals(byProfile.get("lan").get("losses"), byProfile.get("continental").get("losses"));
        assertTrue(Files.size(out.resolve("train-quick-rtt.png")) > 1000);
    }
}
