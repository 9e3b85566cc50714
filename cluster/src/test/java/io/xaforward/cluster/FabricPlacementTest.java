package io.xaforward.cluster;

import io.xaforward.testbed.Netns;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.testbed.plan.IdentifierPlan;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A placed job counts the emulated fabric apart: every veth end that is not a gateway port has a NAPI thread of its
 * own on the worker CPU, none of them counted as the gateway's, and a worker reading the {@link NetworkCpu} the
 * launcher wrote sees the same threads and their time grow when traffic crosses the fabric.
 */
@Timeout(120)
class FabricPlacementTest {

    @Test
    void fabricThreadsAreOnTheWorkerCpuApartFromTheGatewaysAndCountTheTrafficThatCrossesThem() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Path dir = Files.createTempDirectory("xaf-fabric-placement-");
        ClusterRun.Spec spec = new ClusterRun.Spec(Path.of("..", "topologies", "two-dc-ipv4.yaml"),
                "fp" + Long.toHexString(ProcessHandle.current().pid() % 0xFFF), GatewayMode.KERNEL, 1, 7, dir);
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        try (ClusterRun run = new ClusterRun(spec, new PrintStream(log, true)).placed()) {
            IdentifierPlan plan = run.up();
            Placement placement = run.placement();
            assertTrue(placement.pinning(), "this machine has the two CPUs that placement needs");
            List<Long> fabric = placement.fabricKernelThreads();
            // two-dc-ipv4: 4 hosts and 2 gateway ports on two switches: 6 veth pairs, 12 ends, 2 of them gateway ports
            assertEquals(10, fabric.size(), "one NAPI thread per fabric veth end; log:\n" + log);
            Set<Long> gateway = new HashSet<>(placement.gatewayKernelThreads());
            assertEquals(2, gateway.size());
            for (long tid : fabric) {
                assertFalse(gateway.contains(tid), "thread " + tid + " counted twice");
                String comm = Files.readString(Path.of("/proc", Long.toString(tid), "comm")).trim();
                assertTrue(comm.startsWith("napi/"), comm);
                String status = Files.readString(Path.of("/proc", Long.toString(tid), "status"));
                assertTrue(status.lines().anyMatch(l -> l.matches("Cpus_allowed_list:\\s+" + Placement.WORKER_CPU)),
                        comm + " runs on the worker CPU only:\n" + status);
            }

            Path file = dir.resolve("network-cpu.properties");
            placement.networkCpu().write(file);
            NetworkCpu read = NetworkCpu.read(file);
            assertEquals(placement.networkCpu(), read);
            assertTrue(read.placed());
            assertEquals(NetworkCpu.NONE, NetworkCpu.read(dir.resolve("absent.properties")));
            assertFalse(NetworkCpu.NONE.placed());

            long fabricBefore = read.fabricCpuNs(), gatewayBefore = read.gatewayCpuNs();
            // Rank 0 (DC a) sends UDP to the XAF port of rank 2 (DC b), which the edge firewall lets through: across
            // a's switch, the gateway and b's switch (no listener needed: the frames cross the fabric all the same).
            String target = plan.host(2).ipText();
            Netns.exec(plan.host(0).namespace(), java.time.Duration.ofSeconds(30), null, List.of("bash", "-c",
                    "for i in $(seq 500); do echo datagram > /dev/udp/" + target + "/9450; done"));
            assertTrue(read.fabricCpuNs() > fabricBefore, "the fabric's threads ran for the datagrams");
            assertTrue(read.gatewayCpuNs() > gatewayBefore, "the gateway's threads ran for the datagrams");
        }
    }
}
