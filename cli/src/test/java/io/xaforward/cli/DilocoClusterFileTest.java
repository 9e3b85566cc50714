package io.xaforward.cli;

import io.xaforward.cluster.WorkerLine;
import io.xaforward.gateway.GatewayMetrics;
import io.xaforward.testbed.Netns;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * DiLoCo with {@code xaf worker} as on real machines: the cluster file's training section says
 * {@code sync: diloco, sync-every: 2, outer-dtype: bf16}; four worker processes in two data centers, one XDP gateway process. Every
 * rank reports the same global checksum at every step and after the syncs of steps 2, 4 and 6 (and only then) an
 * outer sync with its bytes (2 bytes per parameter each way between the two data centers: bf16); all end with the same weights, and the outer syncs crossed the gateway.
 */
class DilocoClusterFileTest {
    static final int STEPS = 6;

    @Test
    void dilocoFromTheClusterFilesTrainingSection() throws Exception {
        String prefix;
        try (DeployFixture machines = new DeployFixture()) {
            prefix = machines.prefix;
            Path cluster = machines.writeClusterFile();
            Files.writeString(cluster, "training: {checksum-every: 1, sync: diloco, sync-every: 2, outer-dtype: bf16}\n",
                    java.nio.file.StandardOpenOption.APPEND);
            Path gatewayConfig = machines.writeGatewayConfig("127.0.0.1:9465");
            Path checkpoints = machines.dir.resolve("ckpt-diloco");
            try (GatewayProcess gateway = GatewayProcess.start(machines.gatewayNamespace(), gatewayConfig, List.of())) {
                gateway.awaitReady(60_000);
                List<DeployFixture.XafProcess> workers = new ArrayList<>();
                try {
                    machines.startClusterFileWorkers("diloco", cluster, STEPS, checkpoints, workers);
                    List<List<WorkerLine>> steps = new ArrayList<>();
                    String checksum = null;
                    for (int r = 0; r < 4; r++) {
                        DeployFixture.XafProcess w = workers.get(r);
                        machines.assertExitsCleanly("diloco", r, w);
                        steps.add(w.protocolLines("step"));
                        assertEquals(STEPS, steps.get(r).size(), w.output());
                        String done = w.protocolLines("done").get(0).get("checksum");
                        if (checksum == null) checksum = done;
                        assertEquals(checksum, done, "rank " + r + " ends with other weights");
                    }
                    for (int s = 0; s < STEPS; s++) {
                        boolean sync = (s + 1) % 2 == 0;
                        for (int r = 0; r < 4; r++) {
                            WorkerLine line = steps.get(r).get(s);
                            assertEquals(steps.get(0).get(s).get("checksum"), line.get("checksum"),
                                    "global checksum of rank " + r + " at step " + (s + 1));
                            assertTrue(line.values().containsKey("local_loss"), line.toString());
                            assertEquals(sync, line.values().containsKey("outer_applied"), "step " + (s + 1) + ": " + line);
                            if (sync) {
                                assertEquals(1, line.integer("outer_applied"));
                                long params = workers.get(r).protocolLines("start").get(0).integer("params");
                                assertEquals(2 * 2 * params, line.integer("outer_bytes"), line.toString());
                            }
                        }
                    }
                    assertFalse(steps.get(0).get(0).get("local_loss").equals(steps.get(2).get(0).get("local_loss")),
                            "the data centers train on different batches");
                } finally {
                    for (DeployFixture.XafProcess w : workers) w.close();
                }
                Map<String, Long> counters = GatewayMetrics.scrape(machines.gatewayNamespace(), "127.0.0.1", 9465);
                assertTrue(counters.getOrDefault("xaf_packets_total{forwarded}", 0L) > 10,
                        "outer syncs crossed the gateway: " + counters);
                gateway.stop();
            }
        }
        assertTrue(Netns.list().stream().noneMatch(n -> n.startsWith(prefix + "-")), "namespaces left behind");
    }
}
