package io.xaforward.cli;

import io.xaforward.cluster.WorkerLine;
import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.cluster.world.World;
import io.xaforward.gateway.GatewayMetrics;
import io.xaforward.testbed.Netns;
import io.xaforward.transport.JobSecret;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A 2 DC x 2 worker job deployed as on real machines: one {@code xaf worker} process per host namespace and one
 * {@code xaf gateway} process in the gateway namespace, sharing nothing but the cluster file and the gateway
 * config. Every rank finishes with the same weights, and the gradients crossed the XDP gateway. Then the same job
 * under {@code xaf launch --max-restarts 1}, one launcher per host, with one worker killed (SIGKILL) mid-run: the
 * job restarts from its checkpoints and ends with the weights of the uninterrupted run. Every worker authenticates
 * its datagrams with the job secret (mac, the default); a worker given another secret fails naming the
 * authentication failures instead of waiting forever.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterFileJobTest {
    static final int STEPS = 6;
    static DeployFixture machines;
    /** The final weight checksum of the uninterrupted run. */
    static String uninterrupted;

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
    @Order(1)
    void twoDatacentersTimesTwoWorkersThroughAnXdpGatewayFromTheClusterFile() throws Exception {
        Path cluster = machines.writeClusterFile();
        // The job's settings once, in the cluster file, for every rank.
        Files.writeString(cluster, "training: {checksum-every: 2}\n", java.nio.file.StandardOpenOption.APPEND);
        Path gatewayConfig = machines.writeGatewayConfig("127.0.0.1:9464");
        Path checkpoints = machines.dir.resolve("ckpt-file");
        try (GatewayProcess gateway = GatewayProcess.start(machines.gatewayNamespace(), gatewayConfig, List.of())) {
            gateway.awaitReady(60_000);
            List<DeployFixture.XafProcess> workers = new ArrayList<>();
            try {
                machines.startClusterFileWorkers("file", cluster, STEPS, checkpoints, workers);
                String checksum = null;
                for (int r = 0; r < 4; r++) {
                    DeployFixture.XafProcess w = workers.get(r);
                    machines.assertExitsCleanly("file", r, w);
                    List<WorkerLine> done = w.protocolLines("done");
                    assertEquals(1, done.size(), w.output());
                    assertEquals(STEPS, w.protocolLines("step").size(), w.output());
                    assertTrue(w.protocolLines("step").get(1).values().containsKey("checksum"),
                            "checksum-every 2 from the cluster file's training section: " + w.output());
                    if (checksum == null) checksum = done.get(0).get("checksum");
                    assertEquals(checksum, done.get(0).get("checksum"), "rank " + r + " ends with other weights");
                }
                uninterrupted = checksum;
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

    @Test
    @Order(2)
    void aWorkerKilledMidRunRestartsFromCheckpointsAndEndsWithTheUninterruptedWeights() throws Exception {
        assertNotNull(uninterrupted, "needs the uninterrupted run of the first test");
        Path cluster = machines.writeClusterFile();
        Path gatewayConfig = machines.writeGatewayConfig("off");
        Path checkpoints = machines.dir.resolve("ckpt-restart");
        int victim = 2;
        try (GatewayProcess gateway = GatewayProcess.start(machines.gatewayNamespace(), gatewayConfig, List.of())) {
            gateway.awaitReady(60_000);
            List<DeployFixture.XafProcess> launchers = new ArrayList<>();
            try {
                for (int r = 0; r < 4; r++) {
                    List<String> worker = machines.workerArgs(r, STEPS, checkpoints);
                    int at = worker.indexOf("--rank");
                    worker.subList(at, at + 2).clear();
                    // Long enough for the first all-reduces of a loaded 2-core machine (JIT warm-up), short enough to fail fast.
                    worker.set(worker.indexOf("--op-timeout") + 1, "20");
                    List<String> args = new ArrayList<>(List.of("launch", "--local-ranks", Integer.toString(r),
                            "--max-restarts", "1", "--restart-delay", "25", "--"));
                    args.addAll(worker);
                    args.addAll(List.of("--cluster", cluster.toString(), "--checkpoint-every", "2"));
                    launchers.add(new DeployFixture.XafProcess(machines.plan.host(r).namespace(), args,
                            machines.dir.resolve("launch-" + r + ".log")));
                }
                // Kill the victim's worker once it is past the checkpoint of step 2.
                DeployFixture.XafProcess v = launchers.get(victim);
                long deadline = System.currentTimeMillis() + 120_000;
                while (v.protocolLines("step").stream().noneMatch(l -> l.integer("step") == 3) && System.currentTimeMillis() < deadline) {
                    Thread.sleep(20);
                }
                assertEquals(1, v.protocolLines("launched").size(), "the job failed before the kill:\n" + v.output()
                        + "\nlog:\n" + DeployFixture.log(machines.dir.resolve("launch-" + victim + ".log")));
                long pid = v.protocolLines("launched").get(0).integer("pid");
                assertEquals(0, new ProcessBuilder("kill", "-9", Long.toString(pid)).start().waitFor(), v.output());

                java.util.Set<String> firstRuns = new java.util.HashSet<>(), secondRuns = new java.util.HashSet<>();
                for (int r = 0; r < 4; r++) {
                    DeployFixture.XafProcess l = launchers.get(r);
                    int rc = l.await(240);
                    assertEquals(0, rc, "launcher of rank " + r + ":\n" + l.output() + "\nlog:\n"
                            + DeployFixture.log(machines.dir.resolve("launch-" + r + ".log")));
                    List<WorkerLine> launched = l.protocolLines("launched");
                    assertEquals(2, launched.size(), "one restart: " + l.output());
                    assertEquals("true", launched.get(1).get("resume"));
                    List<WorkerLine> starts = l.protocolLines("start");
                    long from = starts.get(starts.size() - 1).integer("from_step");
                    assertEquals(2, starts.size(), l.output());
                    firstRuns.add(starts.get(0).get("run"));
                    secondRuns.add(starts.get(1).get("run"));
                    assertTrue(from >= 2 && from < STEPS, "resumed from checkpoint step " + from);
                    List<WorkerLine> done = l.protocolLines("done");
                    assertEquals(1, done.size(), l.output());
                    assertEquals(uninterrupted, done.get(0).get("checksum"),
                            "rank " + r + " after the restart ends with other weights than the uninterrupted run");
                }
                // Every rank of a run holds one run nonce (its wire keys), and the restarted job is a new run.
                assertEquals(1, firstRuns.size(), "run nonces of the first run: " + firstRuns);
                assertEquals(1, secondRuns.size(), "run nonces after the restart: " + secondRuns);
                assertNotEquals(firstRuns, secondRuns, "the restart re-keyed every rank");
                // Each rank keeps its own checkpoints, named as docs/DATA.md ("Checkpoint files") says.
                for (int r = 0; r < 4; r++) {
                    Path own = checkpoints.resolve("rank" + r);
                    for (int step = 2; step <= STEPS; step += 2) {
                        Path file = own.resolve(String.format("step-%06d-rank%d.ckpt", step, r));
                        assertTrue(Files.isRegularFile(file), file + " missing");
                    }
                    assertTrue(Files.isRegularFile(own.resolve("model-rank" + r + ".ckpt")), "rank " + r + "'s final checkpoint");
                }
            } finally {
                for (DeployFixture.XafProcess l : launchers) l.close();
            }
        }
    }

    /**
     * A checkpoint directory written by an earlier version (ckpt-rankR-stepNNNNNN.bin) still resumes: the restart
     * test's files, step 4 renamed to the old name and step 6 and the final ones removed, give a job that starts from
     * step 4 and ends with the uninterrupted weights.
     */
    @Test
    @Order(4)
    void aJobResumesFromCheckpointsNamedByAnEarlierVersion() throws Exception {
        assertNotNull(uninterrupted, "needs the uninterrupted run of the first test");
        Path checkpoints = machines.dir.resolve("ckpt-restart");
        for (int r = 0; r < 4; r++) {
            Path own = checkpoints.resolve("rank" + r);
            assertTrue(Files.isRegularFile(own.resolve(String.format("step-000004-rank%d.ckpt", r))),
                    "needs the checkpoints of the restart test: " + own);
            Files.move(own.resolve(String.format("step-000004-rank%d.ckpt", r)),
                    own.resolve(String.format("ckpt-rank%d-step000004.bin", r)));
            Files.delete(own.resolve(String.format("step-000006-rank%d.ckpt", r)));
            Files.delete(own.resolve("model-rank" + r + ".ckpt"));
        }
        Path cluster = machines.writeClusterFile();
        Path gatewayConfig = machines.writeGatewayConfig("off");
        try (GatewayProcess gateway = GatewayProcess.start(machines.gatewayNamespace(), gatewayConfig, List.of())) {
            gateway.awaitReady(60_000);
            List<DeployFixture.XafProcess> workers = new ArrayList<>();
            try {
                machines.startClusterFileWorkers("old-names", cluster, STEPS, checkpoints, workers,
                        "--checkpoint-every", "2", "--resume");
                for (int r = 0; r < 4; r++) {
                    DeployFixture.XafProcess w = workers.get(r);
                    machines.assertExitsCleanly("old-names", r, w);
                    assertEquals(4, w.protocolLines("start").get(0).integer("from_step"), w.output());
                    assertEquals(uninterrupted, w.protocolLines("done").get(0).get("checksum"),
                            "rank " + r + " resumed from the old names ends with other weights");
                    Path own = checkpoints.resolve("rank" + r);
                    assertTrue(Files.isRegularFile(own.resolve(String.format("step-000006-rank%d.ckpt", r))),
                            "new checkpoints under the new name");
                }
            } finally {
                for (DeployFixture.XafProcess w : workers) w.close();
            }
        }
    }

    @Test
    @Order(3)
    void aWorkerWithAnotherSecretFailsNamingTheAuthenticationFailures() throws Exception {
        World all = machines.world();
        assertEquals(all.rank(0).datacenter(), all.rank(1).datacenter(), "ranks 0 and 1 share a data center");
        Path pair = machines.dir.resolve("pair.yaml");
        Files.writeString(pair, ClusterFile.render(new World(all.jobId(), all.ranks().subList(0, 2), all.gateways())));
        Path otherSecret = machines.dir.resolve("other.secret");
        JobSecret.generate().writeTo(otherSecret);
        List<DeployFixture.XafProcess> workers = new ArrayList<>();
        try {
            for (int r = 0; r < 2; r++) {
                List<String> args = new ArrayList<>(List.of("worker"));
                args.addAll(machines.workerArgs(r, 2, machines.dir.resolve("ckpt-secret")));
                args.set(args.indexOf("--world") + 1, "2");
                args.set(args.indexOf("--start-timeout") + 1, "5");
                if (r == 1) args.set(args.indexOf("--secret-file") + 1, otherSecret.toString());
                args.addAll(List.of("--cluster", pair.toString()));
                workers.add(new DeployFixture.XafProcess(machines.plan.host(r).namespace(), args,
                        machines.dir.resolve("secret-worker-" + r + ".log")));
            }
            for (int r = 0; r < 2; r++) {
                int rc = workers.get(r).await(90);
                String log = DeployFixture.log(machines.dir.resolve("secret-worker-" + r + ".log"));
                assertEquals(1, rc, "rank " + r + " fails (-1: it hung):\n" + log);
                assertTrue(log.contains("datagrams failed authentication"), log);
                assertTrue(log.contains("--secret-file"), "the error names the option: " + log);
                assertTrue(workers.get(r).protocolLines("start").isEmpty(), "no training started:\n" + workers.get(r).output());
            }
        } finally {
            for (DeployFixture.XafProcess w : workers) w.close();
        }
    }
}
