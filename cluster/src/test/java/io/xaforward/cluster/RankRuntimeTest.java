package io.xaforward.cluster;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.CollectiveConfig;
import io.xaforward.collective.CollectiveGroup;
import io.xaforward.collective.Collectives;
import io.xaforward.collective.WireDtype;
import io.xaforward.cluster.deploy.JoinSpec;
import io.xaforward.cluster.deploy.RankIdentity;
import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.cluster.world.World;
import io.xaforward.cluster.world.WorldNetwork;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.RunNonce;
import io.xaforward.transport.WireSecurity;
import io.xaforward.training.Evaluation;
import io.xaforward.training.StepStats;
import io.xaforward.transport.AddressBook;
import io.xaforward.transport.LoopbackNetwork;
import io.xaforward.transport.TransportConfig;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The rank runtime that every rank main uses: started from a rank's wiring, its collectives reduce across the job,
 * its progress lines carry what the launcher reads, and its end is a done line, a barrier and a closed transport.
 */
class RankRuntimeTest {
    private static final int[] DATACENTER_OF_RANK = {0, 0, 1};
    private static final int JOB = 7, TOKEN = 0x5eed0007;

    /** A job of three ranks on an in-memory network. */
    private record LoopbackWiring(int rank, List<LoopbackNetwork.Endpoint> ports) implements RankWiring {
        @Override public int worldSize() { return ports.size(); }
        @Override public int jobId() { return JOB; }
        @Override public CollectiveGroup group() { return new CollectiveGroup(rank, worldSize(), DATACENTER_OF_RANK); }
        @Override public int maxPayload() { return TransportConfig.jobChunkPayload(1500, 0); }

        @Override
        public AddressBook addressBook() {
            AddressBook.Builder book = AddressBook.builder();
            for (int r = 0; r < ports.size(); r++) book.add(r, JOB << 16 | r, ports.get(r).localPeer());
            return book.build();
        }
    }

    @Test
    void everyRankReducesReportsAndFinishesThroughItsRuntime() throws Exception {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        List<LoopbackNetwork.Endpoint> ports = new ArrayList<>();
        for (int r = 0; r < DATACENTER_OF_RANK.length; r++) ports.add(network.newEndpoint());
        int count = 10_000; // several chunks per message
        ExecutorService pool = Executors.newFixedThreadPool(ports.size());
        try {
            List<Future<String>> outputs = new ArrayList<>();
            for (int r = 0; r < ports.size(); r++) {
                LoopbackWiring wiring = new LoopbackWiring(r, ports);
                outputs.add(pool.submit(() -> runRank(wiring, count)));
            }
            for (int r = 0; r < ports.size(); r++) {
                String out = outputs.get(r).get(60, TimeUnit.SECONDS);
                List<WorkerLine> lines = out.lines().map(WorkerLine::parse).toList();
                assertEquals(List.of("start", "step", "done"), lines.stream().map(WorkerLine::kind).toList(), out);
                WorkerLine step = lines.get(1), done = lines.get(2);
                assertEquals(5, step.integer("step"), "steps are counted from 1");
                assertEquals(3.25, step.number("ms"), 1e-9, "compute, communication and optimizer time");
                assertEquals(1.25, step.number("compute_ms"), 1e-9);
                assertTrue(step.integer("sent_bytes") >= (long) count * Float.BYTES / ports.size(), out);
                assertEquals(6.5, step.number("val"), 1e-9);
                assertEquals("abc", step.get("checksum"));
                assertEquals(r, done.integer("rank"));
                assertEquals("sum-ok", done.get("result"));
                assertTrue(done.integer("retransmits") >= 0);
                for (String key : RankRuntime.LOSS_COUNTERS) assertTrue(done.integer(key) >= 0, key + " in " + out);
                // chunks that come before their expect are held, never dropped
                assertEquals(0, done.integer("unexpected_drops"), out);
                assertTrue(done.integer("sent_bytes") >= step.integer("sent_bytes"));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private static String runRank(LoopbackWiring wiring, int count) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        TransportConfig transport = wiring.transportConfig(TOKEN, Duration.ofSeconds(20)).build();
        CollectiveConfig collectives = CollectiveConfig.defaults().withAlgorithm(Algorithm.HIERARCHICAL)
                .withOperationTimeout(Duration.ofSeconds(20));
        RankRuntime runtime = RankRuntime.start(wiring, transport, wiring.ports().get(wiring.rank()), collectives, out);
        try (runtime) {
            runtime.report("start", "rank", runtime.rank());
            float[] values = new float[count];
            for (int i = 0; i < count; i++) values[i] = wiring.rank() + i;
            MemorySegment buffer = MemorySegment.ofArray(values);
            runtime.collectives().allReduce(buffer, count, Collectives.Op.SUM, 0);
            boolean ok = true;
            for (int i = 0; i < count; i++) ok &= buffer.getAtIndex(ValueLayout.JAVA_FLOAT, i) == 0 + 1 + 2 + 3f * i;
            runtime.reportStep(new StepStats(4, 6.9f, 6.9f, 1e-3, 1.0, 1.0, 2.0, 0.25, 100,
                    new Evaluation(6.5, 0.02, 10, 10)), 5, 10, () -> 0xabcL);
            runtime.finish("result", ok ? "sum-ok" : "sum-wrong");
        }
        assertThrows(IllegalStateException.class,
                () -> runtime.transport().send((wiring.rank() + 1) % wiring.worldSize(),
                        new io.xaforward.transport.MessageId(JOB, 1, 0), MemorySegment.ofArray(new byte[4])).join(),
                "closing the runtime closes its transport");
        return bytes.toString(StandardCharsets.UTF_8);
    }

    /**
     * The warm-up goes on while any rank's compiler is busy, at least two and at most five all-reduces, and every rank
     * stops after the same one: the ranks agree through the all-reduce itself.
     */
    @Test
    void warmUpRunsUntilNoRanksCompilerIsBusyAndEveryRankStopsTogether() throws Exception {
        // Asks after the first: rank 1's compiler is busy during warm-up all-reduces 1 and 2, then quiet.
        assertEquals(List.of(4, 4, 4), warmUpRounds(r -> r == 1 ? List.of(true, true, false) : List.of(false)));
        assertEquals(List.of(2, 2, 2), warmUpRounds(r -> List.of(false)), "never busy: the two all-reduces at least");
        assertEquals(List.of(RankRuntime.WARM_UP_MAX_ROUNDS, RankRuntime.WARM_UP_MAX_ROUNDS, RankRuntime.WARM_UP_MAX_ROUNDS),
                warmUpRounds(r -> r == 2 ? List.of(true) : List.of(false)), "always busy somewhere: the cap");
    }

    /** Each rank's warm-up rounds, its compiler answering from {@code busy} (the last answer repeats). */
    private static List<Integer> warmUpRounds(java.util.function.IntFunction<List<Boolean>> busy) throws Exception {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 3);
        List<LoopbackNetwork.Endpoint> ports = new ArrayList<>();
        for (int r = 0; r < DATACENTER_OF_RANK.length; r++) ports.add(network.newEndpoint());
        ExecutorService pool = Executors.newFixedThreadPool(ports.size());
        try {
            List<Future<Integer>> rounds = new ArrayList<>();
            for (int r = 0; r < ports.size(); r++) {
                LoopbackWiring wiring = new LoopbackWiring(r, ports);
                List<Boolean> answers = busy.apply(r);
                rounds.add(pool.submit(() -> {
                    int[] asked = {-1}; // the first ask starts the measurement; its answer is not used
                    try (RankRuntime runtime = RankRuntime.start(wiring, wiring.transportConfig(TOKEN, Duration.ofSeconds(20)).build(),
                            wiring.ports().get(wiring.rank()), CollectiveConfig.defaults().withOperationTimeout(Duration.ofSeconds(20)),
                            new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8))) {
                        return runtime.warmUp(5_000, () -> {
                            int i = asked[0]++;
                            return i >= 0 && answers.get(Math.min(i, answers.size() - 1));
                        });
                    }
                }));
            }
            List<Integer> result = new ArrayList<>();
            for (Future<Integer> f : rounds) result.add(f.get(60, TimeUnit.SECONDS));
            return result;
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aRankThatCannotStartClosesItsPort() {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 2);
        LoopbackNetwork.Endpoint port = network.newEndpoint(), peer = network.newEndpoint();
        RankWiring broken = new RankWiring() {
            @Override public int rank() { return 0; }
            @Override public int worldSize() { return 2; }
            @Override public int jobId() { return JOB; }
            @Override public CollectiveGroup group() { return new CollectiveGroup(0, 2, new int[]{0, 1}); }
            @Override public int maxPayload() { return 1400; }
            @Override public AddressBook addressBook() { throw new IllegalArgumentException("rank 1 is unreachable"); }
        };
        var e = assertThrows(IllegalArgumentException.class, () -> RankRuntime.start(broken,
                broken.transportConfig(TOKEN, Duration.ofSeconds(1)).build(), port, CollectiveConfig.defaults(),
                System.out));
        assertEquals("rank 1 is unreachable", e.getMessage());
        assertFalse(port.send(MemorySegment.ofArray(new byte[64]), 0, 64, peer.localPeer()),
                "the port was closed");
    }

    /**
     * The first collective of a rank whose peer keys its datagrams differently (another secret) fails, and the error
     * says that datagrams failed authentication instead of only that it timed out: the hint xaf worker and xaf agent
     * share through {@link RankRuntime#startUp}.
     */
    @Test
    void aStartUpThatFailsOnAuthenticationSaysSo() throws Exception {
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        List<LoopbackNetwork.Endpoint> ports = new ArrayList<>();
        for (int r = 0; r < DATACENTER_OF_RANK.length; r++) ports.add(network.newEndpoint());
        RunNonce run = RunNonce.generate();
        List<RankRuntime> runtimes = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(ports.size());
        try {
            for (int r = 0; r < ports.size(); r++) {
                LoopbackWiring wiring = new LoopbackWiring(r, ports);
                TransportConfig transport = wiring.transportConfig(TOKEN, Duration.ofSeconds(1))
                        .wireSecurity(WireSecurity.MAC, JobSecret.generate(), run).build(); // a secret each
                runtimes.add(RankRuntime.start(wiring, transport, ports.get(r), CollectiveConfig.defaults(), System.out));
            }
            List<Future<Float>> sums = new ArrayList<>();
            for (RankRuntime runtime : runtimes) {
                sums.add(pool.submit(() -> runtime.startUp(Duration.ofSeconds(2), start -> {
                    MemorySegment one = MemorySegment.ofArray(new float[]{1f});
                    start.allReduce(one, 1, Collectives.Op.SUM, -1);
                    return one.getAtIndex(ValueLayout.JAVA_FLOAT, 0);
                })));
            }
            int explained = 0;
            for (int r = 0; r < sums.size(); r++) {
                Future<Float> sum = sums.get(r);
                var e = assertThrows(java.util.concurrent.ExecutionException.class, () -> sum.get(60, TimeUnit.SECONDS));
                String message = e.getCause().getMessage();
                assertTrue(message.contains("within 1 s") || message.contains("timed out"), message);
                // A rank that received nothing from a peer (only sent) has no failure to name: it timed out plainly.
                if (message.contains("datagrams failed authentication (wire security mac): the peers use another job"
                        + " secret")) {
                    assertTrue(runtimes.get(r).transport().stats().authFailures() > 0, message);
                    explained++;
                }
            }
            assertTrue(explained > 0, "some rank received its peers' datagrams and said why they were dropped");
        } finally {
            pool.shutdownNow();
            for (RankRuntime r : runtimes) r.close();
        }
    }

    /**
     * A rank on a real host joins through {@link RankRuntime#join}, the one bootstrap of xaf worker and xaf agent:
     * its port opens on its address, its transport carries the spec's pacing and wire security, its collectives the
     * spec's settings and operation timeout.
     */
    @Test
    void aRankJoinsWithEverySettingOfItsSpec() throws Exception {
        World world = ClusterFile.parse("""
                job: 47
                datacenters:
                  - {name: a, form: ipv4}
                ranks:
                  - {rank: 0, datacenter: a, ip: 127.47.0.1}
                """, "test");
        CollectiveSettings collective = CollectiveSettings.of(Algorithm.RING, 1 << 20).withWireDtype(WireDtype.BF16)
                .withPacing(12_500_000);
        JoinSpec spec = new JoinSpec(new RankIdentity(47, 1, 0, "lo", NetworkForm.IPV4), 0x47, WireSecurity.CRC32C,
                null, Duration.ofSeconds(33), Duration.ofSeconds(5), 1, collective);
        try (RankRuntime runtime = RankRuntime.join(new WorldNetwork(world, 0, "lo"), spec, System.out)) {
            TransportConfig transport = runtime.transport().config();
            assertEquals(12_500_000, transport.pacingRateBytesPerSecond(), "the spec's pacing");
            assertEquals(WireSecurity.CRC32C, transport.wireSecurity());
            assertEquals(0x47, transport.jobToken());
            CollectiveConfig c = runtime.collectives().config();
            assertEquals(Algorithm.RING, c.algorithm());
            assertEquals(WireDtype.BF16, c.wireDtype());
            assertEquals(1 << 20, c.bucketBytes());
            assertEquals(Duration.ofSeconds(33), c.operationTimeout());
            assertEquals(null, runtime.runNonce(), "crc32c agrees no run nonce");
            float sum = runtime.startUp(spec.startTimeout(), start -> {
                MemorySegment one = MemorySegment.ofArray(new float[]{1f});
                start.allReduce(one, 1, Collectives.Op.SUM, -1);
                return one.getAtIndex(ValueLayout.JAVA_FLOAT, 0);
            });
            assertEquals(1f, sum);
        }
    }
}
