package io.xaforward.bench.allreduce;

import io.xaforward.bench.WanProfile;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.collective.Algorithm;
import io.xaforward.transport.WireSecurity;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AllReduceReportTest {

    @Test
    void rowLabelsCarryTheWireSecurityExceptCrc32c() {
        assertEquals("xdp", AllReduceBenchmark.label(GatewayMode.XDP, WireSecurity.CRC32C));
        assertEquals("xdp+mac", AllReduceBenchmark.label(GatewayMode.XDP, WireSecurity.MAC));
        assertEquals("kernel-tunnel+encrypt", AllReduceBenchmark.label(GatewayMode.KERNEL_TUNNEL, WireSecurity.ENCRYPT));
        assertEquals("relay", AllReduceBenchmark.label(GatewayMode.RELAY, WireSecurity.CRC32C));
    }

    @Test
    void endpointCpuPerDatagramIsAllRanksCpuOverAllRanksDatagrams() {
        AllReduceJob.Sample s = new AllReduceJob.Sample(0, 64 << 20, "hierarchical", 1.5, true, 0, 2.0, 400_000);
        assertEquals(5.0, s.cpuMicrosPerDatagram(), 1e-9);
        assertTrue(Double.isNaN(new AllReduceJob.Sample(0, 4, "gloo", 1, true, 0).cpuMicrosPerDatagram()));
    }

    @Test
    void fabricAndGatewayCpuAreCountedOverTheSameDatagramsAsTheEndpoints() {
        AllReduceJob.Sample s = new AllReduceJob.Sample(0, 64 << 20, "hierarchical", 1.5, true, 0, 2.0, 400_000, 0.4, 0.2);
        assertEquals(5.0, s.cpuMicrosPerDatagram(), 1e-9);
        assertEquals(1.0, s.fabricMicrosPerDatagram(), 1e-9);
        assertEquals(0.5, s.gatewayMicrosPerDatagram(), 1e-9);
        AllReduceJob.Sample unplaced = new AllReduceJob.Sample(0, 64 << 20, "hierarchical", 1.5, true, 0, 2.0, 400_000);
        assertTrue(Double.isNaN(unplaced.fabricMicrosPerDatagram()) && Double.isNaN(unplaced.gatewayMicrosPerDatagram()));
    }

    @Test
    void reportShowsTheCpuColumnAndADashWhereAPeerDoesNotReportIt(@TempDir Path dir) throws Exception {
        long bytes = 64L << 20;
        AllReduceBenchmark.Cell xaf = new AllReduceBenchmark.Cell("xdp+mac", "hierarchical", bytes, 4,
                new double[] {1.6, 1.4, 1.5}, new double[] {3.0, 5.0, 4.0}, new double[] {1.0, 1.5, 2.0},
                new double[] {0.25, 0.5, 0.75});
        AllReduceBenchmark.Cell gloo = new AllReduceBenchmark.Cell("gloo (kernel)", "gloo", bytes, 4,
                new double[] {0.5, 0.6, 0.7}, new double[] {Double.NaN, Double.NaN, Double.NaN});
        AllReduceBenchmark.Options o = new AllReduceBenchmark.Options(Path.of("topologies/two-dc.yaml"),
                List.of(GatewayMode.XDP), List.of(Algorithm.HIERARCHICAL), List.of(bytes), 3, 256L << 20, 2, 2, null, 0, 0,
                0.92, dir, null, true, List.of(WireSecurity.MAC));
        AllReduceBenchmark.Result r = new AllReduceBenchmark.Result(o, 4, List.of(xaf, gloo), null, 60, Map.of());
        String md = AllReduceReport.write(r, dir, "xaf bench allreduce", "test machine");
        assertTrue(md.contains("| endpoint CPU per datagram sent or received (us) | fabric CPU per datagram (us) "
                + "| gateway CPU per datagram (us) |"), md);
        assertTrue(md.contains("| 64 MB | xdp+mac | hierarchical | 1500.0 |"), md);
        assertTrue(md.lines().anyMatch(l -> l.startsWith("| 64 MB | xdp+mac") && l.endsWith("| 4.00 | 1.50 | 0.50 |")), md);
        assertTrue(md.lines().anyMatch(l -> l.startsWith("| 64 MB | gloo (kernel)") && l.endsWith("| - | - | - |")), md);
        String json = Files.readString(dir.resolve("allreduce.json"));
        assertTrue(json.contains("\"endpoint_cpu_us_per_datagram\": 4.0"), json);
        assertTrue(json.contains("\"fabric_cpu_us_per_datagram\": 1.5"), json);
        assertTrue(json.contains("\"gateway_cpu_us_per_datagram\": 0.5"), json);
        assertTrue(Files.size(dir.resolve("allreduce.png")) > 1000);
    }

    /** Goodput on a topology without rate limits: line-rate Mbit/s per direction, no fraction of a link. */
    @Test
    void goodputWithoutARateLimitIsReportedAsLineRate(@TempDir Path dir) throws Exception {
        long bytes = 64L << 20;
        AllReduceBenchmark.Cell xaf = new AllReduceBenchmark.Cell("xdp", "hierarchical", bytes, 4,
                new double[] {1.0, 1.1, 1.2}, new double[] {3.0, 3.0, 3.0});
        AllReduceBenchmark.Options o = new AllReduceBenchmark.Options(Path.of("topologies/two-dc.yaml"),
                List.of(GatewayMode.XDP), List.of(Algorithm.HIERARCHICAL), List.of(bytes), 3, 256L << 20, 2, 2,
                Path.of("topologies/two-dc.yaml"), bytes, 3, 0.92, dir, null, false, List.of(WireSecurity.CRC32C));
        AllReduceBenchmark.GoodputResult g = new AllReduceBenchmark.GoodputResult(Path.of("topologies/two-dc.yaml"), 0, 0,
                bytes, new double[] {2.0e9, 1.5e9, 2.5e9}, 12);
        assertFalse(g.rateLimited());
        assertTrue(Double.isNaN(g.fraction()));
        AllReduceBenchmark.Result r = new AllReduceBenchmark.Result(o, 4, List.of(xaf), g, 60, Map.of());
        String md = AllReduceReport.write(r, dir, "xaf bench allreduce", "test machine");
        assertTrue(md.contains("## Goodput of one message stream each way, no rate limit"), md);
        assertTrue(md.contains("| 2000.0 | 2000.0, 1500.0, 2500.0 | 12 |"), md);
        assertFalse(md.contains("fraction of link rate"), md);
        String json = Files.readString(dir.resolve("allreduce.json"));
        assertTrue(json.contains("\"link_bps\": 0"), json);
    }

    /** With --wan-profile every row and profile has its cell: busbw against round trip, every job's retransmissions. */
    @Test
    void profiledCellsGetATableWithRetransmissionsAndAPlotAgainstRoundTrip(@TempDir Path dir) throws Exception {
        long bytes = 64L << 20;
        List<WanProfile> profiles = WanProfile.parseList("lan,continental");
        List<AllReduceBenchmark.Cell> cells = List.of(
                cell("xdp @ lan", "hierarchical", bytes, profiles.get(0), new double[] {2.0, 2.2}, new long[] {0, 3}),
                cell("gloo (kernel) @ lan", "gloo", bytes, profiles.get(0), new double[] {1.6, 1.7}, new long[] {1, 0}),
                cell("xdp @ continental", "hierarchical", bytes, profiles.get(1), new double[] {4.0, 4.4}, new long[] {812, 790}),
                cell("gloo (kernel) @ continental", "gloo", bytes, profiles.get(1), new double[] {3.0, 3.5}, new long[] {40, 52}));
        AllReduceBenchmark.Options o = new AllReduceBenchmark.Options(Path.of("..", "topologies", "two-dc-ipv4-wan.yaml"),
                List.of(GatewayMode.XDP), List.of(Algorithm.HIERARCHICAL), List.of(bytes), 2, 256L << 20, 2, 2, null, 0, 0,
                0.92, dir, null, true, List.of(WireSecurity.CRC32C), List.of(1), profiles);
        AllReduceBenchmark.Result r = new AllReduceBenchmark.Result(o, 4, cells, null, 60, Map.of());
        String md = AllReduceReport.write(r, dir, "xaf bench allreduce --wan-profile lan,continental", "test machine");
        assertTrue(md.contains("## Across WAN profiles"), md);
        assertTrue(md.contains("- continental (50 ms round trip, 0.1% loss, 200mbit)"), md);
        // busbw of 64 MiB at the median of 4.0 and 4.4 s, 4 ranks: 67108864 / 4.2 / 1e9 * 1.5
        assertTrue(md.lines().anyMatch(l -> l.startsWith("| 64 MB | xdp | hierarchical | continental | 50 | 0.0240 |")
                && l.endsWith("| 812, 790 |")), md);
        assertTrue(md.lines().anyMatch(l -> l.startsWith("| 64 MB | gloo (kernel) | gloo | lan | 0.1 |") && l.endsWith("| 1, 0 |")), md);
        String json = Files.readString(dir.resolve("allreduce.json"));
        assertTrue(json.contains("\"wan_profile\": \"continental\"") && json.contains("\"round_trip_ms\": 50.0"), json);
        assertTrue(Files.size(dir.resolve(AllReduceReport.RTT_PNG)) > 1000);
        assertThrows(IllegalArgumentException.class, () -> new AllReduceBenchmark.Options(Path.of("..", "topologies", "two-dc.yaml"),
                List.of(GatewayMode.XDP), List.of(Algorithm.HIERARCHICAL), List.of(bytes), 2, 256L << 20, 2, 2, null, 0, 0,
                0.92, dir, null, true, List.of(WireSecurity.CRC32C), List.of(1), profiles), "a profile needs a wan: section");
    }

    private static AllReduceBenchmark.Cell cell(String row, String algorithm, long bytes, WanProfile profile, double[] seconds,
                                                long[] retransmits) {
        double[] none = new double[seconds.length];
        return new AllReduceBenchmark.Cell(row, algorithm, bytes, 4, seconds, none, none, none, profile, retransmits);
    }
}
