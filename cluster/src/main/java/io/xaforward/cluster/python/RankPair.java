package io.xaforward.cluster.python;

import io.xaforward.cluster.WorkerLine;
import io.xaforward.cluster.agent.PrivateDirectory;
import io.xaforward.cluster.agent.RankAgent;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * One rank of a PyTorch job: its agent ({@code xaf agent}, the Java process that joins the job and runs the
 * collectives) and the user's script beside it, which reaches the agent through a Unix socket. The two live and end
 * together: when the script ends, the agent sees its socket close and leaves the job (it is stopped after
 * {@link #AGENT_GRACE} if it does not); when the agent ends first, the script has lost its collectives and is stopped
 * after {@link #SCRIPT_GRACE}, time to print the error its next call got. Used by {@code xaf launch --python} (real
 * hosts) and {@code xaf train --python} (emulated data centers).
 *
 * <p>Use: {@link #startAgent}, then (once every local agent is started: an agent may open its socket only when the
 * whole job has joined) {@link #startScript}, then {@link #await}. The socket lies in a {@link PrivateDirectory}.
 */
public final class RankPair {
    /** How long an agent may take to leave the job after its script ended. */
    public static final Duration AGENT_GRACE = Duration.ofSeconds(20);
    /** How long a script may take to report its agent's end before it is stopped. */
    public static final Duration SCRIPT_GRACE = Duration.ofSeconds(10);
    private static final int KEPT_LINES = 40;

    /**
     * How a rank ended: {@code status} 0 when both processes ended well, else the status of the one that failed
     * first ({@code who}: "script" or "agent"), with the last lines that say why.
     */
    public record Exit(int rank, String who, int status, String reason) {
        public boolean ok() {
            return status == 0;
        }

        /** One line for the launcher's output. */
        public String describe() {
            if (ok()) return "rank " + rank + " finished";
            String how = status > 128 ? "killed by signal " + (status - 128) : "exit " + status;
            return "rank " + rank + ": the " + who + " failed (" + how + ")" + (reason.isEmpty() ? "" : ": " + reason);
        }
    }

    private final int rank;
    private final Path socket;
    private final Path agentLog;
    private final Deque<String> scriptTail = new ArrayDeque<>();
    private Process agent;
    private Process script;
    private Thread scriptReader;

    /**
     * @param socket   the Unix socket the agent serves its script on (removed first if a former run left it)
     * @param agentLog where the agent's output goes
     */
    public RankPair(int rank, Path socket, Path agentLog) {
        this.rank = rank;
        this.socket = socket;
        this.agentLog = agentLog;
    }

    public int rank() {
        return rank;
    }

    /**
     * Starts the agent (its command already wrapped for its namespace and placement), output into its log. The
     * socket's directory must be private ({@link PrivateDirectory}): nobody else may have bound the path.
     */
    public Process startAgent(List<String> command) throws IOException {
        PrivateDirectory.requirePrivate(socket.toAbsolutePath().getParent(), "the agent socket's directory");
        Files.deleteIfExists(socket);
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(agentLog.toFile());
        agent = pb.start();
        return agent;
    }

    /**
     * Waits until the agent is ready, then starts the script in {@code directory} (the user's working directory: paths
     * among its arguments are the user's) with {@code environment} added to this process's; each line it prints
     * (standard output and error) goes to {@code output}. Ready means: the agent printed its {@code agent} line
     * naming this socket (it does once it accepts), the socket is there and is this user's, and the agent still runs.
     * A file at the path alone is not enough: an agent that bound its socket and then failed never starts a script.
     * Fails with the agent's last words when the agent ends first, or when it is not ready within {@code timeout}.
     */
    public Process startScript(List<String> command, Path directory, Map<String, String> environment, Duration timeout,
                               Consumer<String> output) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!agentReady(agentLog, socket)) {
            if (!agent.isAlive()) {
                throw new IllegalStateException("rank " + rank + ": the agent ended (exit " + agent.exitValue()
                        + ") before it was ready; the script was not started: " + lastWords(agentLog)
                        + " (its log: " + agentLog + ")");
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("rank " + rank + ": the agent was not ready on " + socket + " within "
                        + timeout.toSeconds() + " s; the script was not started (its log: " + agentLog + ")");
            }
            Thread.sleep(50);
        }
        if (!agent.isAlive()) { // ready, then gone before the script could start
            throw new IllegalStateException("rank " + rank + ": the agent ended (exit " + agent.exitValue()
                    + ") right after it was ready; the script was not started: " + lastWords(agentLog)
                    + " (its log: " + agentLog + ")");
        }
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).directory(directory.toFile());
        pb.environment().putAll(environment);
        script = pb.start();
        scriptReader = Thread.ofPlatform().daemon(true).name("rank-" + rank + "-script").start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(script.getInputStream()))) {
                for (String line; (line = r.readLine()) != null; ) {
                    synchronized (scriptTail) {
                        scriptTail.addLast(line);
                        if (scriptTail.size() > KEPT_LINES) scriptTail.removeFirst();
                    }
                    output.accept(line);
                }
            } catch (IOException ignored) {
                // the script ended; its exit status tells
            }
        });
        return script;
    }

    /**
     * Blocks until both processes ended (ending the second one as the class says); how the rank ended. The blame
     * does not go by which process the kernel reaped first (a script fails within milliseconds of losing its agent,
     * while a JVM takes longer to exit after closing its socket) but by the agent's status: an agent that ended with
     * {@link RankAgent#EXIT_CLIENT_LOST} left because its script went, so the script is the cause; an agent that
     * failed otherwise is the cause whatever its script did after.
     */
    public Exit await() throws InterruptedException {
        CompletableFuture.anyOf(agent.onExit(), script.onExit()).join();
        boolean agentStopped = false, scriptStopped = false;
        if (agent.isAlive()) {
            if (!agent.waitFor(AGENT_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
                stop(agent);
                agentStopped = true;
            }
        } else if (!script.waitFor(SCRIPT_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
            stop(script);
            scriptStopped = true;
        }
        scriptReader.join(5000);
        int agentStatus = agent.exitValue(), scriptStatus = script.exitValue();
        String agentWords = lastWords(agentLog) + " (its log: " + agentLog + ")";
        if (!agentStopped && agentStatus != 0 && agentStatus != RankAgent.EXIT_CLIENT_LOST) {
            return new Exit(rank, "agent", agentStatus, agentWords);
        }
        if (scriptStatus != 0) {
            return new Exit(rank, "script", scriptStatus, scriptStopped ? "it still ran " + SCRIPT_GRACE.toSeconds()
                    + " s after its agent ended: stopped" : lastWords(scriptLines()));
        }
        if (agentStopped) {
            return new Exit(rank, "agent", 1, "it did not leave the job within " + AGENT_GRACE.toSeconds()
                    + " s of the script's end (its log: " + agentLog + ")");
        }
        return agentStatus == 0 ? new Exit(rank, "", 0, "") : new Exit(rank, "agent", agentStatus, agentWords);
    }

    /**
     * Awaits every pair and reports each end on {@code out} as it comes. After the first failure the other ranks are
     * given {@code graceAfterFailure} to end on their own (their agents' all-reduce fails within its operation
     * timeout, and each script reports that), then whatever still runs is stopped. Returns the ends in rank order.
     */
    public static List<Exit> awaitAll(List<RankPair> pairs, Duration graceAfterFailure, PrintStream out)
            throws InterruptedException {
        BlockingQueue<Exit> exits = new LinkedBlockingQueue<>();
        for (RankPair pair : pairs) {
            Thread.ofPlatform().daemon(true).name("rank-" + pair.rank() + "-pair").start(() -> {
                try {
                    exits.add(pair.await());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
        Map<Integer, Exit> ended = new TreeMap<>();
        long deadline = Long.MAX_VALUE;
        while (ended.size() < pairs.size()) {
            Exit e = deadline == Long.MAX_VALUE ? exits.take()
                    : exits.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (e == null) break;
            ended.put(e.rank(), e);
            synchronized (out) {
                out.println("xaf: " + e.describe());
            }
            if (!e.ok() && deadline == Long.MAX_VALUE) deadline = System.nanoTime() + graceAfterFailure.toNanos();
        }
        List<Exit> all = new ArrayList<>();
        for (RankPair p : pairs) {
            Exit e = ended.get(p.rank());
            if (e == null) {
                p.stop();
                e = new Exit(p.rank(), "script", 1, "still running " + graceAfterFailure.toSeconds()
                        + " s after another rank failed: stopped");
                synchronized (out) {
                    out.println("xaf: " + e.describe());
                }
            }
            all.add(e);
        }
        return all;
    }

    /** Stops both processes now (SIGTERM, then SIGKILL): the launcher's end on Ctrl-C or a failure elsewhere. */
    public void stop() {
        if (script != null) stop(script);
        if (agent != null) stop(agent);
    }

    private static void stop(Process p) {
        p.destroy();
        try {
            if (!p.waitFor(5, TimeUnit.SECONDS)) p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Whether an agent is ready to serve on {@code socket}: its log holds its {@code agent} line for that socket
     * (printed once the socket accepts) and the socket is there, a socket of this user. The caller checks, after
     * this, that the agent still runs.
     */
    public static boolean agentReady(Path agentLog, Path socket) throws IOException {
        return announced(agentLog, socket) && ownSocket(socket);
    }

    private static boolean announced(Path agentLog, Path socket) throws IOException {
        if (!Files.exists(agentLog)) return false;
        String expected = socket.toAbsolutePath().toString().replace(' ', '_');
        for (String line : Files.readAllLines(agentLog, StandardCharsets.ISO_8859_1)) { // never fails on bytes
            WorkerLine w = WorkerLine.parse(line);
            if (w != null && w.kind().equals("agent") && expected.equals(w.values().get("socket"))) return true;
        }
        return false;
    }

    /** Whether the socket exists, is a socket, and belongs to this user (not following links). */
    private static boolean ownSocket(Path socket) throws IOException {
        if (!Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) return false;
        int mode = (Integer) Files.getAttribute(socket, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        return (mode & 0170000) == 0140000 && Files.getOwner(socket, LinkOption.NOFOLLOW_LINKS)
                .equals(PrivateDirectory.currentUser());
    }

    private List<String> scriptLines() {
        synchronized (scriptTail) {
            return List.copyOf(scriptTail);
        }
    }

    private static String lastWords(Path log) {
        try {
            return lastWords(Files.readAllLines(log));
        } catch (IOException e) {
            return "no output";
        }
    }

    /**
     * The line that says why a process failed: its last "xaf: ..." line, else the last line naming an error (a Python
     * traceback ends with one), else its last line.
     */
    static String lastWords(List<String> lines) {
        List<String> kept = lines.stream().map(String::strip).filter(l -> !l.isEmpty()).toList();
        for (int i = kept.size() - 1; i >= 0; i--) if (kept.get(i).startsWith("xaf: ")) return kept.get(i).substring(5);
        for (int i = kept.size() - 1; i >= 0; i--) {
            String l = kept.get(i);
            if (!l.startsWith("at ") && !l.startsWith("File ") && (l.contains("Error") || l.contains("Exception"))) return l;
        }
        return kept.isEmpty() ? "no output" : kept.getLast();
    }
}
