package io.xaforward.testbed.mode;

import io.xaforward.protocol.NetworkForm;

import org.junit.jupiter.api.Test;

import java.util.EnumMap;
import java.util.Map;
import java.util.StringJoiner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Mode names, and which form pairs each mode can carry. */
class GatewayModeTest {

    /** The words in the order the benchmarks compare the modes, '-' between words (read back: cli's ConfigWordsTest). */
    @Test
    void namesInBenchmarkOrder() {
        assertEquals("xdp, kernel, kernel-tunnel, relay, afxdp, direct", GatewayMode.names());
        assertEquals(GatewayMode.KERNEL_TUNNEL, GatewayMode.fromName("kernel-tunnel"));
        assertThrows(IllegalArgumentException.class, () -> GatewayMode.fromName("kernel_tunnel"));
    }

    @Test
    void baselinesCarryWhatTheyCan() {
        assertTrue(GatewayMode.KERNEL_TUNNEL.supports(NetworkForm.IPV4, NetworkForm.IPV6));
        assertTrue(GatewayMode.KERNEL_TUNNEL.supports(NetworkForm.IPV6, NetworkForm.IPV4));
        assertFalse(GatewayMode.KERNEL_TUNNEL.supports(NetworkForm.IPV4, NetworkForm.IPV4));
        assertTrue(GatewayMode.KERNEL_TUNNEL.unsupportedReason(NetworkForm.ID, NetworkForm.IPV4).contains("identifier-native"));
        assertTrue(GatewayMode.DIRECT.supports(NetworkForm.IPV4, NetworkForm.IPV6));
        assertFalse(GatewayMode.DIRECT.supports(NetworkForm.ID, NetworkForm.IPV6));
        assertTrue(GatewayMode.DIRECT.sendersAddressDestination());
        assertFalse(GatewayMode.XDP.sendersAddressDestination());
    }

    @Test
    void onlyTheXdpGatewayInjectsLoss() {
        assertTrue(GatewayMode.XDP.newRunner(50) instanceof XdpGateway);
        for (GatewayMode m : GatewayMode.values()) {
            assertEquals(m, m.newRunner().mode());
            if (m == GatewayMode.XDP) continue;
            var e = assertThrows(IllegalArgumentException.class, () -> m.newRunner(50));
            assertTrue(e.getMessage().contains("needs the xdp gateway mode, not " + m.configName()), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> GatewayMode.XDP.newRunner(-1));
    }

    @Test
    void onlyUserSpaceGatewaysForwardInTheirProcess() {
        for (GatewayMode m : GatewayMode.values()) {
            assertEquals(m == GatewayMode.RELAY || m == GatewayMode.AFXDP, m.forwardsInProcess(), m.configName());
        }
    }

    @Test
    void onlyKernelForwardingNeedsDataCentersOfOneFamily() {
        for (GatewayMode m : GatewayMode.values()) assertEquals(m != GatewayMode.KERNEL, m.crossesIpFamilies(), m.configName());
    }

    @Test
    void everyModeCarriesExactlyItsFormPairsAndOnlyXdpNeedsProgramsOnPortPeers() {
        // mode: the form pairs it carries, as "src>dst" in NetworkForm order; the others must give a reason
        Map<GatewayMode, String> expected = new EnumMap<>(Map.of(
                GatewayMode.XDP, "ipv4>ipv4 ipv4>ipv6 ipv4>id ipv6>ipv4 ipv6>ipv6 ipv6>id id>ipv4 id>ipv6 id>id",
                GatewayMode.KERNEL, "ipv4>ipv4 ipv6>ipv6",
                GatewayMode.KERNEL_TUNNEL, "ipv4>ipv6 ipv6>ipv4",
                GatewayMode.RELAY, "ipv4>ipv4 ipv4>ipv6 ipv4>id ipv6>ipv4 ipv6>ipv6 ipv6>id id>ipv4 id>ipv6 id>id",
                GatewayMode.AFXDP, "ipv4>ipv4 ipv4>ipv6 ipv4>id ipv6>ipv4 ipv6>ipv6 ipv6>id id>ipv4 id>ipv6 id>id",
                GatewayMode.DIRECT, "ipv4>ipv4 ipv4>ipv6 ipv6>ipv4 ipv6>ipv6"));
        for (GatewayMode m : GatewayMode.values()) {
            StringJoiner carried = new StringJoiner(" ");
            for (NetworkForm src : NetworkForm.values()) {
                for (NetworkForm dst : NetworkForm.values()) {
                    String reason = m.unsupportedReason(src, dst);
                    if (reason == null) carried.add(src.configName() + ">" + dst.configName());
                    else assertTrue(reason.contains(src.configName() + " -> " + dst.configName())
                            || reason.contains("identifier-native"), reason);
                }
            }
            assertEquals(expected.get(m), carried.toString(), m.configName());
            assertEquals(m == GatewayMode.XDP, m.needsXdpOnPortPeers(), m.configName());
        }
    }
}
