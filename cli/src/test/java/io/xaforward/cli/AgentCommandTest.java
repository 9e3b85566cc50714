package io.xaforward.cli;

import io.xaforward.transport.JobSecret;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code xaf agent} as a user runs it: two ranks from a cluster file on loopback addresses (real UDP, wire security
 * mac with a job secret), each serving a /usr/bin/python3 script that uses xaforward.torch; both end after bye.
 */
class AgentCommandTest {
    private static final String SCRIPT = """
            import torch
            import xaforward.torch as xaf
            xaf.init()
            r, n = xaf.rank(), xaf.size()
            t = torch.arange(1000, dtype=torch.float32) + r
            xaf.allreduce_(t, op=xaf.Sum)
            assert torch.equal(t, torch.arange(1000, dtype=torch.float32) * n + sum(range(n))), t
            torch.manual_seed(r)
            model = torch.nn.Linear(3, 2)
            xaf.broadcast_parameters(model.state_dict(), root_rank=1)
            torch.manual_seed(1)
            assert torch.equal(model.weight, torch.nn.Linear(3, 2).weight)
            print("PASS rank", r, "of", n, "local", xaf.local_rank(), flush=True)
            """;

    @TempDir
    Path dir;

    @Test
    void twoAgentsFromAClusterFileServeTheirScriptsAndLeaveAfterBye() throws Exception {
        // Addresses of their own inside 127/8 (all loopback on Linux): port 9450 is every rank's.
        Path cluster = dir.resolve("cluster.yaml");
        Files.writeString(cluster, """
                job: 41
                datacenters:
                  - {name: a, form: ipv4}
                ranks:
                  - {rank: 0, datacenter: a, ip: 127.41.0.1}
                  - {rank: 1, datacenter: a, ip: 127.41.0.2}
                """);
        Path secret = dir.resolve("job.secret");
        JobSecret.generate().writeTo(secret);
        Path script = dir.resolve("script.py");
        Files.writeString(script, SCRIPT);

        List<CompletableFuture<Integer>> agents = new ArrayList<>();
        List<Path> sockets = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            Path socket = dir.resolve("agent" + r + ".sock");
            sockets.add(socket);
            String[] args = {"agent", "--rank", Integer.toString(r), "--interface", "lo", "--cluster", cluster.toString(),
                    "--token", "0x41", "--secret-file", secret.toString(), "--socket", socket.toString(),
                    "--shm-bytes", "65536", "--op-timeout", "60", "--start-timeout", "60"};
            CompletableFuture<Integer> exit = new CompletableFuture<>();
            // a thread each: both agents must run at once (the common pool may have a single thread on two cores)
            Thread.ofPlatform().daemon().start(() -> exit.complete(Main.commandLine().execute(args)));
            agents.add(exit);
        }
        List<Process> scripts = new ArrayList<>();
        try {
            for (int r = 0; r < 2; r++) {
                awaitFile(sockets.get(r), agents.get(r), 120);
                ProcessBuilder pb = new ProcessBuilder("/usr/bin/python3", script.toString()).redirectErrorStream(true);
                pb.environment().put("PYTHONPATH", packageRoot().toString());
                pb.environment().put("XAF_AGENT_SOCKET", sockets.get(r).toString());
                pb.environment().put("RANK", Integer.toString(r));
                pb.environment().put("WORLD_SIZE", "2");
                pb.environment().put("OMP_NUM_THREADS", "1");
                scripts.add(pb.start());
            }
            for (int r = 0; r < 2; r++) {
                Process p = scripts.get(r);
                assertTrue(p.waitFor(180, TimeUnit.SECONDS), "rank " + r + "'s script did not end");
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertEquals(0, p.exitValue(), out);
                // local rank: counted among the ranks at the same address, and each rank has an address of its own
                assertTrue(out.contains("PASS rank " + r + " of 2 local 0"), out);
            }
            for (int r = 0; r < 2; r++) {
                assertEquals(0, agents.get(r).get(60, TimeUnit.SECONDS), "rank " + r + "'s agent exit status");
                assertFalse(Files.exists(sockets.get(r)), "the socket is removed at exit");
            }
        } finally {
            for (Process p : scripts) p.destroyForcibly();
        }
    }

    @Test
    void anAgentStoppedBySigtermRemovesItsSocketAndSegment() throws Exception {
        Path cluster = dir.resolve("one.yaml");
        Files.writeString(cluster, """
                job: 42
                datacenters:
                  - {name: a, form: ipv4}
                ranks:
                  - {rank: 0, datacenter: a, ip: 127.42.0.1}
                """);
        Path socket = dir.resolve("one.sock");
        Process agent = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Main.class.getName(),
                "agent", "--rank", "0", "--interface", "lo", "--cluster", cluster.toString(), "--token", "42",
                "--wire-security", "crc32c", "--socket", socket.toString(), "--shm-bytes", "4096")
                .redirectErrorStream(true).start();
        try {
            var lines = new java.io.BufferedReader(new java.io.InputStreamReader(agent.getInputStream(), StandardCharsets.UTF_8));
            String line;
            Path shm = null;
            while ((line = lines.readLine()) != null) {
                var parsed = io.xaforward.cluster.WorkerLine.parse(line);
                if (parsed != null && parsed.kind().equals("agent")) {
                    shm = Path.of(parsed.get("shm"));
                    assertEquals(socket.toString(), parsed.get("socket"));
                    break;
                }
            }
            assertTrue(shm != null, "the agent line names the segment");
            assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(shm)));
            assertEquals(4096, Files.size(shm));
            assertTrue(Files.exists(socket));
            agent.destroy(); // SIGTERM
            assertTrue(agent.waitFor(60, TimeUnit.SECONDS), "the agent ends on SIGTERM");
            assertFalse(Files.exists(shm), "the segment is removed on SIGTERM");
            assertFalse(Files.exists(socket), "the socket is removed on SIGTERM");
        } finally {
            agent.destroyForcibly();
        }
    }

    private static void awaitFile(Path file, CompletableFuture<Integer> agent, long seconds) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!Files.exists(file)) {
            if (agent.isDone()) throw new AssertionError("the agent ended (exit " + agent.get() + ") before opening " + file);
            if (System.nanoTime() > deadline) throw new AssertionError(file + " did not appear within " + seconds + " s");
            Thread.sleep(50);
        }
    }

    private static Path packageRoot() throws IOException {
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            if (Files.isRegularFile(d.resolve("python/xaforward/__init__.py"))) return d.resolve("python");
        }
        throw new IOException("python/xaforward not found");
    }
}
