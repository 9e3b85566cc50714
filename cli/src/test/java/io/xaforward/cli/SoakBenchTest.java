package io.xaforward.cli;

import io.xaforward.testbed.Netns;
import io.xaforward.common.Json;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code xaf bench soak}, short (80-155 s on the shared two-core machine): one rank's JVM, then the XDP gateway,
 * then etcd are killed (SIGKILL) while the job trains through etcd and a gateway that follows the registrations. The launcher
 * restarts the rank from the newest checkpoint, the soak restarts the gateway and etcd, the job trains past every
 * fault, and every rank ends with the same weights; every step recomputed after the restart gives the weights it
 * gave the first time.
 */
@Timeout(600)
class SoakBenchTest {

    @Test
    void aRankKillAndAGatewayKillLeaveIdenticalWeights() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Path out = Files.createTempDirectory("xaf-soak-test");
        int rc = new picocli.CommandLine(new BenchSoakCommand()).execute("--minutes", "1", "--schedule", "worker1@10,gateway@20,etcd@25",
                "--op-timeout", "10", "--out", out.toString());
        assertEquals(0, rc, "the soak failed or the weights differ");

        JsonObject r = Json.parse(Files.readString(out.resolve("soak.json"))).getAsJsonObject();
        assertTrue(r.get("identical").getAsBoolean(), r.toString());
        assertEquals(0, r.getAsJsonArray("mismatches").size(), r.toString());
        // A checksum after every step, so the steps recomputed after the restart were compared with their first run.
        assertTrue(r.get("checksummed_steps").getAsInt() >= r.get("final_step").getAsInt(), r.toString());
        assertTrue(r.get("steps_lost").getAsLong() >= 0, r.toString());
        JsonObject restarts = r.getAsJsonObject("restarts");
        assertTrue(restarts.get("rank restarts (by xaf launch)").getAsInt() >= 1, restarts.toString());
        assertEquals(1, restarts.get("gateway restarts (by the soak)").getAsInt(), restarts.toString());
        assertTrue(restarts.get("job runs (rank 0 starts)").getAsInt() >= 2, "the job restarted after the rank kill: " + restarts);
        long finalStep = r.get("final_step").getAsLong();
        assertEquals(3, r.getAsJsonArray("faults").size());
        assertEquals(1, restarts.get("etcd restarts (by the soak)").getAsInt(), restarts.toString());
        for (JsonElement e : r.getAsJsonArray("faults")) {
            JsonObject f = e.getAsJsonObject();
            assertFalse(f.get("training_past_fault_after").isJsonNull(), "the job trained past " + f);
            assertFalse(f.get("component_back_after").isJsonNull(), "the component came back: " + f);
            assertTrue(finalStep > f.get("step_at_fault").getAsLong(), f + " final step " + finalStep);
        }
        // The rank kill leaves the others resending to a dead peer, the gateway kill loses frames in flight.
        assertTrue(r.get("resent_bytes").getAsLong() > 0 && r.get("retransmits").getAsLong() > 0, r.toString());
        assertTrue(r.get("steps_computed").getAsLong() >= finalStep, r.toString());
        assertTrue(r.get("gateway_forwarded").getAsLong() > 0, r.toString());

        String md = Files.readString(out.resolve("soak.md"));
        assertTrue(md.contains("./xaf bench soak --minutes 1 --seed 1 --schedule worker1@10,gateway@20,etcd@25 --op-timeout 10"), md);
        assertTrue(md.contains("| worker1@10 |") && md.contains("| gateway@20 |") && md.contains("| etcd@25 |"), md);
        assertTrue(md.contains("identical on all ranks"), md);
        assertTrue(Files.size(out.resolve("soak.png")) > 1000);
        String prefix = r.get("testbed_prefix").getAsString();
        assertTrue(Netns.list().stream().noneMatch(n -> n.startsWith(prefix + "-")), "namespaces left behind");
    }
}
