package io.xaforward.cluster.python;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The supervision of an agent and its script, with stand-ins for both (/usr/bin/python3 programs): the stand-in agent
 * serves a Unix socket and, like xaf agent, leaves when its client hangs up; the stand-in script connects and then
 * ends well, is killed, or waits. What is checked is how the pair ends together and what the launcher reports.
 */
class RankPairTest {
    /**
     * argv: socket, then what to do: "serve" (one client, exit 0 when it hangs up), "lose" (exit 3 when it hangs up, as
     * xaf agent does when its script went without bye), "die CODE" (print and exit after 0.5 s), "refuse", or
     * "bind-and-fail" (binds its socket, then fails after 1 s without saying it is ready). Once it accepts it prints
     * the agent line, as xaf agent does.
     */
    static final String AGENT = """
            import socket, sys, time
            path, what = sys.argv[1], sys.argv[2]
            if what == "refuse":
                print("xaf: the job token does not match", flush=True); sys.exit(4)
            s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(1)
            if what == "bind-and-fail":
                time.sleep(1); print("xaf: rank 0 did not join within the start timeout", flush=True); sys.exit(2)
            print("@xaf agent rank=0 socket=" + path, flush=True)
            c, _ = s.accept()
            if what == "die":
                time.sleep(0.5); print("xaf: lost the peers of rank 1", flush=True); sys.exit(int(sys.argv[3]))
            while c.recv(1): pass
            sys.exit(3 if what == "lose" else 0)
            """;
    /** argv: "ok", "kill" (SIGKILL itself) or "hang" (waits for the agent; fails when it goes, as xaforward.torch does). */
    static final String SCRIPT = """
            import os, signal, socket, sys, time
            c = socket.socket(socket.AF_UNIX); c.connect(os.environ["XAF_AGENT_SOCKET"])
            print("rank", os.environ["RANK"], "of", os.environ["WORLD_SIZE"], flush=True)
            if sys.argv[1] == "kill": os.kill(os.getpid(), signal.SIGKILL)
            if sys.argv[1] == "hang":
                while c.recv(1): pass
                raise SystemExit("AgentError: the agent went away")
            if sys.argv[1] == "ignore": time.sleep(600)
            """;

    @TempDir
    Path dir;

    private RankPair pair(int rank, String agentMode, String scriptMode, List<String> output) throws Exception {
        Path socket = dir.resolve("r" + rank + ".sock");
        RankPair p = new RankPair(rank, socket, dir.resolve("agent-" + rank + ".log"));
        List<String> agent = new ArrayList<>(List.of("/usr/bin/python3", "-c", AGENT, socket.toString()));
        agent.addAll(List.of(agentMode.split(" ")));
        p.startAgent(agent);
        p.startScript(List.of("/usr/bin/python3", "-c", SCRIPT, scriptMode), dir,
                Map.of("XAF_AGENT_SOCKET", socket.toString(), "RANK", Integer.toString(rank), "WORLD_SIZE", "2"),
                Duration.ofSeconds(60), line -> {
                    synchronized (output) {
                        output.add(line);
                    }
                });
        return p;
    }

    @Test
    void aScriptThatEndsWellEndsThePairWell() throws Exception {
        List<String> output = new ArrayList<>();
        RankPair.Exit e = pair(0, "serve", "ok", output).await();
        assertTrue(e.ok(), e.describe());
        assertEquals(List.of("rank 0 of 2"), output, "the script's lines reach the launcher, its environment set");
    }

    @Test
    void aKilledScriptIsNamedWithItsSignalAndItsAgentLeaves() throws Exception {
        RankPair.Exit e = pair(1, "lose", "kill", new ArrayList<>()).await();
        assertEquals("script", e.who());
        assertEquals(137, e.status());
        assertEquals("rank 1: the script failed (killed by signal 9): rank 1 of 2", e.describe());
    }

    @Test
    void anAgentThatDiesEndsItsScriptAndItsLastWordsAreTheReason() throws Exception {
        List<String> output = new ArrayList<>();
        RankPair.Exit e = pair(0, "die 5", "hang", output).await();
        assertEquals("agent", e.who(), e.describe());
        assertEquals(5, e.status());
        assertTrue(e.reason().startsWith("lost the peers of rank 1 (its log: "), e.reason());
    }

    @Test
    void anAgentThatEndsBeforeServingFailsTheStartWithItsReason() throws Exception {
        Path socket = dir.resolve("r.sock");
        RankPair p = new RankPair(0, socket, dir.resolve("agent.log"));
        p.startAgent(List.of("/usr/bin/python3", "-c", AGENT, socket.toString(), "refuse"));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> p.startScript(
                List.of("/usr/bin/python3", "-c", "pass"), dir, Map.of(), Duration.ofSeconds(60), line -> { }));
        assertTrue(e.getMessage().contains("exit 4") && e.getMessage().contains("the job token does not match"), e.getMessage());
    }

    @Test
    void anAgentThatBindsItsSocketAndFailsBeforeItIsReadyNeverStartsTheScript() throws Exception {
        Path socket = dir.resolve("r.sock"), started = dir.resolve("script-started");
        RankPair p = new RankPair(0, socket, dir.resolve("agent.log"));
        p.startAgent(List.of("/usr/bin/python3", "-c", AGENT, socket.toString(), "bind-and-fail"));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> p.startScript(
                List.of("/usr/bin/python3", "-c", "open('" + started + "', 'w')"), dir, Map.of(),
                Duration.ofSeconds(60), line -> { }));
        assertTrue(e.getMessage().contains("exit 2") && e.getMessage().contains("before it was ready; the script was"
                + " not started: rank 0 did not join within the start timeout"), e.getMessage());
        assertTrue(Files.exists(socket), "the socket file was there the whole second: a file alone is not ready");
        assertFalse(Files.exists(started), "the script never ran");
    }

    @Test
    void aSocketDirectoryThatOthersCanEnterIsRefused() throws Exception {
        Path open = Files.createDirectory(dir.resolve("open"));
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxr-xr-x"));
        RankPair p = new RankPair(0, open.resolve("r.sock"), dir.resolve("agent.log"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> p.startAgent(List.of("/usr/bin/python3", "-c", AGENT, open.resolve("r.sock").toString(), "serve")));
        assertTrue(e.getMessage().contains("has mode rwxr-xr-x, not rwx------"), e.getMessage());
    }

    @Test
    void afterAFailureARankThatDoesNotEndIsStoppedAfterTheGraceAndSaidSo() throws Exception {
        List<String> output = new ArrayList<>();
        List<RankPair> pairs = List.of(pair(0, "serve", "kill", output), pair(1, "serve", "ignore", output));
        ByteArrayOutputStream console = new ByteArrayOutputStream();
        long start = System.nanoTime();
        List<RankPair.Exit> exits = RankPair.awaitAll(pairs, Duration.ofSeconds(2), new PrintStream(console, true, StandardCharsets.UTF_8));
        double seconds = (System.nanoTime() - start) / 1e9;
        assertEquals(137, exits.get(0).status());
        assertFalse(exits.get(1).ok());
        assertTrue(exits.get(1).reason().contains("stopped"), exits.get(1).describe());
        assertTrue(seconds < 60, "bounded by the grace, not the sleeping script: " + seconds + " s");
        String text = console.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("xaf: rank 0: the script failed (killed by signal 9)"), text);
        assertTrue(text.contains("xaf: rank 1: the script failed"), text);
    }

    @Test
    void theReasonIsTheLastXafLineElseTheLastErrorLine() {
        assertEquals("bad token", RankPair.lastWords(List.of("starting", "xaf: bad token", "bye")));
        assertEquals("RuntimeError: boom", RankPair.lastWords(List.of("Traceback (most recent call last):",
                "  File \"t.py\", line 3, in <module>", "RuntimeError: boom")));
        assertEquals("no output", RankPair.lastWords(List.of()));
    }
}
