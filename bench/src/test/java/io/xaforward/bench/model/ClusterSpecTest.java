package io.xaforward.bench.model;

import io.xaforward.transport.WireSecurity;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.xaforward.collective.Algorithm;
import io.xaforward.training.ModelConfig;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** Cluster files: the shipped examples parse, and every kind of mistake is refused with the key named. */
class ClusterSpecTest {

    @Test
    void shippedExamplesParse() throws IOException {
        int n = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(Path.of("..", "examples", "cluster"), "*.yaml")) {
            for (Path f : files) {
                ClusterSpec c = ClusterSpec.load(f);
                assertTrue(c.ranks() >= 2, f.toString());
                n++;
            }
        }
        assertTrue(n >= 3, "examples: " + n);
        ClusterSpec p = ClusterSpec.load(Path.of("..", "examples", "cluster", "two-dc-8-hosts-100g.yaml"));
        assertEquals(ModelConfig.preset("gpt2-124m").gradientBytes(), p.gradientBytes());
        assertEquals(16, p.ranks());
        assertEquals(Algorithm.HIERARCHICAL, p.algorithm());
        assertFalse(p.sharedGateway());
    }

    @Test
    void defaultsAndValues() {
        ClusterSpec c = ClusterSpec.parse("datacenters: 3\nhosts_per_dc: 2\ngradient_mb: 8\nallreduce: {algorithm: ring, bucket_mb: 2}\n"
                + "gateway: {modes: [xdp], cost_scale: 0.5}\ncalibration: {forward: f.json}\n", Path.of("/tmp/x"));
        assertEquals(6, c.ranks());
        assertEquals(8L << 20, c.gradientBytes());
        assertEquals(Algorithm.RING, c.algorithm());
        assertEquals(2L << 20, c.bucketBytes());
        assertEquals(io.xaforward.transport.TransportConfig.JOB_WINDOW_CHUNKS, c.windowChunks(), "a job's window");
        assertEquals(0.5, c.gatewayCostScale().get("xdp"));
        assertEquals(Path.of("/tmp/x/f.json"), c.forwardJson(), "relative to the cluster file");
        assertEquals(null, c.allreduceJson(), "absent: the install's docs/bench");
        assertEquals(WireSecurity.MAC, c.wireSecurity());
    }

    static String error(String yaml) {
        return assertThrows(IllegalArgumentException.class, () -> ClusterSpec.parse(yaml, null)).getMessage();
    }

    @Test
    void mistakesAreNamed() {
        assertTrue(error("datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\nhostz: 3\n").contains("top level: unknown key 'hostz' (allowed: "));
        assertTrue(error("datacenters: 2\ngradient_mb: 8\n").contains("top level: 'hosts_per_dc' is required"));
        assertTrue(error("datacenters: 2\nhosts_per_dc: 2\n").contains("exactly one of gradient"));
        assertTrue(error("datacenters: 2\nhosts_per_dc: 2\ngradient: gpt5\n").contains("unknown model preset 'gpt5'"));
        assertTrue(error("datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\ngateway: {modes: [ebpf]}\n").contains("gateway.modes: unknown mode 'ebpf'"));
        assertTrue(error("datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\ngateway: {core_efficiency: 2}\n").contains("gateway: core_efficiency must be 0..1, got 2"));
        assertTrue(error("datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\nwan_gbps: fast\n").contains("top level: wan_gbps: 'fast' is not a number"));
        assertTrue(error("datacenters: 2\nhosts_per_dc: 2.5\ngradient_mb: 8\n").contains("top level: hosts_per_dc: '2.5' is not an integer"));
        assertTrue(error("datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\nallreduce: {algorithm: tree}\n").contains("allreduce.algorithm"));
        assertTrue(error("datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\nendpoint: {gateway_on_shared_cores: true}\n").contains("needs endpoint.shared_cores"));
        assertTrue(error("datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\ngateway: {placement: both}\n").contains("gateway.placement"));
        assertTrue(error("datacenters: [2\n").contains("not valid YAML"));
        assertTrue(error("- 1\n- 2\n").contains("expected a mapping"));
        assertTrue(error("datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\nendpoint: 3\n").contains("endpoint: expected a mapping"));
    }

    /** The checks of every XAForward YAML reader (YamlFields): unknown keys in any section, types, ranges, the file named. */
    @Test
    void strictLikeTheOtherFiles(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
        String base = "datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\n";
        assertEquals("gateway: unknown key 'colour' (allowed: core_efficiency, cores, cost_scale, cpu_share, modes, placement)",
                error(base + "gateway: {cores: 1, colour: red}\n"));
        assertEquals("top level: overlap must be true or false, got 'yes'", error(base + "overlap: yes\n"));
        assertEquals("top level: mtu: '01500' has a leading zero (octal in YAML 1.1); write it without the zero or as 0x hex",
                error(base + "mtu: 01500\n"));
        assertEquals("top level: mtu must be 576..65535, got 100", error(base + "mtu: 100\n"));
        assertEquals("gateway: modes must be a list of words", error(base + "gateway: {modes: [xdp, [relay]]}\n"));
        assertEquals("gateway.cost_scale: relay must be greater than 0, got 0", error(base + "gateway: {cost_scale: {relay: 0}}\n"));
        assertTrue(error(base + "mtu: 1500\nmtu: 9000\n").contains("key 'mtu' appears twice"));
        assertEquals(1, ClusterSpec.parse(base + "gateway: {modes: 'xdp, relay', cost_scale: .5}\n", null).gatewayCostScale()
                .values().stream().distinct().count());
        Path file = dir.resolve("c.yaml");
        Files.writeString(file, base + "allreduce: {algorithm: ring, buckets: 3}\n");
        var e = assertThrows(IllegalArgumentException.class, () -> ClusterSpec.load(file));
        assertEquals(file + ": allreduce: unknown key 'buckets' (allowed: algorithm, bucket_mb)", e.getMessage());
    }

    /** emulated_network: required where the endpoint cost comes from the training bench, every key stated and checked. */
    @Test
    void emulatedNetworkIsStatedAndChecked(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
        String base = "datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\ntestbed: train\nendpoint: {shared_cores: 1, calibration: train}\n";
        ClusterSpec ok = ClusterSpec.parse(base + "emulated_network: {lan_hops: 1, wan_hops: 3, wan_shaper: true}\n", null);
        assertEquals(new ClusterSpec.EmulatedNetwork(1, 3, true), ok.emulatedNetwork());
        assertEquals(ClusterSpec.EmulatedNetwork.NONE, ClusterSpec.parse("datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\n", null)
                .emulatedNetwork(), "calibrated on the all-reduce bench: nothing of it");
        assertTrue(error(base).startsWith("endpoint.calibration: train with endpoint.shared_cores needs an emulated_network section"), error(base));
        assertEquals(ClusterSpec.EmulatedNetwork.NONE, ClusterSpec.parse("datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\n"
                + "endpoint: {calibration: train}\n", null).emulatedNetwork(), "separate hosts: nothing emulated on them");
        assertEquals("emulated_network: unknown key 'switches' (allowed: lan_hops, wan_hops, wan_shaper)",
                error(base + "emulated_network: {lan_hops: 1, wan_hops: 3, wan_shaper: true, switches: 2}\n"));
        assertEquals("emulated_network: 'wan_hops' is required", error(base + "emulated_network: {lan_hops: 1, wan_shaper: true}\n"));
        assertEquals("emulated_network: 'wan_shaper' is required", error(base + "emulated_network: {lan_hops: 1, wan_hops: 3}\n"));
        assertEquals("emulated_network: lan_hops must be 0..64, got -1",
                error(base + "emulated_network: {lan_hops: -1, wan_hops: 3, wan_shaper: true}\n"));
        assertEquals("emulated_network: wan_hops: '1.5' is not an integer",
                error(base + "emulated_network: {lan_hops: 1, wan_hops: 1.5, wan_shaper: true}\n"));
        assertEquals("emulated_network: wan_shaper must be true or false, got 'yes'",
                error(base + "emulated_network: {lan_hops: 1, wan_hops: 3, wan_shaper: yes}\n"));
        assertEquals("emulated_network: expected a mapping", error(base + "emulated_network: 3\n"));
        assertTrue(error("datacenters: 2\nhosts_per_dc: 2\ngradient_mb: 8\nemulated_network: {lan_hops: 1, wan_hops: 3, wan_shaper: true}\n")
                .startsWith("emulated_network: only for endpoint.calibration: train"));
        assertEquals("emulated_network needs endpoint.shared_cores > 0 (the cores it runs on)",
                error(base.replace("shared_cores: 1, ", "") + "emulated_network: {lan_hops: 0, wan_hops: 0, wan_shaper: false}\n"));
        Path file = dir.resolve("edge.yaml");
        Files.writeString(file, base + "emulated_network: {lan_hops: 0, wan_hops: 0, wan_shaper: maybe}\n");
        var e = assertThrows(IllegalArgumentException.class, () -> ClusterSpec.load(file));
        assertEquals(file + ": emulated_network: wan_shaper must be true or false, got 'maybe'", e.getMessage());
    }

    @Test
    void missingFileIsNamed() {
        var e = assertThrows(IllegalArgumentException.class, () -> ClusterSpec.load(Path.of("no/such/cluster.yaml")));
        assertTrue(e.getMessage().contains("cluster file no/such/cluster.yaml does not exist"), e.getMessage());
    }
}
