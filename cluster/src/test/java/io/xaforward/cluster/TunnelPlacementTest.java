package io.xaforward.cluster;

import io.xaforward.testbed.Netns;
import io.xaforward.testbed.mode.GatewayMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The kernel tunnel's VXLAN devices in the gateway's namespace run NAPI in threads pinned to the gateway CPU and
 * counted as the gateway's: without that their GRO cells run as softirqs that a gateway CPU budget does not hold
 * and the gateway's measured CPU time leaves out.
 */
@Timeout(120)
class TunnelPlacementTest {

    @Test
    void theTunnelsVxlanDevicesRunInGatewayThreadsOnTheGatewayCpu() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        Path dir = Files.createTempDirectory("xaf-tunnel-placement-");
        ClusterRun.Spec spec = new ClusterRun.Spec(Path.of("..", "topologies", "two-dc-edge.yaml"),
                "tp" + Long.toHexString(ProcessHandle.current().pid() % 0xFFF), GatewayMode.KERNEL_TUNNEL, 1, 7, dir);
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        try (ClusterRun run = new ClusterRun(spec, new PrintStream(log, true)).placed()) {
            run.up();
            assertTrue(run.placement().pinning(), "this machine has the two CPUs that placement needs");
            List<String> vxlan = new ArrayList<>();
            for (long tid : run.placement().gatewayKernelThreads()) {
                String comm = Files.readString(Path.of("/proc", Long.toString(tid), "comm")).trim();
                if (!comm.startsWith("napi/xafvx")) continue;
                vxlan.add(comm);
                String status = Files.readString(Path.of("/proc", Long.toString(tid), "status"));
                assertTrue(status.lines().anyMatch(l -> l.matches("Cpus_allowed_list:\\s+" + Placement.GATEWAY_CPU)),
                        comm + " runs on the gateway CPU only:\n" + status);
            }
            assertFalse(vxlan.isEmpty(), "the gateway's VXLAN devices have NAPI threads of the gateway's; log:\n" + log);
        }
    }
}
