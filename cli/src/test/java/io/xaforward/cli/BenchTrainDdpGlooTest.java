package io.xaforward.cli;

import io.xaforward.testbed.Netns;
import io.xaforward.common.Json;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code xaf bench train --quick --modes xdp --peers xaf,ddp-gloo}: PyTorch DDP over Gloo trains across the emulated
 * data centers through the kernel (two IPv4 DCs, TCP let through the gateway's edge firewall) and through the kernel
 * tunnel (IPv4 over VXLAN to an IPv6 DC), its rows stand beside XAF's with the "vs ddp-gloo" columns, and, from
 * XAF's initial weights on XAF's windows, its loss curve is XAF's.
 */
@Timeout(900)
class BenchTrainDdpGlooTest {

    @Test
    void ddpOverGlooRunsBesideXafOverBothKernelPaths() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Path out = Files.createTempDirectory("xaf-bench-train-ddp");
        int rc = new picocli.CommandLine(new BenchTrainCommand()).execute("--quick", "--modes", "xdp",
                "--peers", "xaf,ddp-gloo", "--out", out.toString());
        assertEquals(0, rc);

        String md = Files.readString(out.resolve("train.md"));
        assertTrue(md.contains("| vs xdp | vs ddp-gloo kernel | vs ddp-gloo kernel-tunnel |"), md);
        assertTrue(md.contains("| ddp-gloo | kernel | two-dc-ipv4-wan |"), md);
        assertTrue(md.contains("| ddp-gloo | kernel-tunnel | two-dc-wan |"), md);
        assertTrue(md.matches("(?s).*\\| udp \\| xdp \\| two-dc-wan \\|[^\\n]*\\| [+-]\\d+\\.\\d% \\| [+-]\\d+\\.\\d% \\|\\n.*"),
                "the xdp row is compared with both DDP rows: " + md);

        JsonArray runs = Json.parse(Files.readString(out.resolve("train.json"))).getAsJsonArray();
        Map<String, JsonObject> byCell = new HashMap<>();
        for (JsonElement e : runs) {
            JsonObject r = e.getAsJsonObject();
            byCell.put(r.get("peer").getAsString() + "/" + r.get("mode").getAsString(), r);
        }
        assertEquals(3, runs.size(), "no job failed: " + md);
        JsonObject xaf = byCell.get("xaf/xdp");
        assertNotNull(xaf);
        for (String cell : List.of("ddp-gloo/kernel", "ddp-gloo/kernel-tunnel")) {
            JsonObject ddp = byCell.get(cell);
            assertNotNull(ddp, cell);
            assertEquals("ddp-gloo", ddp.get("endpoint").getAsString());
            assertTrue(ddp.get("median_step_ms").getAsDouble() > 0, ddp.toString());
            double utilisation = ddp.get("wan_utilisation").getAsDouble();
            assertTrue(utilisation > 0 && utilisation <= 1.05, cell + ": DDP's traffic crossed the WAN: " + utilisation);
            JsonArray x = xaf.getAsJsonArray("losses"), d = ddp.getAsJsonArray("losses");
            assertEquals(x.size(), d.size());
            // Same weights and windows; only the order of the gradient sums differs (XAF's hierarchical all-reduce,
            // Gloo's ring), so the curves agree up to float rounding.
            for (int s = 0; s < x.size(); s++) {
                assertEquals(x.get(s).getAsDouble(), d.get(s).getAsDouble(), 1e-3, cell + " step " + (s + 1));
            }
        }
    }
}
