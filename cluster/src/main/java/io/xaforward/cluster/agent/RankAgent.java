package io.xaforward.cluster.agent;

import io.xaforward.cluster.RankRuntime;
import io.xaforward.cluster.deploy.JoinSpec;
import io.xaforward.cluster.deploy.WorldSource;
import io.xaforward.cluster.world.RankAddress;
import io.xaforward.cluster.world.World;
import io.xaforward.cluster.world.WorldNetwork;
import io.xaforward.collective.Collectives;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * {@code xaf agent}: one rank of a job whose training runs in another process (PyTorch through
 * {@code python/xaforward}). Joins the job as {@code xaf worker} does (its {@link WorldSource}, then
 * {@link RankRuntime#join}: per-run keys, wire security, pacing, its transport and collectives), waits until every rank is up, then creates the shared segment and the
 * socket and serves the one training process ({@link AgentServer}) until it says bye or goes away.
 *
 * <p>The socket appears only once the whole job has joined, and the {@code agent} line is printed once it accepts: a
 * launcher starts the training process after that line (and while the agent still runs), not merely when a file
 * appears.
 */
public final class RankAgent {
    /**
     * What the agent adds to how it joins the job.
     *
     * @param socket    the Unix socket to listen on; null: {@link #defaultSocket}
     * @param shmBytes  size of the shared tensor segment
     * @param localRank this rank's index on its host; null: counted from the world (ranks before it at the same address)
     */
    public record Settings(Path socket, long shmBytes, Integer localRank) {}

    /** Exit status of an agent whose training process went away without bye, or never said hello. */
    public static final int EXIT_CLIENT_LOST = 3;

    private final JoinSpec o;
    private final Settings s;
    private final PrintStream out;

    public RankAgent(JoinSpec join, Settings settings, PrintStream out) {
        this.o = join;
        this.s = settings;
        this.out = out;
    }

    /**
     * A socket path in a fresh {@link PrivateDirectory} (under $XDG_RUNTIME_DIR when set, else the temporary
     * directory, with a name no one can guess beforehand): the agent line says where.
     */
    public static Path defaultSocket(int job, int rank) throws IOException {
        return PrivateDirectory.create("xaf-agent-job" + job + "-rank" + rank + "-").resolve("agent.sock");
    }

    /** Runs the agent; returns the process's exit status (0 after bye, {@link #EXIT_CLIENT_LOST}). */
    public int run(WorldSource source) throws Exception {
        if (s.shmBytes() < Float.BYTES || s.shmBytes() % Float.BYTES != 0) {
            throw new IllegalArgumentException("--shm-bytes must be a positive multiple of 4, was " + s.shmBytes());
        }
        World world = source.join(o);
        WorldNetwork net = new WorldNetwork(world, o.rank(), o.iface());
        int localRank = s.localRank() != null ? s.localRank() : localRank(world, o.rank());
        Path socket = s.socket() != null ? s.socket() : defaultSocket(o.jobId(), o.rank());
        Path madeDirectory = s.socket() != null ? null : socket.getParent();
        Path shm = SharedSegment.defaultPath(o.jobId(), o.rank());
        // Stopped by a signal (a launcher's SIGTERM, Ctrl-C), the agent still removes its files: a segment left in
        // /dev/shm would hold memory until the next reboot.
        Thread cleanup = new Thread(() -> {
            try {
                if (AgentServer.isSocket(socket)) Files.delete(socket); // never a file of the user's at that path
                Files.deleteIfExists(shm);
                if (madeDirectory != null) PrivateDirectory.removeIfEmpty(madeDirectory);
            } catch (IOException e) {
                System.err.println("xaf agent: could not remove " + socket + " or " + shm + ": " + e.getMessage());
            }
        }, "xaf-agent-cleanup");
        Runtime.getRuntime().addShutdownHook(cleanup);
        try (RankRuntime runtime = RankRuntime.join(net, o, out)) {
            awaitEveryRank(runtime, o.startTimeout());
            runtime.warmUp(RankRuntime.WARM_UP_MAX_FLOATS); // the script's tensors are not known yet
            return serve(runtime, new AgentServer.Identity(o.rank(), world.worldSize(), localRank), socket, shm,
                    s.shmBytes(), o.startTimeout());
        } finally {
            if (madeDirectory != null) PrivateDirectory.removeIfEmpty(madeDirectory); // the socket is gone by now
            try {
                Runtime.getRuntime().removeShutdownHook(cleanup);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs anyway
            }
        }
    }

    /**
     * Serves the training process on {@code socket} with a fresh segment at {@code shmPath}, after the rank has
     * joined, waiting up to {@code helloTimeout} for it to say hello; prints the {@code agent} line (socket, segment) once both exist. Leaves the job on the outcome:
     * after bye the runtime's finish has run; when the client was lost the transport is closed at once, so the
     * other ranks' collectives fail naming this rank. Returns the exit status.
     */
    public static int serve(RankRuntime runtime, AgentServer.Identity identity, Path socket, Path shmPath,
                            long shmBytes, Duration helloTimeout) throws Exception {
        try (SharedSegment shm = SharedSegment.create(shmPath, shmBytes)) {
            AgentServer server = AgentServer.open(runtime, identity, shm, socket, System.err);
            try {
                runtime.report("agent", "rank", identity.rank(), "size", identity.size(), "local_rank",
                        identity.localRank(), "socket", socket.toAbsolutePath(), "shm", shm.file(), "shm_bytes", shmBytes);
                AgentServer.Outcome outcome = server.serve(helloTimeout);
                if (outcome != AgentServer.Outcome.BYE) {
                    runtime.transport().close(); // a collective still running fails now, not at its timeout
                    return EXIT_CLIENT_LOST;
                }
                return 0;
            } finally {
                server.close(); // removes the socket it created (and only that)
            }
        }
    }

    /**
     * Waits until every rank is up: a one-float sum that must come to the world size, on its own collectives with
     * the start timeout and a step number the served collectives never use.
     */
    static void awaitEveryRank(RankRuntime runtime, Duration startTimeout) {
        float ranks = runtime.startUp(startTimeout, start -> {
            MemorySegment one = MemorySegment.ofArray(new float[]{1f});
            start.allReduce(one, 1, Collectives.Op.SUM, -1);
            return one.getAtIndex(ValueLayout.JAVA_FLOAT, 0);
        });
        if (ranks != runtime.collectives().group().worldSize()) {
            throw new IllegalStateException("the start-up sum over all ranks came to " + ranks + ", not the world size "
                    + runtime.collectives().group().worldSize());
        }
    }

    /** Ranks before {@code rank} that live at the same address: torchrun's LOCAL_RANK for one host. */
    static int localRank(World world, int rank) {
        RankAddress self = world.rank(rank);
        int local = 0;
        for (int r = 0; r < rank; r++) {
            RankAddress other = world.rank(r);
            if (other.ip().equals(self.ip()) && other.mac().equals(self.mac())) local++;
        }
        return local;
    }
}
