package io.xaforward.cli;

import io.xaforward.cluster.python.PythonTrainingJob;
import io.xaforward.testbed.Netns;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.*;

/**
 * examples/pytorch/train_ddp.py, DistributedDataParallel as a PyTorch user writes it, over the torch.distributed
 * backend "xaf" across the two emulated data centers of topologies/two-dc.yaml (IPv4 and IPv6, through the XDP
 * gateway, which Gloo cannot cross), against the same script over Gloo with four processes on loopback: at every
 * step every rank's loss is the Gloo run's within float tolerance (the sums run in another order), and each run ends
 * with identical weights on every rank. As root, like PyTorchTrainingTest.
 */
class PyTorchDdpTest {
    static final Path SCRIPT = PyTorchTrainingTest.EXAMPLES.resolve("train_ddp.py");
    static final Pattern STEP = Pattern.compile("^(?:\\[rank (\\d+)] )?step (\\d+)/\\d+ loss ([0-9.]+)");
    static final Pattern CHECKSUM = Pattern.compile("rank (\\d+) weights checksum ([0-9a-f]+)");
    static final int WORLD = 4;
    static Path data;

    @BeforeAll
    static void requirements() throws IOException {
        assertTrue(Netns.isRoot(), "emulated data centers need root (network namespaces, XDP); CI runs as root");
        data = Files.createTempDirectory("xaf-ddp-data-");
        PyTorchTrainingTest.writeByteData(data, 60_000);
    }

    static List<String> args(String backend) {
        List<String> a = new ArrayList<>(List.of("--backend", backend, "--data", data.toString()));
        a.addAll(PyTorchTrainingTest.MODEL);
        return a;
    }

    /** Losses by step, then rank; checksums by rank. */
    record Run(Map<Integer, Map<Integer, Double>> losses, Map<Integer, String> checksums) {}

    static Run parse(Map<Integer, String> outputByRank) {
        Map<Integer, Map<Integer, Double>> losses = new TreeMap<>();
        Map<Integer, String> checksums = new TreeMap<>();
        for (var e : outputByRank.entrySet()) {
            for (String line : e.getValue().lines().toList()) {
                Matcher s = STEP.matcher(line);
                if (s.find()) {
                    int rank = s.group(1) != null ? Integer.parseInt(s.group(1)) : e.getKey();
                    losses.computeIfAbsent(Integer.parseInt(s.group(2)), k -> new TreeMap<>()).put(rank, Double.parseDouble(s.group(3)));
                }
                Matcher c = CHECKSUM.matcher(line);
                if (c.find()) checksums.put(Integer.parseInt(c.group(1)), c.group(2));
            }
        }
        return new Run(losses, checksums);
    }

    /** The Gloo run: four processes on this host, torch's env:// rendezvous on a loopback port. */
    static Map<Integer, String> glooRun() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        List<Process> processes = new ArrayList<>();
        for (int r = 0; r < WORLD; r++) {
            List<String> command = new ArrayList<>(List.of("/usr/bin/python3", SCRIPT.toString()));
            command.addAll(args("gloo"));
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
            pb.environment().putAll(Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(port),
                    "RANK", Integer.toString(r), "WORLD_SIZE", Integer.toString(WORLD), "OMP_NUM_THREADS", "1"));
            processes.add(pb.start());
        }
        Map<Integer, String> out = new TreeMap<>();
        for (int r = 0; r < WORLD; r++) {
            Process p = processes.get(r);
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, p.waitFor(), "gloo rank " + r + ":\n" + text);
            out.put(r, text);
        }
        return out;
    }

    @Test
    void ddpOverXafAcrossTwoDatacentersFollowsDdpOverGlooStepByStep() throws Exception {
        Run gloo = parse(glooRun());
        assertEquals(20, gloo.losses().size(), gloo.toString());
        assertEquals(1, new HashSet<>(gloo.checksums().values()).size(), "Gloo: identical weights " + gloo.checksums());

        Path work = Files.createTempDirectory("xaf-ddp-job-");
        ByteArrayOutputStream console = new ByteArrayOutputStream();
        PythonTrainingJob.Result result = new PythonTrainingJob(PyTorchTrainingTest.job(SCRIPT, args("xaf"), work, 60),
                new PrintStream(console, true, StandardCharsets.UTF_8), System.getenv()).run();
        String out = console.toString(StandardCharsets.UTF_8);
        assertTrue(result.ok(), result.ranks() + "\n" + out);
        Run xaf = parse(Map.of(-1, out));

        assertEquals(Set.of(0, 1, 2, 3), xaf.checksums().keySet(), "every rank prints its weights' checksum:\n" + out);
        assertEquals(1, new HashSet<>(xaf.checksums().values()).size(), "identical weights on every rank:\n" + out);
        assertEquals(20, xaf.losses().size(), out);
        double worst = 0;
        for (var e : gloo.losses().entrySet()) {
            Map<Integer, Double> mine = xaf.losses().get(e.getKey());
            assertEquals(e.getValue().keySet(), mine.keySet(), "step " + e.getKey() + ":\n" + out);
            for (var r : e.getValue().entrySet()) {
                double d = Math.abs(r.getValue() - mine.get(r.getKey()));
                worst = Math.max(worst, d);
                // The same float32 gradients summed in another order (Gloo's ring, XAForward's hierarchy), then AdamW;
                // measured: at most 1e-6 (the printed precision).
                assertEquals(r.getValue(), mine.get(r.getKey()), 1e-4, "step " + e.getKey() + " rank " + r.getKey() + ": xaf vs gloo");
            }
        }
        System.out.printf("largest loss difference xaf vs gloo over 20 steps x 4 ranks: %.3g%n", worst);
        assertNotEquals(gloo.losses().get(1).get(0), gloo.losses().get(20).get(0), 0.05, "the model learned something");
        assertTrue(result.gatewayCounters().getOrDefault("xaf_packets_total{forwarded}", 0L) > 0,
                "gradients crossed the XDP gateway: " + result.gatewayCounters());
    }
}
