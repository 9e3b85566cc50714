package io.xaforward.cli;

import io.xaforward.cluster.ClusterRun;
import io.xaforward.cluster.python.PythonTrainingJob;
import io.xaforward.cluster.python.RankPair;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.transport.WireSecurity;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.*;

/**
 * {@code xaf train --python} end to end, as root: the PyTorch example (examples/pytorch/train_gpt_xaf.py) trains 20
 * steps across the two emulated data centers of topologies/two-dc.yaml (IPv4 and IPv6, two hosts each) through
 * the XDP gateway, one agent and one /usr/bin/python3 script per host namespace. Every rank ends with the same
 * weights (the checksum each prints), and the mean of the ranks' losses at each step equals the loss of the
 * single-process form (train_gpt.py) on the whole batch, within float tolerance. Then a script killed mid-run
 * (SIGKILL) makes its agent leave and the other ranks fail with an error of their own, within a bounded time.
 */
class PyTorchTrainingTest {
    static final Path EXAMPLES = Path.of("..", "examples", "pytorch").toAbsolutePath().normalize();
    static final List<String> MODEL = List.of("--steps", "20", "--batch", "8", "--layers", "1", "--width", "32",
            "--heads", "2", "--context", "32", "--warmup", "4");
    static final Pattern STEP = Pattern.compile("^\\[rank (\\d+)] step (\\d+)/\\d+ loss ([0-9.]+)");
    static final Pattern CHECKSUM = Pattern.compile("^\\[rank (\\d+)] rank \\d+ weights checksum ([0-9a-f]+)");
    static Path data;

    @BeforeAll
    static void requirements() throws IOException {
        assertTrue(Netns.isRoot(), "emulated data centers need root (network namespaces, XDP); CI runs as root");
        data = Files.createTempDirectory("xaf-pytorch-data-");
        writeByteData(data, 60_000);
    }

    /** nanoGPT .bin data over the 256 byte values: a repeated text with seeded noise, so the loss has somewhere to go. */
    static void writeByteData(Path dir, int tokens) throws IOException {
        byte[] text = "the gradients of every rank cross the gateway between the data centers. ".getBytes(StandardCharsets.US_ASCII);
        Random random = new Random(7);
        ByteBuffer b = ByteBuffer.allocate(tokens * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < tokens; i++) b.putShort((short) (random.nextInt(10) == 0 ? random.nextInt(256) : text[i % text.length] & 0xff));
        Files.write(dir.resolve("train.bin"), b.array());
        Files.writeString(dir.resolve("meta.json"), "{\"tokenizer\": \"bytes\", \"vocab_size\": 256, \"dtype\": \"uint16\"}\n");
    }

    static PythonTrainingJob.Spec job(Path script, List<String> args, Path work, long opTimeoutSeconds) {
        String prefix = "y" + Integer.toHexString(new Random().nextInt(0x100, 0x1000));
        ClusterRun.Spec cluster = new ClusterRun.Spec(Path.of("..", "topologies", "two-dc.yaml"), prefix, GatewayMode.XDP, 1,
                new SecureRandom().nextInt(), work);
        return new PythonTrainingJob.Spec(cluster, WireSecurity.MAC, script, args, work, LaunchCommand::agentCommand,
                Duration.ofSeconds(opTimeoutSeconds), Duration.ofSeconds(180), false);
    }

    @Test
    void theExampleTrainsAcrossTwoDatacentersLikeOneProcessOnTheGlobalBatch() throws Exception {
        List<String> args = new ArrayList<>(List.of("--data", data.toString()));
        args.addAll(MODEL);

        List<String> reference = new ArrayList<>(List.of("/usr/bin/python3", EXAMPLES.resolve("train_gpt.py").toString()));
        reference.addAll(args);
        Process single = new ProcessBuilder(reference).redirectErrorStream(true).start();
        String singleOut = new String(single.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, single.waitFor(), singleOut);
        Map<Integer, Double> singleLoss = new TreeMap<>();
        for (String line : singleOut.lines().toList()) {
            Matcher m = Pattern.compile("^step (\\d+)/\\d+ loss ([0-9.]+)").matcher(line);
            if (m.find()) singleLoss.put(Integer.parseInt(m.group(1)), Double.parseDouble(m.group(2)));
        }
        assertEquals(20, singleLoss.size(), singleOut);

        Path work = Files.createTempDirectory("xaf-pytorch-job-");
        ByteArrayOutputStream console = new ByteArrayOutputStream();
        PythonTrainingJob.Result result = new PythonTrainingJob(job(EXAMPLES.resolve("train_gpt_xaf.py"), args, work, 60),
                new PrintStream(console, true, StandardCharsets.UTF_8), System.getenv()).run();
        String out = console.toString(StandardCharsets.UTF_8);
        assertTrue(result.ok(), result.ranks() + "\n" + out);

        Map<Integer, Map<Integer, Double>> byStep = new TreeMap<>();
        Set<String> checksums = new HashSet<>();
        Set<Integer> reported = new HashSet<>();
        for (String line : out.lines().toList()) {
            Matcher s = STEP.matcher(line);
            if (s.find()) byStep.computeIfAbsent(Integer.parseInt(s.group(2)), k -> new HashMap<>())
                    .put(Integer.parseInt(s.group(1)), Double.parseDouble(s.group(3)));
            Matcher c = CHECKSUM.matcher(line);
            if (c.find()) {
                reported.add(Integer.parseInt(c.group(1)));
                checksums.add(c.group(2));
            }
        }
        assertEquals(Set.of(0, 1, 2, 3), reported, "every rank prints its weights' checksum:\n" + out);
        assertEquals(1, checksums.size(), "identical weights on every rank:\n" + out);
        assertEquals(20, byStep.size(), out);
        for (var e : byStep.entrySet()) {
            assertEquals(4, e.getValue().size(), "step " + e.getKey() + ":\n" + out);
            double mean = e.getValue().values().stream().mapToDouble(Double::doubleValue).average().orElseThrow();
            // Float32 sums in another order (four shares, then the all-reduce) than one process's mean over the batch.
            assertEquals(singleLoss.get(e.getKey()), mean, 2e-3, "step " + e.getKey() + " loss: ranks' mean vs one process");
        }
        assertNotEquals(singleLoss.get(1), singleLoss.get(20), 0.05, "the model learned something");
        assertTrue(result.gatewayCounters().getOrDefault("xaf_packets_total{forwarded}", 0L) > 0,
                "gradients crossed the XDP gateway: " + result.gatewayCounters());
    }

    @Test
    void aKilledScriptEndsItsAgentAndTheOtherRanksFailWithAnErrorOfTheirOwn() throws Exception {
        Path work = Files.createTempDirectory("xaf-pytorch-kill-");
        Path script = work.resolve("killed_at_step_5.py");
        Files.writeString(script, """
                import os, signal, time
                import torch
                import xaforward.torch as xaf
                xaf.init()
                t = torch.ones(10000)
                for step in range(1000):
                    if xaf.rank() == 1 and step == 5:
                        print("rank 1 killing itself", flush=True)
                        os.kill(os.getpid(), signal.SIGKILL)
                    xaf.allreduce_(t)
                    print("step", step, flush=True)
                    time.sleep(0.05)
                """);
        long opTimeout = 20;
        ByteArrayOutputStream console = new ByteArrayOutputStream();
        long start = System.nanoTime();
        PythonTrainingJob.Result result = new PythonTrainingJob(job(script, List.of(), work, opTimeout),
                new PrintStream(console, true, StandardCharsets.UTF_8), System.getenv()).run();
        double seconds = (System.nanoTime() - start) / 1e9;
        String out = console.toString(StandardCharsets.UTF_8);
        assertFalse(result.ok(), out);
        RankPair.Exit killed = result.ranks().get(1);
        assertEquals("script", killed.who(), out);
        assertEquals(128 + 9, killed.status(), "killed by SIGKILL: " + out);
        for (int r : List.of(0, 2, 3)) {
            RankPair.Exit e = result.ranks().get(r);
            assertFalse(e.ok(), out);
            assertFalse(e.reason().contains("stopped"), "rank " + r + " failed on its own, not stopped by the launcher: " + e.describe() + "\n" + out);
            assertFalse(e.reason().isBlank(), "rank " + r + " says why: " + out);
        }
        // Bounded: the survivors' all-reduce fails within the op timeout; the launcher's own grace after the first
        // failure (op timeout + agent grace + 30 s) is the ceiling it would stop them at.
        assertTrue(seconds < 180 + 2 * opTimeout + RankPair.AGENT_GRACE.toSeconds() + 30, "took " + seconds + " s:\n" + out);
    }
}
