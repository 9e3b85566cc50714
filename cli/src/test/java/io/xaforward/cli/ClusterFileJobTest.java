package io.xaforward.cli;

import io.xaforward.cluster.WorkerLine;
import io.xaforward.gateway.GatewayMetrics;
import io.xaforward.testbed.Netns;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A 2 DC x 2 worker job deployed as on real machines: one {@code xaf worker} process per host namespace and one
 * {@code xaf gateway} process in the gateway namespace, sharing nothing but the cluster file and the gateway
 * config. Every rank finishes with the same weights, and the gradients crossed the XDP gateway.
 */
class ClusterFileJobTest {
    static DeployFixture machines;

    @BeforeAll
    static void up() throws Exception {
        machines = new DeployFixture();
    }

    @AfterAll
    static void down() {
        if (machines != null) machines.close();
        assertTrue(machines == null || Netns.list().stream().noneMatch(n -> n.startsWith(machines.prefix + "-")),
                "namespaces left behind");
    }

    @Test
    void twoDatacentersTimesTwoWorkersThroughAnXdpGatewayFromTheClusterFile() throws Exception {
        Path cluster = machines.writeClusterFile();
        Path gatewayConfig = machines.writeGatewayConfig("127.0.0.1:9464");
        Path checkpoints = machines.dir.resolve("ckpt-file");
        try (GatewayProcess gateway = GatewayProcess.start(machines.gatewayNamespace(), gatewayConfig, List.of())) {
            gateway.awaitReady(60_000);
            List<DeployFixture.XafProcess> workers = new ArrayList<>();
            try {
                for (int r = 0; r < 4; r++) {
                    List<String> args = new ArrayList<>(List.of("worker"));
                    args.addAll(machines.workerArgs(r, 4, checkpoints));
                    args.addAll(List.of("--cluster", cluster.toString(), "--checksum-every", "2"));
                    workers.add(new DeployFixture.XafProcess(machines.plan.host(r).namespace(), args,
                            machines.dir.resolve("file-worker-" + r + ".log")));
                }
                String checksum = null;
                for (int r = 0; r < 4; r++) {
                    DeployFixture.XafProcess w = workers.get(r);
                    int rc = w.await(180);
                    assertEquals(0, rc, "rank " + r + " exit status; output:\n" + w.output() + "\nlog:\n"
                            + DeployFixture.log(machines.dir.resolve("file-worker-" + r + ".log")));
                    List<WorkerLine> done = w.protocolLines("done");
                    assertEquals(1, done.size(), w.output());
                    assertEquals(4, w.protocolLines("step").size(), w.output());
                    if (checksum == null) checksum = done.get(0).get("checksum");
                    assertEquals(checksum, done.get(0).get("checksum"), "rank " + r + " ends with other weights");
                }
            } finally {
                for (DeployFixture.XafProcess w : workers) w.close();
            }
            Map<String, Long> counters = GatewayMetrics.scrape(machines.gatewayNamespace(), "127.0.0.1", 9464);
            assertTrue(counters.getOrDefault("xaf_packets_total{forwarded}", 0L) > 100,
                    "gradients crossed the gateway: " + counters);
            assertEquals(0L, counters.getOrDefault("xaf_packets_total{drop_no_route}", 0L), counters.toString());
            gateway.stop();
            assertTrue(gateway.sawLine("detached from"), gateway.output());
        }
    }
}
