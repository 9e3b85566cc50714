package io.xaforward.cluster.world;

import io.xaforward.protocol.NetworkForm;
import io.xaforward.transport.EthernetPeer;
import io.xaforward.transport.InetPeer;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;

import static org.junit.jupiter.api.Assertions.*;

/** The cluster file: a valid file round-trips and gives the right address book; every mistake names its entry. */
class ClusterFileTest {
    static final String GOOD = """
            job: 3
            datacenters:
              - {name: a, form: ipv4, gateway: {ip: 10.0.1.254}}
              - {name: b, form: id, mtu: 9000, gateway: {mac: "02:00:00:00:02:fe"}}
            ranks:
              - {rank: 0, datacenter: a, ip: 10.0.1.1, interface: eth1}
              - {rank: 1, datacenter: a, ip: 10.0.1.2}
              - {rank: 2, datacenter: b, mac: "02:00:00:00:02:01", identity: 0x00020001}
            """;

    @Test
    void validFileRoundTripsThroughRender() {
        World w = ClusterFile.parse(GOOD, "c.yaml");
        assertEquals(3, w.worldSize());
        assertEquals(NetworkForm.ID, w.rank(2).form());
        assertEquals(9000, w.rank(2).mtu());
        assertEquals(1500, w.minMtu());
        assertEquals((3 << 16) | 2, w.networkId(2));
        assertEquals(w, ClusterFile.parse(ClusterFile.render(w), "rendered"));
    }

    @Test
    void addressBookSendsInsideTheDatacenterDirectlyAndElsewhereThroughItsGateway() {
        World w = ClusterFile.parse(GOOD, "c.yaml");
        var book = new WorldNetwork(w, 0, "eth1").addressBook();
        assertEquals(new InetPeer(new InetSocketAddress("10.0.1.2", 9450)), book.peer(1));
        assertEquals(new InetPeer(new InetSocketAddress("10.0.1.254", 9450)), book.peer(2));
        var fromId = new WorldNetwork(w, 2, "ethx").addressBook();
        assertEquals(EthernetPeer.of("02:00:00:00:02:fe"), fromId.peer(0));
        var e = assertThrows(IllegalArgumentException.class, () -> new WorldNetwork(w, 0, "eth9"));
        assertTrue(e.getMessage().contains("listed on interface eth1"), e.getMessage());
    }

    @Test
    void transportSettingsFitTheSmallestMtuAndNeverExceed1400Bytes() {
        World w = ClusterFile.parse(GOOD, "c.yaml");
        var c = new WorldNetwork(w, 0, "eth1").transportConfig(0x77, java.time.Duration.ofSeconds(4)).build();
        assertEquals(1400, c.maxPayload());
        assertEquals(io.xaforward.transport.TransportConfig.JOB_WINDOW_CHUNKS, c.windowChunks());
        assertEquals(1L << 30, c.maxMessageBytes());
        assertEquals(java.time.Duration.ofSeconds(4), c.ackTimeout());
        assertEquals(3, c.jobId());
        assertEquals(0x77, c.jobToken());
        World jumbo = ClusterFile.parse(GOOD.replace("form: ipv4,", "form: ipv4, mtu: 9000,"), "c.yaml");
        assertEquals(9000, jumbo.minMtu());
        assertEquals(1400, new WorldNetwork(jumbo, 0, "eth1").transportConfig(0x77, java.time.Duration.ofSeconds(4))
                .build().maxPayload(), "jumbo data centers still get 1400-byte chunks");
        World small = ClusterFile.parse(GOOD.replace("form: ipv4,", "form: ipv4, mtu: 1280,"), "c.yaml");
        assertEquals(1280 - 96, new WorldNetwork(small, 0, "eth1").transportConfig(0x77, java.time.Duration.ofSeconds(4))
                .build().maxPayload());
    }

    @Test
    void aTrainingSectionIsReadAsTheJobsSettingsAndLeavesTheWorldAlone() throws Exception {
        java.nio.file.Path file = java.nio.file.Files.createTempFile("cluster", ".yaml");
        try {
            java.nio.file.Files.writeString(file, GOOD + "training: {preset: gpt2-tiny, steps: 1000, lr: 0.003, data: /srv/corpus}\n");
            assertEquals(ClusterFile.parse(GOOD, "x").ranks(), ClusterFile.read(file).ranks());
            assertEquals(java.util.Map.of("preset", "gpt2-tiny", "steps", "1000", "lr", "0.003", "data", "/srv/corpus"),
                    ClusterFile.training(file));
            java.nio.file.Files.writeString(file, GOOD);
            assertEquals(java.util.Map.of(), ClusterFile.training(file));
            java.nio.file.Files.writeString(file, GOOD + "training: {steps: [1, 2]}\n");
            var e = assertThrows(IllegalArgumentException.class, () -> ClusterFile.training(file));
            assertTrue(e.getMessage().contains(file + ": training.steps: expected a single value"), e.getMessage());
        } finally {
            java.nio.file.Files.delete(file);
        }
    }

    @Test
    void mistakesNameTheFileAndTheEntry() {
        assertError(GOOD.replace("rank: 1,", "rank: 5,"), "ranks[1]: ranks must be listed in order");
        assertError(GOOD.replace("datacenter: b,", "datacenter: c,"), "ranks[2]: data center 'c' is not listed");
        assertError(GOOD.replace("ip: 10.0.1.2", "ip: fd00::2"), "ranks[1]: ip fd00:0:0:0:0:0:0:2 is not an ipv4 address");
        assertError(GOOD.replace("form: id", "form: ipx"), "datacenters[1] (b): unknown network form");
        assertError(GOOD.replace("{ip: 10.0.1.254}", "{mac: \"02:00:00:00:01:fe\"}"), "datacenters[0] (a).gateway: the ipv4 form needs an ip");
        assertError(GOOD.replace(", gateway: {ip: 10.0.1.254}", ""), "data center a has no gateway next hop");
        assertError(GOOD.replace("job: 3", "job: 70000"), "job id must be 1..65535");
        assertError(GOOD.replace("job: 3", "job: 3\nworkers: 4"), "top level: unknown key 'workers'");
        assertError(GOOD.replace("ip: 10.0.1.1", "ip: example.com"), "'example.com' is not an IP address literal");
        assertError("[1, 2]", "expected a mapping");
    }

    private static void assertError(String yaml, String fragment) {
        var e = assertThrows(IllegalArgumentException.class, () -> ClusterFile.parse(yaml, "c.yaml"));
        assertTrue(e.getMessage().startsWith("c.yaml: "), e.getMessage());
        assertTrue(e.getMessage().contains(fragment), "expected '" + fragment + "' in: " + e.getMessage());
    }
}
