package io.xaforward.bench;

import io.xaforward.testbed.Topology;
import io.xaforward.testbed.WanImpairment;
import io.xaforward.testbed.WanLink;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --wan-profile}: the names parse in order and bad lists are refused naming the known profiles; a profile
 * applied to a shipped topology reads back with the profile's rate, delay and loss, the file's other impairments
 * removed and everything else of the file kept.
 */
class WanProfileTest {
    @TempDir
    Path dir;

    private static final Path TOPOLOGIES = Path.of("..", "topologies");

    @Test
    void namesParseInOrderAndBadListsAreRefusedNamingTheKnownOnes() {
        assertEquals(List.of("continental", "lan"), WanProfile.parseList("continental, lan").stream().map(WanProfile::name).toList());
        String unknown = assertThrows(IllegalArgumentException.class, () -> WanProfile.parseList("lan,moon")).getMessage();
        assertTrue(unknown.contains("unknown WAN profile 'moon'") && unknown.contains("lan, metro, continental"), unknown);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> WanProfile.parseList("metro,metro")).getMessage().contains("twice"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> WanProfile.parseList(" ")).getMessage().contains("lan, metro, continental"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> WanProfile.parseList("lan,")).getMessage().contains("unknown WAN profile ''"));
    }

    @Test
    void theProfilesAreTheDocumentedRoundTripsAndLosses() {
        List<WanProfile> p = WanProfile.parseList("lan,metro,continental");
        assertEquals(List.of(0.1, 10.0, 50.0), p.stream().map(WanProfile::roundTripMs).toList());
        assertEquals(List.of(0.0, 0.0001, 0.001), p.stream().map(w -> w.impairment().loss()).toList());
        for (WanProfile w : p) assertEquals(200_000_000L, w.bitsPerSecond());
        assertEquals("metro (10 ms round trip, 0.01% loss, 200mbit)", p.get(1).describe());
    }

    @Test
    void aProfileSetsRateDelayAndLossOfAWanWithoutImpairment() throws Exception {
        Path source = TOPOLOGIES.resolve("two-dc-ipv4-wan.yaml");
        Topology before = Topology.load(source);
        assertEquals(WanImpairment.NONE, before.wan().orElseThrow().impairment());
        WanProfile continental = WanProfile.parseList("continental").getFirst();
        Topology after = Topology.load(continental.writeApplied(source, dir.resolve("t.yaml")));
        WanLink wan = after.wan().orElseThrow();
        assertEquals(25_000_000L, wan.impairment().delayNanos());
        assertEquals(0.001, wan.impairment().loss(), 1e-12);
        assertEquals(200_000_000L, wan.bitsPerSecond());
        WanLink old = before.wan().orElseThrow();
        assertEquals(List.of(old.gateway(), old.datacenter(), old.queuePackets(), old.mtu()),
                List.of(wan.gateway(), wan.datacenter(), wan.queuePackets(), wan.mtu()), "the rest of the WAN is the file's");
        assertEquals(before.datacenters(), after.datacenters());
        assertEquals(before.name(), after.name());
    }

    @Test
    void aProfileReplacesTheFilesJitterBurstLossAndReorder() throws Exception {
        Path source = dir.resolve("impaired.yaml");
        Files.writeString(source, """
                name: impaired
                datacenters:
                  - name: a
                    form: ipv4
                    hosts: 2
                  - name: b
                    form: ipv6
                    hosts: 2
                gateways:
                  - name: gw
                    joins: [a, b]
                wan:
                  gateway: gw   # the gateway end
                  dc: b
                  rate: 4gbit
                  queue: 500
                  delay: 30ms
                  jitter: 2ms
                  loss-burst:
                    p: 0.5%
                    r: 20%
                  reorder: 1%
                """);
        assertTrue(Topology.load(source).wan().orElseThrow().impairment().burst() != null);
        WanProfile lan = WanProfile.parseList("lan").getFirst();
        WanLink wan = Topology.load(lan.writeApplied(source, dir.resolve("lan.yaml"))).wan().orElseThrow();
        assertEquals(new WanImpairment(50_000, 0, 0, null, 0), wan.impairment());
        assertEquals(500, wan.queuePackets());
        assertEquals(200_000_000L, wan.bitsPerSecond());
        String text = Files.readString(dir.resolve("lan.yaml"));
        assertFalse(text.contains("p: 0.5%") || text.contains("jitter") || text.contains("reorder"), text);
        assertTrue(text.contains("gateway: gw   # the gateway end"), "other lines are kept as written: " + text);
        assertEquals(0.005, Topology.load(source).wan().orElseThrow().impairment().burst().p(), 1e-12, "the source file is untouched");
    }

    @Test
    void aTopologyWithoutWanIsRefusedNamingTheFile() {
        Path source = TOPOLOGIES.resolve("two-dc.yaml");
        String why = assertThrows(IllegalArgumentException.class,
                () -> WanProfile.parseList("metro").getFirst().writeApplied(source, dir.resolve("x.yaml"))).getMessage();
        assertTrue(why.contains("two-dc.yaml has no wan: section"), why);
    }
}
