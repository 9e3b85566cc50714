package io.xaforward.cluster.agent;

import io.xaforward.cluster.RankRuntime;
import io.xaforward.collective.CollectiveException;
import io.xaforward.collective.Collectives;
import io.xaforward.collective.WireDtype;

import java.io.EOFException;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.zip.CRC32;
import jdk.net.ExtendedSocketOptions;
import jdk.net.UnixDomainPrincipal;

import static io.xaforward.cluster.agent.AgentProtocol.*;

/**
 * What {@code xaf agent} does once its rank has joined the job: serves exactly one training process on a Unix socket
 * ({@link AgentProtocol}), running its collectives with the rank's {@link Collectives} on tensors in a
 * {@link SharedSegment}.
 *
 * <p>Threads: one reader per connection parses and checks requests and answers bad ones at once; a checker runs
 * each request's order check (below) ahead of the executor; one executor runs the collectives strictly in the order
 * they arrived (several may be queued: the training process starts a bucket's all-reduce while its backward pass
 * still runs) and answers each when its result is in place.
 *
 * <p>Every rank must issue the same collectives in the same order. Before each one the ranks all-reduce a small
 * fingerprint (kind, op or root, count, name) with fp32 on the wire, so a rank that issued something else is
 * named in an error reply on every rank instead of a hang or a silently wrong sum.
 *
 * <p>Ends ({@link #serve}'s {@link Outcome}): {@code bye} from the client (after a barrier with every rank), the
 * client's connection lost without bye (the process died or closed the socket), or the listening socket failing.
 */
public final class AgentServer implements AutoCloseable {
    /** Who this agent's rank is, as the hello reply tells the training process. */
    public record Identity(int rank, int size, int localRank) {}

    /** How serving ended. */
    public enum Outcome {
        /** The training process said bye; every rank passed the final barrier. */
        BYE,
        /** The training process went away without bye (it died, or closed its socket): the agent leaves the job. */
        CLIENT_LOST,
        /** No training process said hello in time (its launch failed): the agent leaves the job. */
        NO_CLIENT
    }

    /** How long a refused peer's connection stays open for it to read why. */
    private static final Duration REFUSAL_LINGER = Duration.ofSeconds(2);

    /** Floats of one rank's fingerprint in the order check. */
    private static final int FINGERPRINT = 5;

    private final RankRuntime runtime;
    private final Collectives collectives;
    /** The order check's own collectives: fp32 on the wire whatever the job's, so fingerprints stay exact. */
    private final Collectives check;
    private final Identity identity;
    private final SharedSegment shm;
    private final Path socketPath;
    private final PrintStream log;
    private final ServerSocketChannel server;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment fingerprints;
    private final BlockingQueue<Job> queue = new LinkedBlockingQueue<>();
    private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
    /** Byte ranges of the segment that queued or running collectives use: a new request may not overlap them. */
    private final Set<Job> inFlight = ConcurrentHashMap.newKeySet();
    private final CompletableFuture<Outcome> end = new CompletableFuture<>();

    /** The connection that said hello first: the one training process this agent serves. */
    private volatile Connection served;
    private volatile boolean closed;
    /** The final barrier passed: the client hanging up now is the normal end, not a lost client. */
    private volatile boolean saidBye;
    /** Requests whose order check ran, in arrival order, for the executor. */
    private final BlockingQueue<Checked> checked = new LinkedBlockingQueue<>();
    /** Collectives numbered so far (the checker's). */
    private int sequence;
    /** The first collective failure: the group is then unusable, and every later request is answered with it. */
    private volatile RuntimeException failure;
    private Thread checker;
    private Thread executor;
    private Thread acceptor;

    private record Job(Connection from, Request request) {}

    /** A job whose order check ran: a mismatch to answer, the check's own failure, or neither. */
    private record Checked(Job job, int seq, String mismatch, RuntimeException failure) {}

    private final class Connection {
        final SocketChannel channel;
        long pid = -1;

        Connection(SocketChannel channel) {
            this.channel = channel;
        }

        /** Writes one reply; a client that has gone away is noticed by its reader, not here. */
        void send(ByteBuffer frame) {
            synchronized (this) {
                try {
                    while (frame.hasRemaining()) channel.write(frame);
                } catch (IOException e) {
                    // the reader sees the closed connection and ends it
                }
            }
        }
    }

    private AgentServer(RankRuntime runtime, Identity identity, SharedSegment shm, Path socketPath, PrintStream log,
                        ServerSocketChannel server) {
        this.runtime = runtime;
        this.collectives = runtime.collectives();
        this.check = new Collectives(collectives.group(), runtime.transport(),
                collectives.config().withWireDtype(WireDtype.FP32));
        this.identity = identity;
        this.shm = shm;
        this.socketPath = socketPath;
        this.log = log;
        this.server = server;
        this.fingerprints = arena.allocate((long) FINGERPRINT * identity.size() * Float.BYTES, 8);
    }

    /**
     * Listens on {@code socketPath} (mode 0600), which must lie in a {@link PrivateDirectory}. A socket file left by
     * an agent of this user that is gone is replaced; one that another process still serves, or that another user
     * bound, is an error.
     */
    public static AgentServer open(RankRuntime runtime, Identity identity, SharedSegment shm, Path socketPath,
                                   PrintStream log) throws IOException {
        int limit = 106; // sun_path holds 108 bytes, the last one a NUL; one more is the temporary name's "~"
        if (socketPath.toString().getBytes(StandardCharsets.UTF_8).length > limit) {
            throw new IllegalArgumentException("--socket " + socketPath + " is longer than the " + limit
                    + " bytes a Unix socket path may have");
        }
        PrivateDirectory.requirePrivate(socketPath.toAbsolutePath().getParent(), "--socket's directory");
        if (Files.exists(socketPath, LinkOption.NOFOLLOW_LINKS)) {
            if (!isSocket(socketPath)) { // only a socket left by an earlier agent is ever replaced
                throw new IllegalArgumentException("--socket " + socketPath + " exists and is not a socket");
            }
            UserPrincipal owner = PrivateDirectory.owner(socketPath);
            if (!owner.equals(PrivateDirectory.currentUser())) { // bound while the directory was open to others
                throw new IllegalStateException("--socket " + socketPath + " was bound by " + owner.getName()
                        + ", not by " + PrivateDirectory.currentUser().getName() + ": not used (remove it)");
            }
            boolean live;
            try (SocketChannel probe = SocketChannel.open(UnixDomainSocketAddress.of(socketPath))) {
                live = true;
            } catch (IOException e) {
                live = false;
            }
            if (live) throw new IllegalStateException("another process serves " + socketPath);
            Files.delete(socketPath);
        }
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        // Bound under a temporary name, then renamed: the socket appears at its path only when it is accepting. The
        // directory keeps other users out from the bind on; 0600 is kept as a second fence.
        Path bound = socketPath.resolveSibling(socketPath.getFileName() + "~");
        try {
            if (Files.exists(bound, LinkOption.NOFOLLOW_LINKS) && !isSocket(bound)) {
                throw new IllegalArgumentException(bound + " (the socket's temporary name) exists and is not a socket");
            }
            Files.deleteIfExists(bound);
            server.bind(UnixDomainSocketAddress.of(bound));
            Files.setPosixFilePermissions(bound, PosixFilePermissions.fromString("rw-------"));
            Files.move(bound, socketPath, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            server.close();
            if (isSocket(bound)) Files.delete(bound);
            throw e;
        }
        return new AgentServer(runtime, identity, shm, socketPath, log, server);
    }

    public Path socketPath() { return socketPath; }

    /** Whether {@code path} is a Unix socket (not following links); false when it does not exist. */
    static boolean isSocket(Path path) throws IOException {
        if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) return false;
        int mode = (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        return (mode & 0170000) == 0140000; // S_IFMT, S_IFSOCK
    }

    /**
     * Serves until the training process says bye or goes away, or until {@code helloTimeout} passes without one
     * saying hello; see {@link Outcome}.
     */
    public Outcome serve(Duration helloTimeout) throws InterruptedException {
        checker = Thread.ofPlatform().name("xaf-agent-order-check").daemon().start(this::runChecks);
        executor = Thread.ofPlatform().name("xaf-agent-collectives").daemon().start(this::runCollectives);
        acceptor = Thread.ofPlatform().name("xaf-agent-accept").daemon().start(this::accept);
        try {
            try {
                return end.get(helloTimeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                synchronized (this) {
                    if (served == null) {
                        log.println("xaf agent: rank " + identity.rank() + ": no training process said hello on "
                                + socketPath + " within " + helloTimeout.toSeconds() + " s; leaving the job");
                        end.complete(Outcome.NO_CLIENT);
                    }
                }
            }
            return end.get();
        } catch (ExecutionException e) {
            throw new IllegalStateException("the agent's socket failed: " + e.getCause().getMessage(), e.getCause());
        }
    }

    private void accept() {
        while (!closed) {
            SocketChannel channel;
            try {
                channel = server.accept();
            } catch (IOException e) {
                if (!closed) end.completeExceptionally(e);
                return;
            }
            String stranger = stranger(channel);
            if (stranger != null) {
                log.println("xaf agent: rank " + identity.rank() + ": refused a connection from " + stranger);
                Thread.ofVirtual().name("xaf-agent-refuse").start(() -> refuse(channel, stranger));
                continue;
            }
            connections.add(channel);
            Thread.ofVirtual().name("xaf-agent-connection").start(() -> read(new Connection(channel)));
        }
    }

    /**
     * Who is on the other end of {@code channel} when it is not this process's user (SO_PEERCRED, as the kernel saw
     * them at connect), else null. The private directory already keeps others away; this holds even where an
     * operator opened it.
     */
    private static String stranger(SocketChannel channel) {
        try {
            UnixDomainPrincipal peer = channel.getOption(ExtendedSocketOptions.SO_PEERCRED);
            return peer.user().equals(PrivateDirectory.currentUser()) ? null : "user " + peer.user().getName();
        } catch (IOException | RuntimeException e) {
            return "a peer whose credentials could not be read (" + e.getMessage() + ")";
        }
    }

    /**
     * Tells a refused peer why, then hangs up. What it sent is read and dropped first (one frame's worth, for at
     * most {@link #REFUSAL_LINGER}): closing over unread bytes resets the connection, and it would see that instead.
     */
    private void refuse(SocketChannel channel, String stranger) {
        Thread closer = Thread.ofVirtual().start(() -> {
            try {
                Thread.sleep(REFUSAL_LINGER);
            } catch (InterruptedException done) {
                // it hung up first
            }
            try {
                channel.close();
            } catch (IOException ignored) {
                // refused either way
            }
        });
        try (channel) {
            ByteBuffer reason = error(0, 0, "this agent serves its own user only; refused " + stranger);
            while (reason.hasRemaining()) channel.write(reason);
            channel.shutdownOutput();
            ByteBuffer dropped = ByteBuffer.allocate(4 + MAX_FRAME);
            int read;
            do {
                read = channel.read(dropped); // until it hangs up, or a frame's worth
            } while (read >= 0 && dropped.hasRemaining());
        } catch (IOException ignored) {
            // refused either way
        } finally {
            closer.interrupt();
        }
    }

    /** Reads the requests of one connection until it closes or its framing breaks. */
    private void read(Connection c) {
        ByteBuffer length = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer body = ByteBuffer.allocate(MAX_FRAME).order(ByteOrder.LITTLE_ENDIAN);
        try {
            while (!closed) {
                length.clear();
                if (!fill(c.channel, length, true)) break; // closed between frames
                int size = length.flip().getInt();
                if (size < 0 || size > MAX_FRAME) {
                    // The length cannot be trusted, so neither can anything after it: say why, then hang up.
                    c.send(error(0, 0, "frame length " + Integer.toUnsignedLong(size) + " exceeds the "
                            + MAX_FRAME + "-byte limit; closing this connection"));
                    break;
                }
                body.clear().limit(size);
                if (!fill(c.channel, body, false)) break;
                body.flip();
                try {
                    handle(c, parse(body));
                } catch (BadRequest e) {
                    c.send(error(e.type, e.id, e.getMessage()));
                }
            }
        } catch (IOException e) {
            // a connection cut mid-frame ends like one closed between frames
        } finally {
            connections.remove(c.channel);
            try {
                c.channel.close();
            } catch (IOException ignored) {
                // closing a socket that failed
            }
            if (served == c && !saidBye && !end.isDone()) {
                log.println("xaf agent: rank " + identity.rank() + ": the training process (pid " + c.pid
                        + ") closed its connection without bye; leaving the job");
                end.complete(Outcome.CLIENT_LOST);
            }
        }
    }

    /** Reads until {@code b} is full; false on end of stream before the first byte when {@code atBoundary}. */
    private static boolean fill(SocketChannel ch, ByteBuffer b, boolean atBoundary) throws IOException {
        boolean first = true;
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                if (first && atBoundary && b.position() == 0) return false;
                throw new EOFException("connection closed inside a frame");
            }
            first = false;
        }
        return true;
    }

    private void handle(Connection c, Request r) throws BadRequest {
        if (r.type() == HELLO) {
            hello(c, r);
            return;
        }
        if (served != c) {
            throw new BadRequest(r.type(), r.id(), served == null ? "send hello first"
                    : "this agent serves another process (pid " + served.pid + ")");
        }
        if (r.type() == ALLREDUCE || r.type() == BROADCAST) checkRange(r);
        if (r.type() == BROADCAST && (r.arg() < 0 || r.arg() >= identity.size())) {
            throw new BadRequest(r.type(), r.id(), "broadcast root " + r.arg() + " is outside 0.." + (identity.size() - 1));
        }
        Job job = new Job(c, r);
        if (r.bytes() > 0) {
            synchronized (inFlight) {
                for (Job other : inFlight) {
                    Request o = other.request();
                    if (r.offset() < o.offset() + o.bytes() && o.offset() < r.offset() + r.bytes()) {
                        throw new BadRequest(r.type(), r.id(), "bytes " + r.offset() + ".." + (r.offset() + r.bytes())
                                + " overlap request " + Integer.toUnsignedString(o.id()) + " (" + o.describe()
                                + "), still in flight");
                    }
                }
                inFlight.add(job);
            }
        }
        queue.add(job);
    }

    private void hello(Connection c, Request r) throws BadRequest {
        synchronized (this) {
            if (served == c) throw new BadRequest(HELLO, r.id(), "hello was already sent on this connection");
            if (served != null) {
                throw new BadRequest(HELLO, r.id(), "this agent already serves pid " + served.pid
                        + " (one training process per agent)");
            }
            if (end.isDone()) throw new BadRequest(HELLO, r.id(), "this agent is leaving the job");
            if (r.version() != VERSION) {
                throw new BadRequest(HELLO, r.id(), "protocol version " + r.version() + " is not spoken here (this agent: "
                        + VERSION + ")");
            }
            c.pid = r.pid();
            served = c;
        }
        log.println("xaf agent: rank " + identity.rank() + " serves pid " + r.pid());
        c.send(AgentProtocol.hello(r.id(), identity.rank(), identity.size(), identity.localRank(), shm.bytes(),
                shm.file().toAbsolutePath().toString()));
    }

    private void checkRange(Request r) throws BadRequest {
        String what = typeName(r.type());
        if (r.offset() < 0 || r.offset() % Float.BYTES != 0) {
            throw new BadRequest(r.type(), r.id(), what + " offset " + Long.toUnsignedString(r.offset())
                    + " is not a multiple of 4 inside the shared segment");
        }
        if (r.offset() > shm.bytes() || r.bytes() > shm.bytes() - r.offset()) {
            throw new BadRequest(r.type(), r.id(), what + " of " + r.count() + " floats at offset " + r.offset()
                    + " ends at byte " + (r.offset() + r.bytes()) + ", past the shared segment's " + shm.bytes() + " bytes");
        }
    }

    /**
     * The checker: runs each queued request's order check ({@link #checkOrder}) and hands it on to the executor. It
     * runs ahead of the executor, so the check of a queued bucket overlaps the all-reduce of the one before it (the
     * two use their own {@link Collectives} over the same transport, with distinct step numbers).
     */
    private void runChecks() {
        while (true) {
            Job job;
            try {
                job = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            int seq = sequence++;
            String mismatch = null;
            RuntimeException failed = null;
            if (failure == null) { // after a failure nothing is checked: every request is answered with it at once
                try {
                    mismatch = checkOrder(job.request(), seq);
                } catch (RuntimeException e) {
                    failed = e;
                }
            }
            checked.add(new Checked(job, seq, mismatch, failed));
        }
    }

    /** The executor: runs the checked collectives one at a time, in arrival order, and answers each. */
    private void runCollectives() {
        while (true) {
            Checked c;
            try {
                c = checked.take();
            } catch (InterruptedException e) {
                return;
            }
            Job job = c.job();
            Request r = job.request();
            String error;
            try {
                if (c.failure() != null) throw c.failure();
                error = failure != null ? "the job's collectives failed earlier (" + describe(failure)
                        + "); this agent can only leave the job" : c.mismatch() != null ? c.mismatch() : run(r, c.seq());
            } catch (RuntimeException e) {
                failure = e;
                error = describe(e);
            } catch (InterruptedException e) {
                return;
            } finally {
                synchronized (inFlight) {
                    inFlight.remove(job); // before the reply: the client may reuse the bytes as soon as it reads it
                }
            }
            boolean bye = error == null && r.type() == BYE;
            if (bye) saidBye = true; // before the reply: the client may hang up as soon as it has read it
            job.from().send(error == null ? ok(r.type(), r.id()) : AgentProtocol.error(r.type(), r.id(), error));
            if (bye) {
                end.complete(Outcome.BYE);
                return;
            }
        }
    }

    /** Runs collective number {@code seq}, whose order check passed; null when done. */
    private String run(Request r, int seq) throws InterruptedException {
        MemorySegment data = r.bytes() > 0 ? shm.memory().asSlice(r.offset(), r.bytes()) : null;
        switch (r.type()) {
            case ALLREDUCE -> {
                if (r.count() > 0) collectives.allReduce(data, r.count(),
                        r.arg() == OP_SUM ? Collectives.Op.SUM : Collectives.Op.MEAN, 2 * seq);
            }
            case BROADCAST -> {
                if (r.count() > 0) collectives.broadcast(data, r.arg());
            }
            case BARRIER -> collectives.barrier();
            case BYE -> runtime.finish("pid", served.pid);
            default -> throw new IllegalStateException("request type " + r.type() + " reached the executor");
        }
        return null;
    }

    /**
     * All-reduces every rank's fingerprint of collective number {@code seq} (each rank writes its own slots, the
     * others stay zero, so the sum is every rank's fingerprint side by side, exact in fp32) and compares them.
     */
    private String checkOrder(Request r, int seq) {
        int n = identity.size();
        int[] mine = fingerprint(r);
        fingerprints.fill((byte) 0);
        for (int i = 0; i < FINGERPRINT; i++) {
            fingerprints.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, (long) identity.rank() * FINGERPRINT + i, mine[i]);
        }
        check.allReduce(fingerprints, FINGERPRINT * n, Collectives.Op.SUM, 2 * seq + 1);
        List<String> differ = new ArrayList<>();
        for (int rank = 0; rank < n; rank++) {
            int[] theirs = new int[FINGERPRINT];
            for (int i = 0; i < FINGERPRINT; i++) {
                theirs[i] = (int) fingerprints.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, (long) rank * FINGERPRINT + i);
            }
            if (!Arrays.equals(mine, theirs)) differ.add("rank " + rank + " issued " + describe(theirs));
        }
        if (differ.isEmpty()) return null;
        return "collective #" + seq + " differs across ranks: this rank (" + identity.rank() + ") issued " + r.describe()
                + ", " + String.join(", ", differ) + " (every rank must issue the same collectives in the same order)";
    }

    /** Kind, op or root, count in two 16-bit halves, a 24-bit hash of the name: every value exact as a float. */
    private static int[] fingerprint(Request r) {
        CRC32 crc = new CRC32();
        crc.update(r.name().getBytes(StandardCharsets.UTF_8));
        return new int[]{r.type(), r.arg(), r.count() >>> 16, r.count() & 0xFFFF, (int) (crc.getValue() & 0xFFFFFF)};
    }

    private static String describe(int[] f) {
        String count = Integer.toString(f[2] << 16 | f[3]);
        String name = String.format(" (name hash %06x)", f[4]);
        return switch (f[0]) {
            case ALLREDUCE -> "allreduce of " + count + " floats (" + (f[1] == OP_SUM ? "sum" : "average") + ")" + name;
            case BROADCAST -> "broadcast of " + count + " words from rank " + f[1] + name;
            default -> typeName(f[0]);
        };
    }

    private static String describe(RuntimeException e) {
        String kind = e instanceof CollectiveException ce && ce.rank() >= 0
                ? e.getClass().getSimpleName() + " (rank " + ce.rank() + ")" : e.getClass().getSimpleName();
        return kind + ": " + e.getMessage();
    }

    /** Stops listening, hangs up every connection and removes the socket file. The caller closes the runtime. */
    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // the listening socket is going away either way
        }
        for (SocketChannel c : connections) {
            try {
                c.close();
            } catch (IOException ignored) {
                // as above
            }
        }
        boolean idle = true;
        for (Thread t : new Thread[]{checker, executor}) {
            if (t == null) continue;
            t.interrupt();
            try {
                t.join(1000); // a collective still running ends once its owner closes the transport
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            idle &= !t.isAlive();
        }
        try {
            Files.deleteIfExists(socketPath);
        } catch (IOException e) {
            log.println("xaf agent: could not remove " + socketPath + ": " + e.getMessage());
        }
        if (idle) {
            check.close();
            arena.close();
        }
    }
}
