package io.xaforward.dataplane;

import io.xaforward.dataplane.xsk.XskConfig;
import io.xaforward.dataplane.xsk.XskSocket;
import io.xaforward.testkit.ProgTestRun;
import org.junit.jupiter.api.Test;

import static io.xaforward.dataplane.GoldenFixtures.*;
import static io.xaforward.dataplane.TestFrames.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * LOCAL routes hand frames to the AF_XDP socket registered for the frame's rx queue. With a real (copy-mode) socket
 * bound to queue 0 of a veth in a namespace made here, the redirect succeeds and counts TO_LOCAL; the frame keeps its
 * form, unchanged (PROTOCOL.md §7: LOCAL does not touch the hop limit).
 */
class LocalDeliveryTest {
    @Test
    void localRouteRedirectsToTheQueuesSocket() throws Throwable {
        try (NetNs ns = NetNs.create("xafdl-" + ProcessHandle.current().pid(), n -> n.vethPair("la0", "lb0"))) {
            ns.call(() -> {
                try (XafDataplane dp = XafDataplane.load()) {
                    int ifindex = LibBpf.ifNameToIndex("la0");
                    dp.setPort(ifindex, IN_SLOT, SharedLayouts.FORM_IPV6);
                    dp.putRoute(NET, Route.local(1L << IN_SLOT, JOB, TOKEN));
                    Xaf x = Xaf.of(5, NET, JOB, TOKEN, payload(501, 3));
                    byte[] frame = ingress(SharedLayouts.FORM_IPV6, x.bytes());

                    ProgTestRun.Result none = ProgTestRun.run(dp.programFd(), frame, ifindex, 0);
                    assertEquals(ProgTestRun.XDP_DROP, none.action(), "no socket on queue 0 yet");

                    try (XskSocket xsk = XskSocket.open("la0", 0, XskConfig.small())) {
                        dp.setXsk(0, xsk.fd());
                        CounterSnapshot before = dp.counters();
                        ProgTestRun.Result r = ProgTestRun.run(dp.programFd(), frame, ifindex, 0);
                        CounterSnapshot delta = dp.counters().minus(before);
                        assertEquals(ProgTestRun.XDP_REDIRECT, r.action(), r::actionName);
                        assertEquals(1, delta.packets(Counter.TO_LOCAL), delta::toString);
                        assertEquals(frame.length, delta.bytes(Counter.TO_LOCAL));
                        assertArrayEquals(ingress(SharedLayouts.FORM_IPV6, x.bytes()), r.frame());
                        assertEquals(udpChecksum(r.frame()), getShort(r.frame(), 60));
                        dp.deleteXsk(0);
                    }
                }
                return null;
            });
        }
    }
}
