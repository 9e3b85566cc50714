package io.xaforward.cluster.agent;

import io.xaforward.collective.Algorithm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Who may talk to an agent and what a training process maps: the agent's socket lies in a directory only its user
 * can enter, the agent refuses a connection from another user (seen with SO_PEERCRED) even where that directory was
 * opened, refuses a directory open to others and a path another user bound; the Python client refuses an agent of
 * another user and every segment that is not the agent's own file in /dev/shm. "Another user" is nobody (65534),
 * whose processes {@code setpriv} starts (the tests run as root, as CI does).
 */
class AgentPrivacyTest {
    private static final int NOBODY = 65534;
    /** argv: socket. Connects, says hello, prints what came back: the reply's text, or the error of connecting. */
    private static final String STRANGER = """
            import socket, struct, sys
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(sys.argv[1])
            except OSError as e:
                print("CONNECT", type(e).__name__, e, flush=True); sys.exit(0)
            s.sendall(struct.pack("<IBIHI", 11, 1, 7, 1, 4242))
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk: break
                data += chunk
            print("REPLY", data[12:].decode("utf-8", "replace"), flush=True)
            print("CLOSED", flush=True)
            """;

    @TempDir
    Path dir;

    private static String run(List<String> command) throws Exception {
        return run(new ProcessBuilder(command));
    }

    /** Runs the process to its end, which must be a success; what it printed (standard output and error). */
    private static String run(ProcessBuilder pb) throws Exception {
        Process p = pb.redirectErrorStream(true).start();
        String out;
        try (InputStream in = p.getInputStream()) {
            out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), String.join(" ", pb.command()));
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    private static List<String> asNobody(String... command) {
        List<String> c = new ArrayList<>(List.of("setpriv", "--reuid=" + NOBODY, "--regid=" + NOBODY, "--clear-groups"));
        c.addAll(List.of(command));
        return c;
    }

    private static void chmod(Path p, String mode) throws IOException {
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(mode));
    }

    @Test
    void anotherUserCannotReachTheSocketAndIsRefusedWhereTheDirectoryWasOpened() throws Exception {
        try (LoopbackAgents agents = new LoopbackAgents(dir, new int[]{0, 0}, Algorithm.RING, 1 << 16,
                Duration.ofSeconds(60)).awaitSockets(Duration.ofSeconds(30))) {
            Path socket = agents.sockets.get(0);
            String blocked = run(asNobody("/usr/bin/python3", "-c", STRANGER, socket.toString()));
            assertTrue(blocked.startsWith("CONNECT PermissionError"), "the 0700 directory keeps nobody out: " + blocked);

            chmod(dir, "rwx--x--x"); // as an operator might: now only the uid check stands between
            chmod(socket, "rwxrwxrwx");
            String refused = run(asNobody("/usr/bin/python3", "-c", STRANGER, socket.toString()));
            assertTrue(refused.contains("REPLY") && refused.contains("this agent serves its own user only; refused user nobody")
                    && refused.contains("CLOSED"), refused);
            assertFalse(agents.exits.get(0).isDone(), "a refused stranger does not end the agent's service");

            try (AgentTestClient own = new AgentTestClient(socket)) {
                AgentTestClient.Reply hello = own.send(AgentTestClient.hello(1, AgentProtocol.VERSION));
                assertTrue(hello.ok(), "its own user is still served: " + hello.message());
            }
            assertEquals(RankAgent.EXIT_CLIENT_LOST, agents.exits.get(0).get(30, TimeUnit.SECONDS));
        }
    }

    @Test
    void theAgentRefusesADirectoryOpenToOthersAndAPathAnotherUserBound() throws Exception {
        Path open = Files.createDirectory(dir.resolve("open"));
        chmod(open, "rwxrwxrwx");
        try (LoopbackAgents agents = new LoopbackAgents(open, new int[]{0, 0}, Algorithm.RING, 1 << 16,
                Duration.ofSeconds(10))) {
            for (int r = 0; r < 2; r++) {
                int rank = r;
                var e = assertThrows(ExecutionException.class, () -> agents.exits.get(rank).get(30, TimeUnit.SECONDS));
                assertTrue(e.getCause().getMessage().contains("has mode rwxrwxrwx, not rwx------"), e.toString());
            }
            assertFalse(Files.exists(agents.sockets.get(0), LinkOption.NOFOLLOW_LINKS), "nothing bound there");
        }

        Path taken = Files.createDirectory(dir.resolve("taken"));
        chmod(dir, "rwx--x--x");
        chmod(taken, "rwxrwxrwx"); // open for a moment: nobody binds rank 1's path, then it is closed again
        Path theirs = taken.resolve("rank1.sock");
        run(asNobody("/usr/bin/python3", "-c", "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])",
                theirs.toString()));
        chmod(taken, "rwx------");
        assertEquals("nobody", Files.getOwner(theirs, LinkOption.NOFOLLOW_LINKS).getName());
        try (LoopbackAgents agents = new LoopbackAgents(taken, new int[]{0, 0}, Algorithm.RING, 1 << 16,
                Duration.ofSeconds(10))) {
            var e = assertThrows(ExecutionException.class, () -> agents.exits.get(1).get(30, TimeUnit.SECONDS));
            assertTrue(e.getCause().getMessage().contains("was bound by nobody, not by root: not used"), e.toString());
            assertEquals("nobody", Files.getOwner(theirs, LinkOption.NOFOLLOW_LINKS).getName(), "left as it was");
        }
    }

    @Test
    void theClientRefusesAnotherUsersAgentAndEverySegmentButTheAgentsOwn() throws Exception {
        chmod(dir, "rwx--x--x"); // nobody's stand-in agent binds in a directory of its own inside
        Path script = dir.resolve("client_checks.py");
        try (InputStream in = AgentPrivacyTest.class.getResourceAsStream("/agent/client_checks.py")) {
            Files.copy(in, script);
        }
        ProcessBuilder pb = new ProcessBuilder(PythonRank.INTERPRETER, script.toString(), dir.toString());
        pb.environment().put("PYTHONPATH", PythonRank.packageRoot().toString());
        pb.environment().put("OMP_NUM_THREADS", "1");
        String out = run(pb);
        System.out.print(out.indent(2));
        for (String refused : List.of("peer of uid 65534: AgentError: the process serving",
                "connection-level error: AgentError: xaf agent: request: this agent serves its own user only",
                "symlink in /dev/shm to a file elsewhere: AgentError", "file outside /dev/shm: AgentError",
                "path climbing out of /dev/shm: AgentError", "segment of mode 0644: AgentError",
                "segment of uid 65534: AgentError", "segment smaller than announced: AgentError")) {
            assertTrue(out.contains("REFUSED " + refused), refused + "\n" + out);
        }
        assertEquals(1, out.lines().filter(l -> l.startsWith("ACCEPTED")).count(), out);
        assertTrue(out.contains("ACCEPTED the agent's own segment\nRANK 0\nDONE"), out);
    }
}
