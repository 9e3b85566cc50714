package io.xaforward.testbed.mode;

import io.xaforward.protocol.NetworkForm;

import org.junit.jupiter.api.Test;

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
}
