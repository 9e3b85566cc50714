package io.xaforward.bench.allreduce;

import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.cluster.ClusterRun;
import io.xaforward.collective.Algorithm;
import io.xaforward.testbed.Netns;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Linux-native baseline carries an all-reduce between an IPv4 and an IPv6 data center: IPv4 workers on both
 * sides, the IPv6 data center's frames tunnelled (VXLAN over IPv6) to the gateway, across the emulated WAN of
 * two-dc-wan.yaml. The sums are the reference sums, and the gateway's tunnel devices counted the traffic.
 */
class KernelTunnelAllReduceTest {

    @Test
    void kernelTunnelCarriesAnAllReduceBetweenAnIpv4AndAnIpv6Datacenter() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Path dir = Files.createTempDirectory("xaf-tunnel-test");
        String prefix = "k" + HexFormat.of().toHexDigits((short) new Random().nextInt(0x1000, 0x10000)).substring(1);
        ClusterRun.Spec cluster = new ClusterRun.Spec(AllReduceAcrossDatacentersTest.shippedTopology("two-dc-wan.yaml"),
                prefix, GatewayMode.KERNEL_TUNNEL, 3, 0x5eed0003, dir);
        List<Algorithm> algorithms = List.of(Algorithm.HIERARCHICAL, Algorithm.RING);
        AllReduceSpec spec = new AllReduceSpec(cluster, AllReduceAcrossDatacentersTest.SIZES, algorithms, 0, 1, 1, 1,
                InputPattern.Kind.INTEGER, 4243, 256 << 10, AllReduceAcrossDatacentersTest.SUCCESS_OP_TIMEOUT, 0, 0, 0);
        AllReduceJob.Outcome o = AllReduceAcrossDatacentersTest.runOk(spec);
        assertEquals(4, o.worldSize());
        assertEquals(AllReduceAcrossDatacentersTest.SIZES.size() * algorithms.size(), o.samples().size());
        assertTrue(o.samples().stream().allMatch(s -> s.verified() && s.maxError() == 0), o.samples().toString());
        long tunnelled = o.gatewayCounters().entrySet().stream().filter(e -> e.getKey().startsWith("tunnel_packets{"))
                .mapToLong(Map.Entry::getValue).sum();
        assertTrue(tunnelled > 1000, "the gradient traffic crossed the gateway's tunnel: " + o.gatewayCounters());
    }
}
