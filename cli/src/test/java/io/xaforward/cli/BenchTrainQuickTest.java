package io.xaforward.cli;

import io.xaforward.testbed.Netns;
import io.xaforward.common.Json;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code xaf bench train --quick} produces the report: the table with a row per endpoint x gateway cell, the JSON
 * with figures in their possible ranges (a step takes time, shares are fractions, the WAN carried traffic at no
 * more than its rate, the placed gateway used CPU), and the plots.
 */
@Timeout(240)
class BenchTrainQuickTest {

    @Test
    void quickRunWritesTheAblationReport() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Path out = Files.createTempDirectory("xaf-bench-train-quick");
        int rc = new picocli.CommandLine(new BenchTrainCommand()).execute("--quick", "--out", out.toString());
        assertEquals(0, rc);

        String md = Files.readString(out.resolve("train.md"));
        assertTrue(md.contains("| endpoint | gateway | topology | time per step, ms | communication share | WAN utilisation"), md);
        assertTrue(md.contains("| udp | xdp | two-dc-wan |"), md);
        assertTrue(md.contains("| udp | direct | two-dc-wan |"), md);
        assertTrue(md.contains("never pass that port's qdisc"), "the report explains the earlier unfairness");

        JsonArray runs = Json.parse(Files.readString(out.resolve("train.json"))).getAsJsonArray();
        assertEquals(2, runs.size());
        Set<String> modes = new HashSet<>();
        for (var e : runs) {
            JsonObject r = e.getAsJsonObject();
            String mode = r.get("mode").getAsString();
            modes.add(mode);
            assertEquals("udp", r.get("endpoint").getAsString());
            assertTrue(r.get("median_step_ms").getAsDouble() > 0, r.toString());
            double share = r.get("comm_share").getAsDouble();
            assertTrue(share > 0 && share < 1, "communication share " + share);
            double utilisation = r.get("wan_utilisation").getAsDouble();
            assertTrue(utilisation > 0 && utilisation <= 1.05, "WAN utilisation " + utilisation);
            assertTrue(r.get("gateway_ns_per_packet").getAsDouble() > 0, "the placed gateway's CPU was measured: " + r);
            // The workers train on their core: it is busy for much of the window, and never more than all of it.
            double workers = r.get("workers_core_busy").getAsDouble(), gateway = r.get("gateway_core_busy").getAsDouble();
            assertTrue(workers > 0.3 && workers <= 1, "workers' core busy " + workers);
            assertTrue(gateway > 0 && gateway <= 1, "gateway's core busy " + gateway);
            assertTrue(r.get("drops").getAsLong() >= 0 && r.get("retransmits").getAsLong() >= 0);
            assertTrue(Double.isFinite(r.get("final_loss").getAsDouble()));
        }
        assertEquals(Set.of("xdp", "direct"), modes);
        for (String png : new String[]{"train-quick-step.png", "train-quick-loss.png"})
            assertTrue(Files.size(out.resolve(png)) > 1000, png);
    }
}
