package io.xaforward.gateway;

import io.xaforward.dataplane.Counter;
import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.SharedLayouts;
import io.xaforward.dataplane.XafDataplane;
import io.xaforward.protocol.FrameParser;
import io.xaforward.protocol.ParsedFrame;
import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Random;

import static io.xaforward.gateway.ForwardingDecisionTest.*;
import static org.junit.jupiter.api.Assertions.*;

/**
 * Mutated identifier-form frames through the XDP program (BPF_PROG_TEST_RUN, root as in CI) and through the Java
 * reference (FrameParser, then ForwardingDecision): both must reach the same outcome for every frame, and the XDP
 * program must count every frame under exactly one outcome.
 */
class DecisionFuzzTest {
    static final int FRAMES = 20_000;

    static Counter javaOutcome(byte[] frame, FrameParser parser, XafHeader xaf, JavaRoute route) {
        MemorySegment seg = MemorySegment.ofArray(frame);
        ParsedFrame f = parser.parse(seg, frame.length);
        if (f.kind() == ParsedFrame.Kind.NOT_XAF) return Counter.PASS_NON_XAF;
        if (f.kind() == ParsedFrame.Kind.MALFORMED) return Counter.DROP_MALFORMED;
        xaf.wrap(seg, f.xafOffset());
        return xdpCounter(ForwardingDecision.decide(xaf, xaf.networkId() == NET ? route : null, PORT_SLOT));
    }

    @Test
    void mutatedFramesGetTheSameOutcomeFromEveryEngine() {
        Random random = new Random(7);
        FrameParser parser = new FrameParser();
        XafHeader xaf = new XafHeader();
        JavaRoute route = new JavaRoute(0, JOB, TOKEN);
        int disagreements = 0;
        java.util.EnumMap<Counter, Integer> seen = new java.util.EnumMap<>(Counter.class);
        StringBuilder first = new StringBuilder();
        try (XafDataplane dp = XafDataplane.load()) {
            dp.setPort(LO, PORT_SLOT, SharedLayouts.FORM_ID);
            dp.putRoute(NET, Route.forward(TX_SLOT, SharedLayouts.FORM_ID, 0, JOB, TOKEN, 0x22, MAC_A, MAC_B, null, null, 9450, 9450));
            byte[] base = frame(NET, JOB, TOKEN, 16);
            for (int i = 0; i < FRAMES; i++) {
                byte[] f = base.clone();
                int flips = 1 + random.nextInt(3);
                for (int k = 0; k < flips; k++) f[random.nextInt(f.length)] ^= (byte) (1 << random.nextInt(8));
                if (random.nextInt(4) == 0) f = Arrays.copyOf(f, 14 + random.nextInt(f.length - 13)); // cut short
                Counter ref = javaOutcome(f, parser, xaf, route);
                Counter xdpOut = ref == Counter.PASS_NON_XAF ? passOrOutcome(dp, f) : xdp(dp, f);
                seen.merge(ref, 1, Integer::sum);
                if (ref != xdpOut) {
                    if (disagreements++ < 5) first.append("\n").append(ref).append(" vs XDP ").append(xdpOut).append(": ").append(HexFormat.of().formatHex(f));
                }
            }
        }
        assertEquals(0, disagreements, "disagreements between the Java reference and the XDP program:" + first);
        for (Counter c : java.util.List.of(Counter.PASS_NON_XAF, Counter.DROP_MALFORMED, Counter.DROP_NO_ROUTE,
                Counter.DROP_BAD_TOKEN, Counter.DROP_HOP_LIMIT, Counter.DROP_REDIRECT)) {
            assertTrue(seen.getOrDefault(c, 0) > 0, "outcome " + c + " exercised: " + seen);
        }
    }

    /** Non-XAF frames count no RX_XAF: only PASS_NON_XAF moves. */
    static Counter passOrOutcome(XafDataplane dp, byte[] frame) {
        var before = dp.counters();
        io.xaforward.dataplane.ProgTestRun.run(dp.programFd(), frame, LO, 0);
        var d = dp.counters().minus(before);
        Counter moved = null;
        for (Counter c : Counter.values()) {
            if (c == Counter.RX_XAF || d.packets(c) == 0) continue;
            assertNull(moved, "one outcome per frame: " + d);
            moved = c;
        }
        return moved;
    }
}
