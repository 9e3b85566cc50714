package io.xaforward.dataplane;

import io.xaforward.testkit.ProgTestRun;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

import static io.xaforward.dataplane.GoldenFixtures.*;
import static io.xaforward.dataplane.TestFrames.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Corrupts one byte of a valid XAF frame (or cuts it short) and runs it through the real program: whatever the
 * damage, the program answers PASS, DROP or REDIRECT, counts the frame exactly once, and anything it forwards
 * carries the checksum of the frame as the sender built it (a damaged payload stays detectable end to end).
 */
class GatewayFuzzTest {
    static XafDataplane dp;

    @BeforeContainer
    static void load() {
        dp = XafDataplane.load();
        dp.setPort(LO, IN_SLOT, SharedLayouts.FORM_IPV4);
        dp.setTxPort(TX_SLOT, LO);
        dp.putRoute(NET, route(SharedLayouts.FORM_IPV6));
    }

    @AfterContainer
    static void close() {
        if (dp != null) dp.close();
    }

    @Property(tries = 400)
    void corruptedFramesAreHandledAndCountedOnce(@ForAll @IntRange(min = 0, max = 200) int position,
                                                 @ForAll byte value,
                                                 @ForAll @IntRange(min = 0, max = 40) int cut,
                                                 @ForAll @IntRange(min = 0, max = 300) int payloadLen) {
        byte[] payload = payload(payloadLen, position);
        byte[] frame = ingress(SharedLayouts.FORM_IPV4, Xaf.of(4, NET, JOB, TOKEN, payload).bytes());
        byte[] intact = frame.clone();
        if (position < frame.length) frame[position] = value;
        if (cut > 0) frame = java.util.Arrays.copyOf(frame, Math.max(14, frame.length - cut));

        CounterSnapshot before = dp.counters();
        ProgTestRun.Result r = ProgTestRun.run(dp.programFd(), frame, LO, 0);
        CounterSnapshot delta = dp.counters().minus(before);

        assertTrue(r.action() == ProgTestRun.XDP_PASS || r.action() == ProgTestRun.XDP_DROP || r.action() == ProgTestRun.XDP_REDIRECT, r.actionName());
        assertEquals(1, delta.totalFrames(), delta::toString);
        if (r.action() == ProgTestRun.XDP_REDIRECT) {
            byte[] out = r.frame();
            assertEquals(1, delta.packets(Counter.FORWARDED));
            assertEquals(0x86DD, getShort(out, 12));
            // The gateway never reads the payload: its checksum covers the payload the sender described (payload_sum),
            // so a payload damaged on the way still fails the receiver's UDP check, and an intact one passes.
            byte[] asSent = out.clone();
            System.arraycopy(payload, 0, asSent, 62 + 48, payload.length);
            if (getShort(frame, 42 + 42) == getShort(intact, 42 + 42)) {
                assertEquals(udpChecksum(asSent), getShort(out, 60), "UDP checksum of a forwarded frame");
            } else {
                // the damage hit payload_sum itself: the checksum built from it no longer fits the payload, so the
                // receiver's UDP check drops the frame
                assertNotEquals(udpChecksum(asSent), getShort(out, 60), "a damaged payload_sum is detectable");
            }
        }
        if (r.action() == ProgTestRun.XDP_PASS) {
            assertEquals(1, delta.packets(Counter.PASS_NON_XAF));
            assertTrue(java.util.Arrays.equals(frame, r.frame()), "passed frames are untouched");
        }
    }
}
