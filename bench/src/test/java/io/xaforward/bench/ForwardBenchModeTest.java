package io.xaforward.bench;

import io.xaforward.testbed.mode.GatewayMode;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The forwarding bench's modes: the reference and the gateway modes it measures, by their words. */
class ForwardBenchModeTest {

    @Test
    void wordsReadBackAndNameTheGatewayMode() {
        for (ForwardBench.Mode m : ForwardBench.Mode.values()) assertEquals(m, ForwardBench.Mode.fromName(m.configName()));
        assertEquals(ForwardBench.Mode.REFERENCE, ForwardBench.Mode.fromName("xdp-bench"));
        assertNull(ForwardBench.Mode.REFERENCE.gateway());
        assertEquals(GatewayMode.RELAY, ForwardBench.Mode.RELAY.gateway());
        assertEquals("relay", ForwardBench.Mode.RELAY.configName());
        assertEquals(ForwardBench.Mode.REFERENCE, ForwardBench.Mode.fromName("Ref"));
        var e = assertThrows(IllegalArgumentException.class, () -> ForwardBench.Mode.fromName("kernel-tunnel"));
        assertEquals("the forwarding bench does not measure the kernel-tunnel mode; expected one of reference, xdp,"
                + " kernel, relay, afxdp", e.getMessage());
    }
}
