package io.xaforward.cluster;

import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Testbed;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Without an emulated WAN, the packets between the data centers are those that left the gateway's ports. */
@Timeout(120)
class NetworkSampleTest {

    @Test
    void withoutAWanThePacketsBetweenDataCentersAreCountedAtTheGatewaysPorts() throws Exception {
        Path state = Files.createTempDirectory("xaf-network-sample-");
        Testbed testbed = new Testbed(state);
        Topology t = Topology.load(Path.of("..", "topologies", "two-dc-ipv4-edge.yaml"))
                .withPrefix("ns" + Long.toHexString(ProcessHandle.current().pid() % 0xFFF));
        try {
            TestbedState s = testbed.up(t);
            Placement unpinned = new Placement();
            NetworkSample before = NetworkSample.take(t, unpinned);
            // 20 UDP datagrams to the XAF port through the gateway (its kernel forwards them; nobody listens, so at
            // most 20 ICMP errors come back the same way)
            Netns.exec(s.host("a", 0).namespace(), "bash", "-c",
                    "for i in $(seq 20); do echo x > /dev/udp/" + s.host("b", 0).ipText() + "/9450; done");
            Map<String, Long> m = NetworkSample.take(t, unpinned).since(before);
            long packets = m.get("wan_packets");
            assertTrue(packets >= 20 && packets <= 45, "packets out of the gateway's ports: " + packets);
            assertEquals(0L, m.get("wan_bytes_to_dc"));
            assertEquals(0L, m.get("wan_drops"));
        } finally {
            testbed.down(t);
        }
    }
}
