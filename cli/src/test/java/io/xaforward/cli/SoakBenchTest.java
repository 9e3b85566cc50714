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
 * {@code xaf bench soak}, short (two to four minutes on the shared two-core machine, the fault-free reference
 * included): one rank's JVM, then the XDP gateway, then etcd are killed (SIGKILL) while the job trains through etcd
 * and a gateway that follows the registrations. The launcher restarts the rank from the newest checkpoint, the soak
 * restarts the gateway and etcd, the job trains past every fault, and every rank ends with the same weights; every
 * step recomputed after the restart gives the weights it gave the first time; every rank's records give each step
 * 1..N exactly once through its restarts; and the weights equal those of the same job trained without faults, at
 * the final step and at every step before (a lost or doubled contribution, which leaves the ranks agreeing with each
 * other, fails here). StepLedgerTest shows each of those checks failing on a history that is wrong.
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

        // Every rank's steps, not rank 0's only: 1..N each exactly once through the restarts, on every rank.
        JsonObject accounting = r.getAsJsonObject("accounting");
        assertTrue(accounting.get("complete").getAsBoolean(), accounting.toString());
        assertEquals(finalStep, accounting.get("steps_held_by_every_rank").getAsLong(), accounting.toString());
        assertEquals(4, accounting.getAsJsonArray("ranks").size());
        for (JsonElement e : accounting.getAsJsonArray("ranks")) {
            JsonObject k = e.getAsJsonObject();
            assertEquals(finalStep, k.get("steps_kept").getAsLong(), k.toString());
            assertTrue(k.get("runs").getAsInt() >= 2, "every rank restarted after the rank kill: " + k);
            assertEquals(k.get("step_records").getAsLong() - finalStep, k.get("recomputed").getAsLong(), k.toString());
        }
        // The fault-free run of the same seed reached the same weights, at the final step and at every step.
        JsonObject reference = r.getAsJsonObject("reference");
        assertTrue(reference.get("final_equal").getAsBoolean(), reference.toString());
        assertEquals(r.getAsJsonObject("final_checksums").get("0").getAsString(), reference.get("checksum").getAsString());
        assertEquals(finalStep, reference.get("steps_equal").getAsLong(), reference.toString());
        assertEquals(0, reference.getAsJsonArray("differences").size(), reference.toString());
        assertEquals(0, reference.get("rank_restarts").getAsInt(), "the reference ran without faults: " + reference);
        assertTrue(reference.getAsJsonObject("accounting").get("complete").getAsBoolean(), reference.toString());
        assertTrue(r.get("passed").getAsBoolean());
        assertTrue(md.contains("each exactly once on every rank") && md.contains("fault-free reference"), md);
        assertTrue(Files.size(out.resolve("soak.png")) > 1000);
        String prefix = r.get("testbed_prefix").getAsString();
        assertTrue(Netns.list().stream().noneMatch(n -> n.startsWith(prefix + "-")), "namespaces left behind");
    }
}
