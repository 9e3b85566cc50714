package io.xaforward.collective;

import io.xaforward.transport.AddressBook;
import io.xaforward.transport.DatagramPort;
import io.xaforward.transport.LoopbackNetwork;
import io.xaforward.transport.Peer;
import io.xaforward.transport.ReliableTransport;
import io.xaforward.transport.TransportConfig;
import io.xaforward.transport.UdpDatagramPort;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * Ranks of one job in this JVM: a transport and a {@link Collectives} per rank, over an in-memory network or UDP on
 * 127.0.0.1. Ranks listed in {@code silent} get an address but no transport (a peer that never answers).
 */
final class Cluster implements AutoCloseable {
    static final int JOB = 7;
    static final int TOKEN = 0xC0FFEE;

    /** What one rank's task produced: a value or the exception it threw, and when it ended. */
    record Outcome<T>(T value, Throwable error, long elapsedNanos) {
    }

    interface RankTask<T> {
        T run(Collectives collectives) throws Exception;
    }

    final LoopbackNetwork network;
    final ReliableTransport[] transports;
    final Collectives[] collectives;
    private final ExecutorService threads;

    static Cluster loopback(int[] dcOfRank, LoopbackNetwork.Impairments impairments, long seed,
                            CollectiveConfig config, UnaryOperator<TransportConfig.Builder> tweak, int... silent) {
        LoopbackNetwork network = new LoopbackNetwork(impairments, seed);
        DatagramPort[] ports = new DatagramPort[dcOfRank.length];
        Peer[] peers = new Peer[dcOfRank.length];
        for (int r = 0; r < ports.length; r++) {
            LoopbackNetwork.Endpoint e = network.newEndpoint();
            ports[r] = e;
            peers[r] = e.localPeer();
        }
        return new Cluster(network, dcOfRank, ports, peers, config, tweak, silent);
    }

    static Cluster udp(int[] dcOfRank, CollectiveConfig config, UnaryOperator<TransportConfig.Builder> tweak)
            throws Exception {
        DatagramPort[] ports = new DatagramPort[dcOfRank.length];
        Peer[] peers = new Peer[dcOfRank.length];
        for (int r = 0; r < ports.length; r++) {
            UdpDatagramPort p = new UdpDatagramPort(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
            ports[r] = p;
            peers[r] = p.localPeer();
        }
        return new Cluster(null, dcOfRank, ports, peers, config, tweak);
    }

    private Cluster(LoopbackNetwork network, int[] dcOfRank, DatagramPort[] ports, Peer[] peers,
                    CollectiveConfig config, UnaryOperator<TransportConfig.Builder> tweak, int... silent) {
        this.network = network;
        int n = dcOfRank.length;
        AddressBook.Builder book = AddressBook.builder();
        for (int r = 0; r < n; r++) {
            book.add(r, 0x0A000100 + r, peers[r]);
        }
        AddressBook addresses = book.build();
        transports = new ReliableTransport[n];
        collectives = new Collectives[n];
        for (int r = 0; r < n; r++) {
            if (contains(silent, r)) {
                continue;
            }
            transports[r] = new ReliableTransport(tweak.apply(TransportConfig.builder(r, JOB, TOKEN)).build(),
                    addresses, ports[r]).start();
            collectives[r] = new Collectives(new CollectiveGroup(r, n, dcOfRank), transports[r], config);
        }
        threads = Executors.newFixedThreadPool(n, task -> {
            Thread t = new Thread(task, "cluster-rank");
            t.setDaemon(true);
            return t;
        });
    }

    int size() {
        return collectives.length;
    }

    /** Runs {@code task} on every live rank at once; fails the test if any rank is still busy after {@code limit}. */
    <T> List<Outcome<T>> onAllRanks(Duration limit, RankTask<T> task) throws InterruptedException {
        List<Future<Outcome<T>>> futures = new ArrayList<>();
        for (Collectives c : collectives) {
            futures.add(c == null ? null : threads.submit(() -> {
                long start = System.nanoTime();
                try {
                    return new Outcome<>(task.run(c), null, System.nanoTime() - start);
                } catch (Exception | AssertionError e) {
                    return new Outcome<>(null, e, System.nanoTime() - start);
                }
            }));
        }
        long deadline = System.nanoTime() + limit.toNanos();
        List<Outcome<T>> outcomes = new ArrayList<>();
        for (int r = 0; r < futures.size(); r++) {
            Future<Outcome<T>> f = futures.get(r);
            try {
                outcomes.add(f == null ? null : f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
            } catch (TimeoutException e) {
                fail("rank " + r + " is still busy after " + limit + " (hang)");
            } catch (ExecutionException e) {
                throw new IllegalStateException(e.getCause());
            }
        }
        return outcomes;
    }

    /** As {@link #onAllRanks} but fails the test with the first rank's exception. */
    <T> List<T> onAllRanksOk(Duration limit, RankTask<T> task) throws InterruptedException {
        List<T> values = new ArrayList<>();
        List<Outcome<T>> outcomes = onAllRanks(limit, task);
        for (int r = 0; r < outcomes.size(); r++) {
            Outcome<T> o = outcomes.get(r);
            if (o.error() != null) {
                throw new AssertionError("rank " + r + " failed: " + o.error(), o.error());
            }
            values.add(o.value());
        }
        return values;
    }

    /**
     * A SUM all-reduce of {@code inputs[r]} on every rank r at {@code step} (buffers in {@code arena}); returns what each
     * rank's buffer holds afterwards.
     */
    float[][] allReduceSum(Arena arena, float[][] inputs, int step, Duration limit) throws InterruptedException {
        int n = size();
        int count = inputs[0].length;
        MemorySegment[] buffers = new MemorySegment[n];
        for (int r = 0; r < n; r++) {
            buffers[r] = Tensors.segment(arena, inputs[r]);
        }
        onAllRanksOk(limit, c -> {
            c.allReduce(buffers[c.group().rank()], count, Collectives.Op.SUM, step);
            return null;
        });
        float[][] results = new float[n][];
        for (int r = 0; r < n; r++) {
            results[r] = Tensors.read(buffers[r], count);
        }
        return results;
    }

    private static boolean contains(int[] values, int v) {
        for (int x : values) {
            if (x == v) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void close() {
        threads.shutdownNow();
        for (int r = 0; r < collectives.length; r++) {
            if (collectives[r] != null) {
                transports[r].close();
                collectives[r].close();
            }
        }
    }
}
