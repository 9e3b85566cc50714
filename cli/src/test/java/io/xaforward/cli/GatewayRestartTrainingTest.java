package io.xaforward.cli;

import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.TrainResult;
import io.xaforward.cluster.TrainingJob;
import io.xaforward.testbed.Layout;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Topology;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The XDP gateway between two data centers is killed (SIGKILL) in the middle of a training run and a new
 * {@code xaf gateway} is started on the same interfaces: the reliable transport retransmits across the gap and the
 * run completes with weights bitwise identical to an uninterrupted run of the same job.
 */
class GatewayRestartTrainingTest {
    static final int STEPS = 30;

    static TrainJobSpec spec(Path dir) throws Exception {
        TrainCommand cmd = new TrainCommand();
        cmd.topology = TrainCommand.shippedTopology("two-dc.yaml");
        cmd.gatewayMode = io.xaforward.testbed.mode.GatewayMode.XDP;
        cmd.collective.algorithm = io.xaforward.collective.Algorithm.HIERARCHICAL;
        cmd.loop.preset = "tiny";
        cmd.loop.steps = STEPS;
        cmd.loop.batch = 8;
        cmd.loop.seed = 91;
        cmd.loop.lr = 3e-3;
        cmd.loop.warmup = 2;
        cmd.loop.evalEvery = 0;
        cmd.loop.checksumEvery = 5;
        cmd.loop.threads = 1;
        cmd.workDir = dir;
        cmd.endpoint = io.xaforward.cluster.Endpoint.UDP;
        return cmd.spec();
    }

    /** The console of a run, which the test can wait on. */
    static final class Console extends OutputStream {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

        @Override
        public synchronized void write(int b) {
            bytes.write(b);
            notifyAll();
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            bytes.write(b, off, len);
            notifyAll();
        }

        @Override
        public synchronized String toString() {
            return bytes.toString(StandardCharsets.UTF_8);
        }

        /** Waits until the console shows {@code pattern}; returns its first group. */
        synchronized String await(Pattern pattern, long timeoutMs, CompletableFuture<?> job) throws InterruptedException {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (System.currentTimeMillis() < deadline && !job.isDone()) {
                Matcher m = pattern.matcher(toString());
                if (m.find()) return m.group(1);
                wait(50);
            }
            throw new AssertionError("console never showed " + pattern + (job.isDone() ? " (the job ended)" : "") + ":\n" + this);
        }
    }

    @Test
    void aGatewayKilledAndRestartedMidTrainingChangesNoWeight() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Path dir = Files.createTempDirectory("xaf-gw-restart-train");
        TrainResult uninterrupted = new TrainingJob(spec(dir.resolve("a")), new PrintStream(OutputStream.nullOutputStream(), true)).run();
        assertEquals(STEPS, uninterrupted.steps().size());

        TrainJobSpec spec = spec(dir.resolve("b"));
        String gwNs = Layout.of(Topology.load(spec.cluster().topology()).withPrefix(spec.cluster().prefix())).gatewayNamespace("gw");
        Console console = new Console();
        CompletableFuture<TrainResult> job = CompletableFuture.supplyAsync(() -> {
            try {
                return new TrainingJob(spec, new PrintStream(console, true)).run();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, r -> Thread.ofPlatform().name("training-job").start(r));
        GatewayProcess restarted = null;
        try {
            long killedAfter = Long.parseLong(console.await(Pattern.compile("step +([2-9])/" + STEPS), 180_000, job));
            long pid = gatewayPid(gwNs);
            Path config = Path.of(configOf(pid));
            assertEquals(0, new ProcessBuilder("kill", "-KILL", Long.toString(pid)).inheritIO().start().waitFor());
            ProcessHandle.of(pid).ifPresent(h -> h.onExit().join());
            assertFalse(job.isDone(), "the job must still be running when its gateway dies:\n" + console);
            // The links died with the process; a fresh gateway attaches to the same interfaces.
            restarted = GatewayProcess.start(gwNs, config, List.of());
            restarted.awaitReady(60_000);

            TrainResult result = job.get(300, TimeUnit.SECONDS);
            assertEquals(STEPS, result.steps().size(), console.toString());
            assertTrue(killedAfter < STEPS);
            assertTrue(result.gatewayCounters().getOrDefault("xaf_packets_total{forwarded}", 0L) > 0,
                    "the restarted gateway forwarded the rest of the run: " + result.gatewayCounters());
            assertEquals(uninterrupted.finalChecksum(), result.finalChecksum(),
                    "weights after a gateway restart at step " + killedAfter + " differ from the uninterrupted run's:\n" + console);
            System.out.printf("gateway killed after step %d of %d, restarted; final weights 0x%x in both runs%n",
                    killedAfter, STEPS, result.finalChecksum());
        } finally {
            if (!job.isDone()) job.cancel(true);
            if (restarted != null) restarted.close();
        }
        assertTrue(Netns.list().stream().noneMatch(n -> n.startsWith(spec.cluster().prefix() + "-")), "namespaces left behind");
    }

    /** The gateway process in the namespace: a java process whose command line runs a gateway with --config. */
    static long gatewayPid(String ns) throws Exception {
        for (String p : Netns.exec(null, "ip", "netns", "pids", ns).stdout().trim().split("\\s+")) {
            if (p.isEmpty()) continue;
            long pid = Long.parseLong(p);
            String cmdline = cmdline(pid);
            if (cmdline.contains("Gateway") && cmdline.contains("--config")) return pid;
        }
        throw new AssertionError("no gateway process in " + ns);
    }

    static String cmdline(long pid) throws Exception {
        return Files.readString(Path.of("/proc", Long.toString(pid), "cmdline")).replace('\0', ' ');
    }

    static String configOf(long pid) throws Exception {
        String[] args = cmdline(pid).trim().split(" ");
        for (int i = 0; i < args.length - 1; i++) if (args[i].equals("--config")) return args[i + 1];
        throw new AssertionError("no --config in " + cmdline(pid));
    }
}
