package io.xaforward.bench.allreduce;

import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.cluster.ClusterRun;
import io.xaforward.collective.Algorithm;
import io.xaforward.testbed.Netns;
import io.xaforward.transport.WireSecurity;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.*;

/**
 * All-reduce across emulated data centers, one worker JVM per host namespace, XDP gateways: every algorithm gives
 * the reference sum (random floats within the stated bound, integer-valued floats exactly, also when one frame in 50
 * that a gateway forwards is lost on the link behind it: {@link LossyGatewayPorts}), and bad input (a rank that never starts, a rank with the wrong job token) fails within
 * the configured timeout with an error naming that rank.
 */
class AllReduceAcrossDatacentersTest {
    static final int JOB_TOKEN = 0x5eed0002;
    static final List<Long> SIZES = List.of(259L * 4, (1L << 20) + 4); // an odd float count; 5 buckets of 256 KB
    /** How long a rank waits for a peer before it names it: the failure tests below assert this figure. */
    static final Duration OP_TIMEOUT = Duration.ofSeconds(8);
    /**
     * The liveness bound for jobs that must succeed: with frames dropped on purpose, five JVMs and the gateway on two
     * busy cores, a retransmission round can outlast the failure tests' 8 s; this is a hang detector, not a speed claim.
     */
    static final Duration SUCCESS_OP_TIMEOUT = Duration.ofSeconds(30);

    /** A topology of the repository's topologies/ (the tests run in the module's directory). */
    static Path shippedTopology(String name) {
        return Path.of("..", "topologies", name);
    }

    @BeforeAll
    static void needsRoot() {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
    }

    /** A job that must succeed ({@code mustSucceed}: the liveness bound) or fail (the failure tests' timeout). */
    static AllReduceSpec spec(String topology, List<Algorithm> algorithms, InputPattern.Kind pattern, boolean mustSucceed)
            throws Exception {
        Path dir = Files.createTempDirectory("xaf-allreduce-test");
        String prefix = "r" + HexFormat.of().toHexDigits((short) new Random().nextInt(0x1000, 0x10000)).substring(1);
        ClusterRun.Spec cluster = new ClusterRun.Spec(shippedTopology(topology), prefix, GatewayMode.XDP, 2, JOB_TOKEN, dir);
        return new AllReduceSpec(cluster, SIZES, algorithms, 0, 1, 1, 1, pattern, 4242, 256 << 10,
                mustSucceed ? SUCCESS_OP_TIMEOUT : OP_TIMEOUT, 0, 0, 0);
    }

    static AllReduceJob.Outcome runOk(AllReduceSpec spec) throws Exception {
        return runOk(spec, false);
    }

    /**
     * Runs {@code spec}, which must succeed; {@code lossy}: one XAF frame in 50 that a gateway forwards is dropped on
     * the link behind it, and the ranks must repair that by retransmission.
     */
    static AllReduceJob.Outcome runOk(AllReduceSpec spec, boolean lossy) throws Exception {
        ByteArrayOutputStream console = new ByteArrayOutputStream();
        try {
            AllReduceJob job = new AllReduceJob(spec, new PrintStream(console, true), Duration.ofSeconds(90));
            if (lossy) {
                job.startingRanksWith((cluster, rank) -> {
                    if (rank == 0) LossyGatewayPorts.attach(cluster.state()); // before any rank sends
                    return job.startXafWorker(cluster, rank);
                });
            }
            AllReduceJob.Outcome o = job.run();
            assertNoNamespacesLeft(spec);
            if (lossy) {
                long retransmits = o.done().values().stream().mapToLong(l -> l.integer("retransmits")).sum();
                assertTrue(retransmits > 0, "frames were lost behind the gateway and repaired by retransmission");
            }
            return o;
        } catch (Exception e) {
            throw new AssertionError(e.getMessage() + "\nconsole:\n" + console, e);
        }
    }

    static void assertNoNamespacesLeft(AllReduceSpec spec) {
        assertTrue(Netns.list().stream().noneMatch(n -> n.startsWith(spec.cluster().prefix() + "-")), "namespaces left behind");
    }

    static void assertAllVerified(AllReduceJob.Outcome o, List<Algorithm> algorithms) {
        assertEquals(SIZES.size() * algorithms.size(), o.samples().size(), "one sample per size x algorithm");
        for (Algorithm a : algorithms) {
            for (long size : SIZES) {
                assertTrue(o.samples().stream().anyMatch(s -> s.algorithm().equals(a.configName()) && s.bytes() == size && s.verified()),
                        a + " " + size + " bytes verified");
            }
        }
        assertEquals(o.worldSize(), o.done().size(), "every rank finished");
        assertTrue(o.gatewayCounters().getOrDefault("xaf_packets_total{forwarded}", 0L) > 0, "data crossed the gateway");
        assertEquals(0L, o.gatewayCounters().getOrDefault("xaf_packets_total{drop_malformed}", -1L));
    }

    @Test
    void twoDatacentersRandomFloatsWithinBoundForEveryAlgorithm() throws Exception {
        List<Algorithm> all = List.of(Algorithm.HIERARCHICAL, Algorithm.RING, Algorithm.PARAMETER_SERVER);
        AllReduceJob.Outcome o = runOk(spec("two-dc.yaml", all, InputPattern.Kind.RANDOM, true));
        assertEquals(4, o.worldSize());
        assertAllVerified(o, all);
        // Every element within n·2^-23·Σ|x| of the double reference (n = 4, |x| < 1).
        assertTrue(o.samples().stream().allMatch(s -> s.maxError() < 4 * 0x1p-23 * 4), o.samples().toString());
        // Placed as the training bench is: the emulated fabric's and the gateway's NAPI threads ran and were counted
        // apart from the endpoints for every timed all-reduce (the 1 MB one crosses the gateway in every algorithm).
        assertTrue(o.samples().stream().allMatch(s -> s.fabricCpuSeconds() > 0), o.samples().toString());
        assertTrue(o.samples().stream().filter(s -> s.bytes() > 1 << 20).allMatch(s -> s.gatewayCpuSeconds() > 0),
                o.samples().toString());
    }

    @Test
    void twoDatacentersIntegerValuedExactWhileOneForwardedFrameInFiftyIsLost() throws Exception {
        List<Algorithm> all = List.of(Algorithm.HIERARCHICAL, Algorithm.RING, Algorithm.PARAMETER_SERVER);
        AllReduceJob.Outcome o = runOk(spec("two-dc.yaml", all, InputPattern.Kind.INTEGER, true), true);
        assertAllVerified(o, all);
        assertTrue(o.samples().stream().allMatch(s -> s.maxError() == 0), "integer-valued sums are exact");
    }

    @Test
    void threeDatacentersOfThreeFormsHierarchicalRandomAndExactUnderLoss() throws Exception {
        List<Algorithm> h = List.of(Algorithm.HIERARCHICAL);
        // The clean run also carries the mac wire security (tag, sequence numbers, the job secret in the work dir).
        AllReduceSpec plain = spec("three-dc.yaml", h, InputPattern.Kind.RANDOM, true);
        AllReduceSpec withMac = new AllReduceSpec(plain.cluster(), plain.sizesBytes(), plain.algorithms(),
                plain.warmup(), plain.iterations(), plain.runs(), plain.verifyRuns(), plain.pattern(), plain.seed(),
                plain.bucketBytes(), plain.operationTimeout(), 0, 0, 0, WireSecurity.MAC);
        AllReduceJob.Outcome random = runOk(withMac);
        assertEquals(5, random.worldSize());
        assertAllVerified(random, h);
        assertEquals(WireSecurity.MAC, AllReduceSpec.read(plain.cluster().workDir().resolve("allreduce.properties"))
                .wireSecurity());
        assertEquals(java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"),
                Files.getPosixFilePermissions(withMac.secretFile()));
        AllReduceJob.Outcome lossy = runOk(spec("three-dc.yaml", h, InputPattern.Kind.INTEGER, true), true);
        assertAllVerified(lossy, h);
        assertTrue(lossy.samples().stream().allMatch(s -> s.maxError() == 0));
    }

    /**
     * Three UDP flows per worker across IPv4, IPv6 and ID data centers: the gateways spread each sender's flows over
     * a source-port span, every receiver recognises them all (no datagram dropped for its source address), and the
     * sums stay exact under loss.
     */
    @Test
    void threeFlowsPerWorkerAreRecognisedAcrossTheGatewaysExactlyUnderLoss() throws Exception {
        List<Algorithm> h = List.of(Algorithm.HIERARCHICAL, Algorithm.RING);
        AllReduceSpec one = spec("three-dc.yaml", h, InputPattern.Kind.INTEGER, true);
        AllReduceSpec three = new AllReduceSpec(one.cluster().withFlows(3), one.sizesBytes(), one.algorithms(),
                one.warmup(), one.iterations(), one.runs(), one.verifyRuns(), one.pattern(), one.seed(),
                one.bucketBytes(), one.operationTimeout(), 0, 0, 0, WireSecurity.CRC32C);
        AllReduceJob.Outcome o = runOk(three, true);
        assertAllVerified(o, h);
        assertTrue(o.samples().stream().allMatch(s -> s.maxError() == 0), "integer-valued sums are exact");
        assertEquals(3, AllReduceSpec.read(three.cluster().workDir().resolve("allreduce.properties")).cluster().flows());
        assertEquals(0, o.done().values().stream().mapToLong(l -> l.integer("source_drops")).sum(),
                "every flow of every peer is recognised");
    }

    @Test
    void jumboFramesCrossTheXdpGatewayExactlyUnderLoss() throws Exception {
        List<Algorithm> h = List.of(Algorithm.HIERARCHICAL);
        AllReduceJob.Outcome o = runOk(spec("two-dc-jumbo.yaml", h, InputPattern.Kind.INTEGER, true), true);
        assertAllVerified(o, h);
        assertTrue(o.samples().stream().allMatch(s -> s.maxError() == 0), "integer-valued sums are exact");
        long packets = o.gatewayCounters().get("xaf_packets_total{forwarded}");
        long bytes = o.gatewayCounters().get("xaf_bytes_total{forwarded}");
        assertTrue(bytes / packets > 4000, "jumbo datagrams crossed the gateway: " + bytes / packets + " bytes on average");
        assertEquals(0L, o.gatewayCounters().getOrDefault("xaf_packets_total{drop_too_big}", 0L), "every frame fitted");
    }

    /**
     * PyTorch's Gloo as the bench runs it: four Python ranks (Debian's python3-torch, installed when missing) across
     * an IPv4 and an IPv6 data center through the kernel tunnel, timed and checked exactly, reporting the same result
     * lines as XAForward's workers.
     */
    @Test
    void glooPeerAllReducesAcrossTheKernelTunnel() throws Exception {
        io.xaforward.bench.allreduce.GlooPeer.ensureTorch();
        AllReduceSpec xafSpec = spec("two-dc.yaml", List.of(Algorithm.RING), InputPattern.Kind.RANDOM, true);
        assertEquals(GatewayMode.KERNEL_TUNNEL, io.xaforward.bench.allreduce.GlooPeer.kernelModeFor(xafSpec.cluster().topology()));
        ClusterRun.Spec c = xafSpec.cluster();
        AllReduceSpec spec = xafSpec.withCluster(new ClusterRun.Spec(c.topology(), c.prefix(), GatewayMode.KERNEL_TUNNEL, c.jobId(),
                c.jobToken(), c.workDir()));
        ByteArrayOutputStream console = new ByteArrayOutputStream();
        AllReduceJob.Outcome o;
        try {
            o = new AllReduceJob(spec, new PrintStream(console, true), Duration.ofMinutes(4))
                    .startingRanksWith(new io.xaforward.bench.allreduce.GlooPeer(spec, 1)).run();
        } catch (Exception e) {
            throw new AssertionError(e.getMessage() + "\nconsole:\n" + console, e);
        }
        assertNoNamespacesLeft(spec);
        assertEquals(4, o.worldSize());
        assertEquals(4, o.done().size(), "every Gloo rank finished");
        for (long size : SIZES) {
            assertTrue(o.samples().stream().anyMatch(s -> s.algorithm().equals("gloo") && s.bytes() == size
                    && s.verified() && s.maxError() == 0 && s.seconds() > 0), "gloo " + size + " bytes: " + o.samples());
        }
    }

    @Test
    void aRankThatNeverStartsIsNamedByEveryOtherRankWithinTheTimeout() throws Exception {
        AllReduceSpec spec = spec("two-dc.yaml", List.of(Algorithm.HIERARCHICAL), InputPattern.Kind.INTEGER, false);
        long start = System.nanoTime();
        AllReduceJob job = new AllReduceJob(spec, new PrintStream(new ByteArrayOutputStream(), true), Duration.ofSeconds(90));
        job.startingRanksWith((cluster, rank) -> rank != 3 && job.startXafWorker(cluster, rank));
        AllReduceJob.AllReduceJobException e = assertThrows(AllReduceJob.AllReduceJobException.class, job::run);
        double seconds = (System.nanoTime() - start) / 1e9;
        assertEquals(Set.of(0, 1, 2), e.failures().keySet(), e.getMessage());
        for (var f : e.failures().entrySet()) {
            assertTrue(f.getValue().contains("no answer from rank 3 within 8000 ms"), f.getValue());
        }
        // Testbed and JVM start-up (~15 s on two busy cores) plus the 8 s rendezvous timeout, far from the 90 s limit.
        assertTrue(seconds < 60, "failed after " + seconds + " s");
        assertNoNamespacesLeft(spec);
    }

    @Test
    void aRankWithTheWrongJobTokenIsDroppedAtTheGatewayAndNamed() throws Exception {
        AllReduceSpec spec = spec("two-dc.yaml", List.of(Algorithm.HIERARCHICAL), InputPattern.Kind.INTEGER, false);
        AllReduceJob job = new AllReduceJob(spec, new PrintStream(new ByteArrayOutputStream(), true), Duration.ofSeconds(90));
        job.startingRanksWith((cluster, rank) -> {
            if (rank != 3) return job.startXafWorker(cluster, rank);
            // Rank 3 reads a job file of its own that gives it another token than the gateways accept.
            ClusterRun.Spec c = spec.cluster();
            Path own = c.workDir().resolve("allreduce-rank3.properties");
            spec.withCluster(new ClusterRun.Spec(c.topology(), c.prefix(), c.gatewayMode(), c.jobId(), JOB_TOKEN ^ 0x1000,
                    c.workDir(), c.endpoint(), c.flows())).write(own);
            return job.startXafWorker(cluster, rank, own);
        });
        AllReduceJob.AllReduceJobException e = assertThrows(AllReduceJob.AllReduceJobException.class, job::run);
        assertEquals(Set.of(0, 1, 2, 3), e.failures().keySet(), e.getMessage());
        for (int r = 0; r < 3; r++) {
            assertTrue(e.failures().get(r).contains("no answer from rank 3 within"), e.failures().get(r));
        }
        assertTrue(e.failures().get(3).contains("no answer from ranks 0, 1, 2"), e.failures().get(3));
        // Rank 3 (DC b) talks to DC a through the gateway, which drops its frames for their token; rank 2, its
        // neighbour in DC b, drops them in its transport; rank 3 drops everyone's frames for the same reason.
        assertTrue(e.gatewayCounters().getOrDefault("xaf_packets_total{drop_bad_token}", 0L) > 0, e.gatewayCounters().toString());
        assertTrue(e.failures().get(3).matches(".*this rank dropped [1-9][0-9]* packets with a wrong token.*"), e.failures().get(3));
        assertNoNamespacesLeft(spec);
    }
}
