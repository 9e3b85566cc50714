package io.xaforward.cluster.agent;

import io.xaforward.cluster.RankRuntime;
import io.xaforward.cluster.RankWiring;
import io.xaforward.collective.Algorithm;
import io.xaforward.collective.CollectiveConfig;
import io.xaforward.collective.CollectiveGroup;
import io.xaforward.transport.AddressBook;
import io.xaforward.transport.LoopbackNetwork;
import io.xaforward.transport.TransportConfig;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A job of agents in this JVM: one {@link RankRuntime} per rank on an in-memory network (data centers as given), each
 * serving its socket through {@link RankAgent#serve} on a thread of its own, as {@code xaf agent} does once joined.
 */
final class LoopbackAgents implements AutoCloseable {
    static final int JOB = 9, TOKEN = 0x5eed0009;

    private record Wiring(int rank, int[] datacenterOfRank, List<LoopbackNetwork.Endpoint> ports) implements RankWiring {
        @Override public int worldSize() { return ports.size(); }
        @Override public int jobId() { return JOB; }
        @Override public CollectiveGroup group() { return new CollectiveGroup(rank, worldSize(), datacenterOfRank); }
        @Override public int maxPayload() { return TransportConfig.jobChunkPayload(1500, 0); }

        @Override
        public AddressBook addressBook() {
            AddressBook.Builder book = AddressBook.builder();
            for (int r = 0; r < ports.size(); r++) book.add(r, JOB << 16 | r, ports.get(r).localPeer());
            return book.build();
        }
    }

    final int size;
    final List<Path> sockets = new ArrayList<>();
    final List<Path> segments = new ArrayList<>();
    /** Each rank's exit status as {@code xaf agent} would return it. */
    final List<CompletableFuture<Integer>> exits = new ArrayList<>();
    final List<ByteArrayOutputStream> lines = new ArrayList<>();
    private final List<RankRuntime> runtimes = new ArrayList<>();
    private final ExecutorService threads;

    /**
     * @param datacenterOfRank the data center of every rank (its length is the world size)
     * @param opTimeout        how long a collective waits for a peer; the transport waits half of it for an
     *                         acknowledgement, so that, as in a job (60 s against 120 s), a dead peer is named by the
     *                         send that it never acknowledged before the operation as a whole times out. Not
     *                         shorter than a script's start: Python and torch start slowly on a loaded machine
     */
    LoopbackAgents(Path dir, int[] datacenterOfRank, Algorithm algorithm, long shmBytes, Duration opTimeout) {
        size = datacenterOfRank.length;
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        List<LoopbackNetwork.Endpoint> ports = new ArrayList<>();
        for (int r = 0; r < size; r++) ports.add(network.newEndpoint());
        threads = Executors.newFixedThreadPool(size);
        long unique = ProcessHandle.current().pid() * 1000 + System.nanoTime() % 1000;
        for (int r = 0; r < size; r++) {
            Wiring wiring = new Wiring(r, datacenterOfRank, ports);
            CollectiveConfig collectives = CollectiveConfig.defaults().withAlgorithm(algorithm)
                    .withBucketBytes(64 << 10).withOperationTimeout(opTimeout);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            RankRuntime runtime = RankRuntime.start(wiring, wiring.transportConfig(TOKEN, opTimeout.dividedBy(2)).build(),
                    ports.get(r), collectives, new PrintStream(out, true, StandardCharsets.UTF_8));
            runtimes.add(runtime);
            lines.add(out);
            Path socket = dir.resolve("rank" + r + ".sock");
            Path shm = Path.of("/dev/shm", "xaf-agent-test-" + unique + "-rank" + r);
            sockets.add(socket);
            segments.add(shm);
            AgentServer.Identity identity = new AgentServer.Identity(r, size, r);
            exits.add(CompletableFuture.supplyAsync(() -> {
                try {
                    return RankAgent.serve(runtime, identity, socket, shm, shmBytes);
                } catch (Exception e) {
                    throw new IllegalStateException("rank " + identity.rank() + "'s agent failed: " + e, e);
                }
            }, threads));
        }
    }

    /** Waits until every agent listens on its socket. */
    LoopbackAgents awaitSockets(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Path s : sockets) {
            while (!Files.exists(s)) {
                if (System.nanoTime() > deadline) throw new IllegalStateException(s + " did not appear");
                Thread.sleep(20);
            }
        }
        return this;
    }

    @Override
    public void close() throws IOException {
        for (RankRuntime r : runtimes) r.transport().close();
        threads.shutdownNow();
        for (RankRuntime r : runtimes) r.close();
        for (Path s : segments) Files.deleteIfExists(s);
        for (Path s : sockets) Files.deleteIfExists(s);
    }
}
