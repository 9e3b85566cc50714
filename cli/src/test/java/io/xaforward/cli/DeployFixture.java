package io.xaforward.cli;

import io.xaforward.cluster.WorkerLine;
import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.cluster.world.NextHop;
import io.xaforward.cluster.world.RankAddress;
import io.xaforward.cluster.world.World;
import io.xaforward.testbed.GatewaySpec;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.Testbed;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.plan.IdentifierPlan;
import io.xaforward.training.SyntheticCorpus;
import io.xaforward.transport.JobSecret;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * "Machines" for the deployment tests: the two-dc topology (IPv4 DC a, IPv6 DC b, two hosts each, one gateway
 * namespace) brought up by the testbed. The test itself reads the testbed to write a cluster file and a gateway
 * config, as an operator would; the worker and gateway processes it starts see nothing but those files (or etcd).
 */
final class DeployFixture implements AutoCloseable {
    static final int JOB = 9;
    static final int TOKEN = 0x5eed0909;
    static final List<String> WORKER_JVM = List.of("-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dai.djl.pytorch.num_threads=1", "-Dai.djl.offline=true");

    final String prefix = "d" + Integer.toHexString(new Random().nextInt(0x1000, 0x10000));
    final Path dir;
    final Testbed testbed;
    final Topology topology;
    final TestbedState state;
    final IdentifierPlan plan;
    final Path corpus;
    /** The job secret every worker is given, as an operator copies one file to every host. */
    final Path secret;

    DeployFixture() throws Exception {
        assertTrue(Netns.isRoot(), "deployment tests need root (network namespaces, XDP); CI runs as root");
        dir = Files.createTempDirectory("xaf-deploy-");
        topology = Topology.load(Path.of("..", "topologies", "two-dc.yaml")).withPrefix(prefix);
        testbed = new Testbed(dir.resolve("state"));
        TestbedState s = null;
        try {
            s = testbed.up(topology);
            testbed.attachXdpPass(s);
        } catch (Exception | Error e) {
            testbed.down(topology);
            throw e;
        }
        state = s;
        plan = IdentifierPlan.build(state, JOB, TOKEN);
        corpus = dir.resolve("corpus.txt");
        SyntheticCorpus.write(corpus, 5, 300_000);
        secret = dir.resolve("job.secret");
        JobSecret.generate().writeTo(secret);
    }

    String gatewayNamespace() {
        return state.gatewayNamespace("gw");
    }

    /** The world of the job as an operator would write it down: every host's address, each DC's gateway port. */
    World world() {
        List<RankAddress> ranks = new ArrayList<>();
        for (int r = 0; r < plan.worldSize(); r++) {
            Node h = plan.host(r);
            ranks.add(new RankAddress(r, h.datacenter(), h.form(), h.mtu(), Optional.ofNullable(h.ip()),
                    Optional.ofNullable(h.mac()), h.identity(), Optional.of(h.iface())));
        }
        Map<String, NextHop> gateways = new LinkedHashMap<>();
        for (GatewaySpec gw : topology.gateways()) {
            for (Node port : state.gatewayPorts(gw.name())) {
                gateways.putIfAbsent(port.datacenter(), new NextHop(Optional.ofNullable(port.ip()), Optional.ofNullable(port.mac())));
            }
        }
        return new World(JOB, ranks, gateways);
    }

    Path writeClusterFile() throws IOException {
        Path f = dir.resolve("cluster.yaml");
        Files.writeString(f, ClusterFile.render(world()));
        return f;
    }

    Path writeGatewayConfig(String metrics) throws IOException {
        Path f = dir.resolve("gateway.yaml");
        Files.writeString(f, plan.gatewayYaml("gw", metrics));
        return f;
    }

    /**
     * The common worker arguments of rank {@code r} (default wire security, mac, with the job's secret file); the
     * caller adds the world source and extras.
     */
    List<String> workerArgs(int r, int steps, Path checkpoints) {
        Node h = plan.host(r);
        return new ArrayList<>(List.of("--job", Integer.toString(JOB), "--world", Integer.toString(plan.worldSize()),
                "--rank", Integer.toString(r), "--interface", h.iface(), "--form", h.form().configName(),
                "--token", String.format("0x%08x", TOKEN), "--data", corpus.toString(), "--preset", "tiny",
                "--steps", Integer.toString(steps), "--batch", "8", "--seed", "31", "--warmup", "2",
                "--checkpoint-dir", checkpoints.resolve("rank" + r).toString(), "--op-timeout", "30",
                "--start-timeout", "90", "--secret-file", secret.toString()));
    }

    /** Where rank {@code r}'s stderr goes in the part of a test called {@code name}. */
    Path workerLog(String name, int r) {
        return dir.resolve(name + "-worker-" + r + ".log");
    }

    /**
     * Starts {@code xaf worker} for every rank, each in its host's namespace, with {@link #workerArgs}, then
     * {@code --cluster FILE} and {@code extra}; rank r's stderr goes to {@link #workerLog}. Each worker is added to
     * {@code into} as it starts, so the caller's finally closes those that started when a later one fails to.
     */
    void startClusterFileWorkers(String name, Path cluster, int steps, Path checkpoints, List<XafProcess> into,
                                 String... extra) throws IOException {
        for (int r = 0; r < plan.worldSize(); r++) {
            List<String> args = new ArrayList<>(List.of("worker"));
            args.addAll(workerArgs(r, steps, checkpoints));
            args.addAll(List.of("--cluster", cluster.toString()));
            args.addAll(List.of(extra));
            into.add(new XafProcess(plan.host(r).namespace(), args, workerLog(name, r)));
        }
    }

    /** Waits up to 180 s for rank {@code r}'s worker to end; fails with its output and log unless it exits with 0. */
    void assertExitsCleanly(String name, int r, XafProcess w) throws InterruptedException {
        assertEquals(0, w.await(180), "rank " + r + " exit status; output:\n" + w.output() + "\nlog:\n"
                + log(workerLog(name, r)));
    }

    /** A process started by {@code xaf ARGS} in a host's namespace, its stdout collected line by line. */
    static final class XafProcess implements AutoCloseable {
        final Process process;
        final List<String> lines = new ArrayList<>();
        private final Thread reader;

        XafProcess(String namespace, List<String> args, Path log) throws IOException {
            ProcessBuilder pb = Netns.javaProcessBuilder(namespace, WORKER_JVM, Main.class.getName(), args);
            pb.redirectError(log.toFile());
            process = pb.start();
            reader = Thread.ofPlatform().daemon(true).start(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream()))) {
                    for (String line; (line = r.readLine()) != null; ) {
                        synchronized (lines) {
                            lines.add(line);
                        }
                    }
                } catch (IOException ignored) {
                    // ended
                }
            });
        }

        /** Waits for exit; returns the exit status, or kills the process and returns -1 after the timeout. */
        int await(long seconds) throws InterruptedException {
            if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                return -1;
            }
            reader.join(5000);
            return process.exitValue();
        }

        List<WorkerLine> protocolLines(String kind) {
            synchronized (lines) {
                return lines.stream().map(WorkerLine::parse).filter(l -> l != null && l.kind().equals(kind)).toList();
            }
        }

        String output() {
            synchronized (lines) {
                return String.join("\n", lines);
            }
        }

        @Override
        public void close() throws InterruptedException {
            if (process.isAlive()) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    static String log(Path file) {
        try {
            List<String> all = Files.readAllLines(file);
            return String.join("\n", all.subList(Math.max(0, all.size() - 25), all.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    @Override
    public void close() {
        testbed.down(topology);
    }
}
