package io.xaforward.cluster;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.WireDtype;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.transport.WireSecurity;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;

import static org.junit.jupiter.api.Assertions.*;

/** Choosing a worker's endpoint: the defaults per gateway mode, and a clear error where AF_XDP fails. */
class EndpointTest {

    @Test
    void udpIsTheDefaultAndAfxdpIsChosenExplicitly() {
        assertEquals(Endpoint.UDP, Endpoint.resolve((String) null, GatewayMode.XDP));
        assertEquals(Endpoint.UDP, Endpoint.resolve("", GatewayMode.XDP));
        for (GatewayMode mode : GatewayMode.values()) assertEquals(Endpoint.UDP, Endpoint.resolve((Endpoint) null, mode));
        assertThrows(NullPointerException.class, () -> Endpoint.resolve(Endpoint.UDP, null));
        assertEquals(Endpoint.UDP, Endpoint.resolve("udp", GatewayMode.XDP));
        assertEquals(Endpoint.AFXDP, Endpoint.resolve("afxdp", GatewayMode.KERNEL));
    }

    @Test
    void afxdpCannotUseTheKernelTunnel() {
        var e = assertThrows(IllegalArgumentException.class, () -> Endpoint.resolve(Endpoint.AFXDP, GatewayMode.KERNEL_TUNNEL));
        assertTrue(e.getMessage().contains("--endpoint udp"), e.getMessage());
        assertEquals(Endpoint.UDP, Endpoint.resolve("udp", GatewayMode.KERNEL_TUNNEL));
        assertEquals(Endpoint.UDP, Endpoint.resolve((Endpoint) null, GatewayMode.KERNEL_TUNNEL));
    }

    @Test
    void specsResolveAndCarryTheEndpoint() throws Exception {
        Path dir = Files.createTempDirectory("xaf-endpoint-spec");
        TrainJobSpec spec = TrainJobSpec.builder().topology(Path.of("topologies/two-dc.yaml")).prefix("t123")
                .gatewayMode(GatewayMode.RELAY).algorithm(Algorithm.HIERARCHICAL).preset("tiny").steps(1).globalBatch(8)
                .seed(1).learningRate(1e-3).data(dir.resolve("corpus.txt")).jobId(1).jobToken(7).threadsPerWorker(1)
                .bucketBytes(1 << 20).workDir(dir).build();
        assertEquals(Endpoint.UDP, spec.cluster().endpoint(), "relay's default");
        Path file = dir.resolve("job.properties");
        TrainJobCodec.write(spec.toBuilder().gatewayMode(GatewayMode.XDP).wireSecurity(WireSecurity.CRC32C)
                .endpoint(Endpoint.UDP).build(), file);
        assertEquals(Endpoint.UDP, TrainJobCodec.read(file).cluster().endpoint(), "an explicit choice survives the worker's spec file");
        assertThrows(IllegalArgumentException.class,
                () -> new ClusterRun.Spec(spec.cluster().topology(), "t1", GatewayMode.KERNEL_TUNNEL, 1, 7, dir, Endpoint.AFXDP));
        assertEquals(Endpoint.UDP, new ClusterRun.Spec(spec.cluster().topology(), "t1", GatewayMode.XDP, 1, 7, dir).endpoint());
        assertEquals(Endpoint.AFXDP, new ClusterRun.Spec(spec.cluster().topology(), "t1", GatewayMode.XDP, 1, 7, dir, Endpoint.AFXDP).endpoint());
    }

    /** What a launcher writes, its workers read back: every field, enums included, in the words of the command line. */
    @Test
    void aSpecSurvivesItsJobFile() throws Exception {
        Path dir = Files.createTempDirectory("xaf-spec-file").toAbsolutePath();
        TrainJobSpec spec = TrainJobSpec.builder().topology(dir.resolve("t.yaml")).prefix("t9a")
                .gatewayMode(GatewayMode.KERNEL_TUNNEL).algorithm(Algorithm.PARAMETER_SERVER).preset("tiny").steps(12)
                .globalBatch(8).seed(3).learningRate(2e-3).warmupSteps(2).evalEvery(4).evalWindows(17).checksumEvery(5)
                .data(dir.resolve("corpus.txt")).jobId(2).jobToken(-9).threadsPerWorker(1).bucketBytes(1 << 20)
                .pacingBytesPerSecond(1000).workDir(dir).rateLimit("200mbit").checkpointEvery(6)
                .resume(dir.resolve("step-6.ckpt")).overlap(false).wireDtype(WireDtype.BF16)
                .wireSecurity(WireSecurity.ENCRYPT).build();
        Path file = dir.resolve("job.properties");
        TrainJobCodec.write(spec, file);
        assertEquals(spec, TrainJobCodec.read(file));
        String text = Files.readString(file);
        for (String line : new String[]{"gatewayMode=kernel-tunnel", "algorithm=ps", "wireDtype=bf16",
                "wireSecurity=encrypt", "endpoint=udp"}) {
            assertTrue(text.lines().anyMatch(line::equals), line + " in\n" + text);
        }
        assertEquals(spec, spec.toBuilder().build());
    }

    /** The cluster's part of a job file, shared by training and all-reduce jobs, read back as written. */
    @Test
    void aClusterSpecSurvivesItsJobFile() throws Exception {
        Path dir = Files.createTempDirectory("xaf-cluster-spec").toAbsolutePath();
        for (ClusterRun.Spec c : List.of(
                new ClusterRun.Spec(dir.resolve("t.yaml"), "b1c", GatewayMode.XDP, 3, 0x5eed0003, dir, Endpoint.AFXDP),
                new ClusterRun.Spec(dir.resolve("t.yaml"), "b1d", GatewayMode.DIRECT, 1, -7, dir),
                new ClusterRun.Spec(dir.resolve("t.yaml"), "b1e", GatewayMode.XDP, 2, 9, dir, Endpoint.UDP, 4))) {
            Properties p = new Properties();
            c.writeTo(p);
            assertEquals(c, ClusterRun.Spec.readFrom(p));
            assertEquals(c.gatewayMode().configName(), p.getProperty("gatewayMode"));
            assertEquals(c.flows() > 1 ? Integer.toString(c.flows()) : null, p.getProperty("flows"));
        }
    }

    /** More than one flow needs the UDP endpoint, and a count in range; both refused in one clear line. */
    @Test
    void flowsNeedTheUdpEndpointAndACountInRange() throws Exception {
        Path dir = Files.createTempDirectory("xaf-cluster-spec").toAbsolutePath();
        var afxdp = assertThrows(IllegalArgumentException.class, () -> new ClusterRun.Spec(dir.resolve("t.yaml"), "b1f",
                GatewayMode.XDP, 1, 1, dir, Endpoint.AFXDP, 2));
        assertEquals("--flows 2 needs the udp endpoint: an AF_XDP socket sends from one address", afxdp.getMessage());
        for (int bad : new int[]{0, 65}) {
            var e = assertThrows(IllegalArgumentException.class, () -> Endpoint.checkFlows(Endpoint.UDP, bad));
            assertEquals("--flows must be 1 to 64, was " + bad, e.getMessage());
        }
        Endpoint.checkFlows(Endpoint.AFXDP, 1);
        Endpoint.checkFlows(Endpoint.UDP, 64);
    }

    /** The plan's interface does not exist here (the testbed is not up): opening AF_XDP on it must say so clearly. */
    @Test
    void afxdpWhereTheInterfaceCannotCarryItFailsClearly() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        RankNetwork net = RankNetwork.of(topology(), "zq" + ProcessHandle.current().pid() % 1000, 1, 7, 0, GatewayMode.XDP, Endpoint.AFXDP);
        var e = assertThrows(IllegalStateException.class, net::openPort);
        assertTrue(e.getMessage().startsWith("cannot open an AF_XDP endpoint on " + net.self().iface()), e.getMessage());
        assertTrue(e.getMessage().contains("--endpoint udp"), e.getMessage());
    }

    /**
     * two-dc mixes IPv4 and IPv6: in direct mode ranks send to their peers' own addresses, some of them in the other
     * IP family, which an AF_XDP socket (one family) cannot write. The worker must say so when it builds its address book, not hang.
     */
    @Test
    void afxdpCannotReachTheOtherFamilyInDirectMode() {
        int refused = 0;
        RankNetwork first = RankNetwork.of(topology(), "zr1", 1, 7, 0, GatewayMode.DIRECT, Endpoint.AFXDP);
        for (int rank = 0; rank < first.worldSize(); rank++) {
            RankNetwork net = RankNetwork.of(topology(), "zr1", 1, 7, rank, GatewayMode.DIRECT, Endpoint.AFXDP);
            try {
                net.addressBook();
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage().contains("the other IP family") && e.getMessage().contains("--endpoint udp"),
                        e.getMessage());
                refused++;
            }
            RankNetwork.of(topology(), "zr1", 1, 7, rank, GatewayMode.DIRECT, Endpoint.UDP).addressBook(); // dual-stack sockets reach both
            RankNetwork.of(topology(), "zr1", 1, 7, rank, GatewayMode.XDP, Endpoint.AFXDP).addressBook(); // gateways translate
        }
        assertTrue(refused > 0, "the ranks whose peers answer in the other family are refused");
    }

    private static Path topology() {
        for (String base : new String[]{".", ".."}) {
            Path p = Path.of(base, "topologies", "two-dc.yaml");
            if (Files.exists(p)) return p;
        }
        throw new IllegalStateException("topologies/two-dc.yaml not found");
    }
}
