package io.xaforward.cluster.agent;

import io.xaforward.collective.Algorithm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * xaforward.torch (Debian's /usr/bin/python3 with torch) through agents of a job of three ranks in two data centers
 * (in-memory network, hierarchical all-reduce): exact collectives, DistributedOptimizer equal to one process on the
 * global batch, identical weights after broadcast_parameters, and a killed training process that makes its agent
 * leave and the others fail with an error naming it.
 */
class AgentPythonTest {
    private static final int[] TWO_DATACENTERS = {0, 0, 1};

    @TempDir
    Path dir;

    private static List<PythonRank> startAll(String script, LoopbackAgents agents, Path dir) throws Exception {
        List<PythonRank> ranks = new ArrayList<>();
        for (int r = 0; r < agents.size; r++) ranks.add(PythonRank.start(script, agents, r, dir));
        return ranks;
    }

    private static void assertEveryRankPasses(List<PythonRank> ranks, LoopbackAgents agents) throws Exception {
        for (PythonRank p : ranks) {
            int status = p.await(240);
            System.out.print(p.output().indent(2)); // the scripts' RESULT lines, for the record
            assertEquals(0, status, "rank " + p.rank + ":\n" + p.output());
            assertTrue(p.output().contains("PASS rank " + p.rank), p.output());
        }
        for (int r = 0; r < agents.size; r++) {
            assertEquals(0, agents.exits.get(r).get(60, TimeUnit.SECONDS), "rank " + r + "'s agent ends after bye");
        }
    }

    @Test
    void collectivesFromPythonAreExact() throws Exception {
        try (LoopbackAgents agents = new LoopbackAgents(dir, TWO_DATACENTERS, Algorithm.HIERARCHICAL, 64 << 10,
                Duration.ofSeconds(60)).awaitSockets(Duration.ofSeconds(30))) {
            assertEveryRankPasses(startAll("collectives_exact.py", agents, dir), agents);
        }
    }

    @Test
    void distributedOptimizerMatchesOneProcessOnTheGlobalBatch() throws Exception {
        try (LoopbackAgents agents = new LoopbackAgents(dir, TWO_DATACENTERS, Algorithm.HIERARCHICAL, 1 << 20,
                Duration.ofSeconds(60)).awaitSockets(Duration.ofSeconds(30))) {
            List<PythonRank> ranks = startAll("optimizer_equivalence.py", agents, dir);
            assertEveryRankPasses(ranks, agents);
            Pattern weights = Pattern.compile("RESULT passes=(\\d) .* weights=([0-9a-f]{64})");
            List<String> digests = new ArrayList<>();
            for (PythonRank p : ranks) {
                Matcher m = weights.matcher(p.output());
                StringBuilder mine = new StringBuilder();
                while (m.find()) mine.append(m.group(1)).append(':').append(m.group(2)).append(' ');
                digests.add(mine.toString());
            }
            assertTrue(digests.get(0).contains("1:") && digests.get(0).contains("2:"), digests.get(0));
            for (String d : digests) assertEquals(digests.get(0), d, "every rank ends with identical weights");
        }
    }

    @Test
    void optimizerStateTravelsAsDataAndAPickleOrAnAbsurdLengthIsRefusedWithoutRunning() throws Exception {
        Path marker = dir.resolve("unpickled"), control = dir.resolve("control");
        try (LoopbackAgents agents = new LoopbackAgents(dir, new int[]{0, 0}, Algorithm.RING, 1 << 20,
                Duration.ofSeconds(60)).awaitSockets(Duration.ofSeconds(30))) {
            Map<String, String> env = Map.of("MARKER", marker.toString(), "CONTROL_MARKER", control.toString());
            List<PythonRank> ranks = new ArrayList<>();
            for (int r = 0; r < 2; r++) ranks.add(PythonRank.start("optimizer_state_wire.py", agents, r, dir, env));
            assertEveryRankPasses(ranks, agents);
            Pattern state = Pattern.compile("RESULT state=([0-9a-f]{64})");
            Matcher root = state.matcher(ranks.get(0).output()), other = state.matcher(ranks.get(1).output());
            assertTrue(root.find() && other.find(), ranks.get(1).output());
            assertEquals(root.group(1), other.group(1), "rank 1 holds the root's Adam state, moments and steps alike");
            String receiver = ranks.get(1).output();
            assertTrue(receiver.contains("REFUSED pickle: broadcast_optimizer_state: the root rank sent a description"
                    + " that is not JSON"), receiver);
            assertTrue(receiver.contains("MARKER exists=False"), receiver);
            assertTrue(receiver.contains("REFUSED length: broadcast_optimizer_state: the root rank announced "
                    + (1L << 40) + " bytes of description"), receiver);
            assertTrue(Files.exists(control), "the payload does run when unpickled (the root's own control)");
            assertFalse(Files.exists(marker), "nothing unpickled the broadcast");
        }
    }

    @Test
    void initRefusesAnAgentOfAnotherRankAndTheSocketPathMustBeASocket() throws Exception {
        Files.writeString(dir.resolve("rank1.sock"), "a user's file, not a socket");
        try (LoopbackAgents agents = new LoopbackAgents(dir, new int[]{0, 0}, Algorithm.RING, 1 << 16,
                Duration.ofSeconds(10))) {
            var refused = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> agents.exits.get(1).get(30, TimeUnit.SECONDS));
            assertTrue(refused.getCause().getMessage().contains("exists and is not a socket"), refused.toString());
            assertEquals("a user's file, not a socket", Files.readString(dir.resolve("rank1.sock")), "left alone");
            while (!Files.exists(agents.sockets.get(0))) Thread.sleep(20);
            PythonRank p = PythonRank.start("env_mismatch.py", agents, 0, dir, Map.of("RANK", "1"));
            assertEquals(0, p.await(120), p.output());
            assertTrue(p.output().contains("REFUSED RANK=1 but the agent at " + agents.sockets.get(0)
                    + " serves rank 0 of 2"), p.output());
            assertEquals(RankAgent.EXIT_CLIENT_LOST, agents.exits.get(0).get(30, TimeUnit.SECONDS),
                    "the refused script's connection closing ends the agent's service");
        }
    }

    @Test
    void aKilledTrainingProcessMakesItsAgentLeaveAndThePeersFailNamingIt() throws Exception {
        int victim = TWO_DATACENTERS.length - 1;
        // The bound on the survivors' failure: the acknowledgement timeout, 15 s (the operation's is 30 s).
        try (LoopbackAgents agents = new LoopbackAgents(dir, TWO_DATACENTERS, Algorithm.HIERARCHICAL, 1 << 20,
                Duration.ofSeconds(30)).awaitSockets(Duration.ofSeconds(30))) {
            List<PythonRank> ranks = startAll("kill_peer.py", agents, dir);
            for (PythonRank p : ranks) p.awaitLine("READY rank " + p.rank, 120);
            ranks.get(victim).process.destroyForcibly(); // SIGKILL: no bye, no clean close by the script
            assertEquals(RankAgent.EXIT_CLIENT_LOST, agents.exits.get(victim).get(30, TimeUnit.SECONDS),
                    "the victim's agent leaves the job");
            for (int r = 0; r < victim; r++) {
                PythonRank p = ranks.get(r);
                assertEquals(0, p.await(60), p.output());
                String out = p.output();
                System.out.print(out.indent(2));
                assertTrue(out.contains("FAILED after") && out.contains("CollectiveTimeoutException"), out);
                assertEquals(RankAgent.EXIT_CLIENT_LOST, agents.exits.get(r).get(30, TimeUnit.SECONDS),
                        "rank " + r + "'s agent leaves once its script has gone");
            }
            // rank 0 leads data center 0 and exchanges with the victim's data center directly
            assertTrue(ranks.get(0).output().contains("(rank " + victim + ")"), ranks.get(0).output());
        }
    }
}
