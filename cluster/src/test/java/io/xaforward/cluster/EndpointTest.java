package io.xaforward.cluster;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.WireDtype;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.transport.WireSecurity;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

/** Choosing a worker's endpoint: strict names, the defaults per gateway mode, and a clear error where AF_XDP fails. */
class EndpointTest {

    @Test
    void namesAreStrict() {
        assertEquals(Endpoint.AFXDP, Endpoint.fromName("afxdp"));
        assertEquals(Endpoint.UDP, Endpoint.fromName(" UDP "));
        for (String bad : new String[]{"dpdk", "af_xdp", "", "udp,afxdp"}) {
            var e = assertThrows(IllegalArgumentException.class, () -> Endpoint.fromName(bad));
            assertTrue(e.getMessage().contains("expected afxdp or udp"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> Endpoint.fromName(null));
    }

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
        TrainJobSpec spec = new TrainJobSpec(Path.of("topologies/two-dc.yaml"), "t123", GatewayMode.RELAY, Algorithm.HIERARCHICAL, "tiny",
                1, 8, 1, 1e-3, 0, 0, 0, dir.resolve("corpus.txt"), 1, 7, 1, 1 << 20, 0, dir, "none");
        assertEquals(Endpoint.UDP, spec.endpoint(), "relay's default");
        Path file = dir.resolve("job.properties");
        new TrainJobSpec(spec.topology(), spec.prefix(), GatewayMode.XDP, spec.algorithm(), spec.preset(), 1, 8, 1, 1e-3, 0, 0, 0,
                spec.data(), 1, 7, 1, 1 << 20, 0, dir, "none", 0, null, true, WireDtype.FP32, WireSecurity.CRC32C, Endpoint.UDP).write(file);
        assertEquals(Endpoint.UDP, TrainJobSpec.read(file).endpoint(), "an explicit choice survives the worker's spec file");
        assertThrows(IllegalArgumentException.class,
                () -> new ClusterRun.Spec(spec.topology(), "t1", GatewayMode.KERNEL_TUNNEL, 1, 7, 0, dir, Endpoint.AFXDP));
        assertEquals(Endpoint.UDP, new ClusterRun.Spec(spec.topology(), "t1", GatewayMode.XDP, 1, 7, 0, dir).endpoint());
        assertEquals(Endpoint.AFXDP, new ClusterRun.Spec(spec.topology(), "t1", GatewayMode.XDP, 1, 7, 0, dir, Endpoint.AFXDP).endpoint());
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
