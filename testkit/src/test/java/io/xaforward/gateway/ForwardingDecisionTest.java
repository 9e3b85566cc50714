package io.xaforward.gateway;

import io.xaforward.dataplane.Counter;
import io.xaforward.dataplane.CounterSnapshot;
import io.xaforward.testkit.ProgTestRun;
import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.SharedLayouts;
import io.xaforward.dataplane.XafDataplane;
import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The Java engines' route checks against the XDP program (BPF_PROG_TEST_RUN, needs root as CI runs): for frames
 * that fail several checks at once, both must name the same first failure, in PROTOCOL.md §7's order (ingress port
 * before hairpin before job token before hop limit before the egress MTU). The relay and the AF_XDP gateway both call
 * {@link ForwardingDecision}.
 */
class ForwardingDecisionTest {
    static final int LO = 1, PORT_SLOT = 0, OTHER_SLOT = 1, TX_SLOT = 2, NET = 0x00030001, JOB = 7, TOKEN = 0x5eed1234;
    static final byte[] MAC_A = {2, 0, 0, 0, 0, 1}, MAC_B = {2, 0, 0, 0, 0, 2};

    /** The test frames carry 8 payload bytes in the ID form: 12 + 48 + 8 bytes after Ethernet. */
    static final int FITS_EXACTLY = 68;

    record JavaRoute(long ingressMask, int jobId, int jobToken, int egressMtu, NetworkForm egressForm, int egressSlot)
            implements ForwardingDecision.RouteChecks {
        JavaRoute(long ingressMask, int jobId, int jobToken, int egressMtu, NetworkForm egressForm) {
            this(ingressMask, jobId, jobToken, egressMtu, egressForm, TX_SLOT);
        }

        JavaRoute(long ingressMask, int jobId, int jobToken, int egressMtu) { this(ingressMask, jobId, jobToken, egressMtu, NetworkForm.ID); }

        JavaRoute(long ingressMask, int jobId, int jobToken) { this(ingressMask, jobId, jobToken, 1500); }
    }

    /** An ID-form frame carrying an XAF header with the given fields and 8 bytes of payload. */
    static byte[] frame(int networkId, int jobId, int token, int hop) {
        int outer = NetworkForm.ID.outerHeaderLength();
        MemorySegment seg = MemorySegment.ofArray(new byte[outer + XafHeader.LENGTH + 8]);
        new XafHeader().wrap(seg, outer).init().type(1).networkId(networkId).jobId(jobId).jobToken(token)
                .hopLimit(hop).chunkCount(1).payloadLength(8);
        int len = new FrameWriter().encapsulate(seg, NetworkForm.ID,
                new OuterAddressing().srcMac(MAC_A).dstMac(MAC_B).srcId(0x11).dstId(networkId));
        return seg.asSlice(0, len).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
    }

    static Counter xdpCounter(ForwardingDecision.Verdict v) {
        // no devmap entry in the test: a forward fails at the redirect
        return v == ForwardingDecision.Verdict.FORWARD ? Counter.DROP_REDIRECT : v.counter();
    }

    /** Runs one frame through the XDP program and returns the single outcome counter it moved. */
    static Counter xdp(XafDataplane dp, byte[] frame) {
        CounterSnapshot before = dp.counters();
        ProgTestRun.run(dp.programFd(), frame, LO, 0);
        CounterSnapshot d = dp.counters().minus(before);
        Counter moved = null;
        for (Counter c : Counter.values()) {
            if (c == Counter.RX_XAF || d.packets(c) == 0) continue;
            assertNull(moved, "one outcome per frame: " + d);
            moved = c;
        }
        assertEquals(1, d.packets(Counter.RX_XAF));
        return moved;
    }

    @Test
    void everyEngineNamesTheSameFirstFailure() {
        try (XafDataplane dp = XafDataplane.load()) {
            dp.setPort(LO, PORT_SLOT, SharedLayouts.FORM_ID);
            Random random = new Random(42);
            XafHeader xaf = new XafHeader();
            int[] seen = new int[ForwardingDecision.Verdict.values().length];
            for (int i = 0; i < 400; i++) {
                // Each check fails or passes at random, several at once.
                long mask = switch (random.nextInt(3)) {
                    case 0 -> 0L;
                    case 1 -> 1L << PORT_SLOT;
                    default -> 1L << OTHER_SLOT;
                };
                boolean routed = random.nextInt(6) != 0;
                int txSlot = random.nextInt(4) == 0 ? PORT_SLOT : TX_SLOT; // back out of the arrival port: a hairpin
                int job = random.nextInt(4) == 0 ? JOB + 1 : JOB;
                int token = random.nextInt(4) == 0 ? TOKEN ^ 1 : TOKEN;
                int hop = random.nextInt(4) == 0 ? random.nextInt(2) : 2 + random.nextInt(60);
                int mtu = random.nextInt(4) == 0 ? FITS_EXACTLY - 1 : random.nextBoolean() ? FITS_EXACTLY : 9000;
                dp.setPortMtu(txSlot, mtu); // no devmap entry: a frame that passes every check fails at the redirect
                if (routed) {
                    dp.putRoute(NET, Route.forward(txSlot, SharedLayouts.FORM_ID, mask, JOB, TOKEN, 0x22, MAC_A, MAC_B,
                            null, null, 9450, 9450));
                } else {
                    dp.deleteRoute(NET);
                }
                byte[] f = frame(NET, job, token, hop);
                ForwardingDecision.Verdict java = ForwardingDecision.decide(xaf.wrap(MemorySegment.ofArray(f),
                        NetworkForm.ID.outerHeaderLength()), routed ? new JavaRoute(mask, JOB, TOKEN, mtu, NetworkForm.ID, txSlot) : null, PORT_SLOT);
                seen[java.ordinal()]++;
                String what = "mask " + mask + " tx slot " + txSlot + " routed " + routed + " job " + job + " token " + Integer.toHexString(token) + " hop " + hop + " mtu " + mtu;
                assertEquals(xdpCounter(java), xdp(dp, f), what + ": Java said " + java);
            }
            for (ForwardingDecision.Verdict v : ForwardingDecision.Verdict.values()) {
                assertTrue(seen[v.ordinal()] > 10, "every verdict exercised: " + java.util.Arrays.toString(seen));
            }
        }
    }

    /** A frame of {@code form} carrying an XAF header for NET and {@code payload} zero bytes of payload. */
    static byte[] frame(NetworkForm form, int payload) {
        int outer = form.outerHeaderLength();
        MemorySegment seg = MemorySegment.ofArray(new byte[outer + XafHeader.LENGTH + payload]);
        new XafHeader().wrap(seg, outer).init().type(1).networkId(NET).jobId(JOB).jobToken(TOKEN).hopLimit(9)
                .chunkCount(1).payloadLength(payload);
        OuterAddressing a = new OuterAddressing().srcMac(MAC_A).dstMac(MAC_B);
        switch (form) {
            case IPV4 -> a.srcIp(new byte[] {10, 0, 0, 1}).dstIp(new byte[] {10, 0, 0, 2}).srcPort(40000).dstPort(XafHeader.UDP_PORT);
            case IPV6 -> a.srcIp(v6(1)).dstIp(v6(2)).srcPort(40000).dstPort(XafHeader.UDP_PORT);
            case ID -> a.srcId(0x11).dstId(NET);
        }
        int len = new FrameWriter().encapsulate(seg, form, a);
        return seg.asSlice(0, len).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
    }

    static byte[] v6(int last) {
        byte[] b = new byte[16];
        b[0] = (byte) 0xfd;
        b[15] = (byte) last;
        return b;
    }

    /**
     * The egress-MTU boundary of every form pair at 1500 and 9000 (jumbo: multi-buffer frames in the XDP program): the
     * largest payload the egress port takes and one byte more get the same verdict from the Java decision the relay
     * and AF_XDP engines use and from the XDP program, and that verdict is forward, then drop_too_big.
     */
    @Test
    void everyEngineDrawsTheMtuLineAtTheSameByte() {
        try (XafDataplane dp = XafDataplane.load()) {
            XafHeader xaf = new XafHeader();
            int checked = 0;
            for (int mtu : new int[] {1500, 9000}) {
                for (NetworkForm in : NetworkForm.values()) {
                    dp.setPort(LO, PORT_SLOT, in.code());
                    for (NetworkForm out : NetworkForm.values()) {
                        boolean ip = out != NetworkForm.ID;
                        dp.setTxPort(TX_SLOT, LO, mtu);
                        dp.putRoute(NET, Route.forward(TX_SLOT, out.code(), 0, JOB, TOKEN, 0x22, MAC_A, MAC_B,
                                ip ? (out == NetworkForm.IPV4 ? new byte[] {10, 1, 0, 1} : v6(3)) : null,
                                ip ? (out == NetworkForm.IPV4 ? new byte[] {10, 2, 0, 1} : v6(4)) : null,
                                ip ? 40001 : 0, ip ? XafHeader.UDP_PORT : 0));
                        JavaRoute route = new JavaRoute(0, JOB, TOKEN, mtu, out);
                        int largest = ForwardingDecision.maxPayload(out, mtu);
                        for (int payload : new int[] {largest, largest + 1}) {
                            byte[] f = frame(in, payload);
                            ForwardingDecision.Verdict java = ForwardingDecision.decide(xaf.wrap(MemorySegment.ofArray(f),
                                    in.outerHeaderLength()), route, PORT_SLOT);
                            String what = in + " -> " + out + " at MTU " + mtu + ", payload " + payload;
                            assertEquals(payload == largest ? ForwardingDecision.Verdict.FORWARD : ForwardingDecision.Verdict.DROP_TOO_BIG, java, what);
                            Counter expected = java == ForwardingDecision.Verdict.FORWARD ? Counter.FORWARDED : Counter.DROP_TOO_BIG;
                            assertEquals(expected, xdp(dp, f), what);
                            checked++;
                        }
                    }
                }
            }
            assertEquals(2 * 9 * 2, checked);
        }
    }

    @Test
    void hairpinIsRefusedUnlessTheRouteListsTheArrivalPort() {
        XafHeader xaf = new XafHeader().wrap(MemorySegment.ofArray(frame(NET, JOB + 1, TOKEN ^ 1, 0)), NetworkForm.ID.outerHeaderLength());
        // no ingress list, leaving by the arrival port: refused before the token and the hop limit are looked at
        assertEquals(ForwardingDecision.Verdict.DROP_HAIRPIN,
                ForwardingDecision.decide(xaf, new JavaRoute(0, JOB, TOKEN, 1500, NetworkForm.ID, PORT_SLOT), PORT_SLOT));
        // the route names the arrival port as ingress: an explicit hairpin, decided on as any other frame
        assertEquals(ForwardingDecision.Verdict.DROP_BAD_TOKEN,
                ForwardingDecision.decide(xaf, new JavaRoute(1L << PORT_SLOT, JOB, TOKEN, 1500, NetworkForm.ID, PORT_SLOT), PORT_SLOT));
        XafHeader good = new XafHeader().wrap(MemorySegment.ofArray(frame(NET, JOB, TOKEN, 9)), NetworkForm.ID.outerHeaderLength());
        assertEquals(ForwardingDecision.Verdict.FORWARD,
                ForwardingDecision.decide(good, new JavaRoute(1L << PORT_SLOT, JOB, TOKEN, 1500, NetworkForm.ID, PORT_SLOT), PORT_SLOT));
        assertEquals(ForwardingDecision.Verdict.FORWARD,
                ForwardingDecision.decide(good, new JavaRoute(0, JOB, TOKEN, 1500, NetworkForm.ID, TX_SLOT), PORT_SLOT));
    }

    @Test
    void ingressIsCheckedBeforeTheToken() {
        XafHeader xaf = new XafHeader().wrap(MemorySegment.ofArray(frame(NET, JOB + 1, TOKEN ^ 1, 0)), NetworkForm.ID.outerHeaderLength());
        assertEquals(ForwardingDecision.Verdict.DROP_INGRESS,
                ForwardingDecision.decide(xaf, new JavaRoute(1L << OTHER_SLOT, JOB, TOKEN), PORT_SLOT));
        assertEquals(ForwardingDecision.Verdict.DROP_BAD_TOKEN,
                ForwardingDecision.decide(xaf, new JavaRoute(1L << PORT_SLOT, JOB, TOKEN), PORT_SLOT));
        assertEquals(ForwardingDecision.Verdict.DROP_NO_ROUTE, ForwardingDecision.decide(xaf, null, PORT_SLOT));
    }

    /**
     * The hop limit a forwarded frame leaves with, through the XDP program (BPF_PROG_TEST_RUN, its output frame) and
     * the Java engines' {@link ForwardingDecision#forwardedHopLimit}: clamped to the ingress port's cap, then less one,
     * for every arriving value and a few caps (the default 16 included).
     */
    @Test
    void everyEngineClampsTheHopLimitToTheCap() {
        int outer = NetworkForm.ID.outerHeaderLength();
        for (int cap : new int[] {2, 4, ForwardingDecision.DEFAULT_MAX_HOP_LIMIT, 64, 255}) {
            try (XafDataplane dp = XafDataplane.load()) {
                dp.setPort(LO, PORT_SLOT, SharedLayouts.FORM_ID, cap);
                dp.setTxPort(TX_SLOT, LO);
                dp.putRoute(NET, Route.forward(TX_SLOT, SharedLayouts.FORM_ID, 0, JOB, TOKEN, 0x22, MAC_A, MAC_B,
                        null, null, 0, 0));
                for (int hop = 0; hop <= 255; hop++) {
                    ForwardingDecision.Verdict v = ForwardingDecision.decide(header(frame(NET, JOB, TOKEN, hop)),
                            new JavaRoute(0, JOB, TOKEN), PORT_SLOT);
                    ProgTestRun.Result r = ProgTestRun.run(dp.programFd(), frame(NET, JOB, TOKEN, hop), LO, 0);
                    if (hop <= 1) {
                        assertEquals(ForwardingDecision.Verdict.DROP_HOP_LIMIT, v);
                        assertEquals(ProgTestRun.XDP_DROP, r.action(), "hop " + hop);
                        continue;
                    }
                    assertEquals(ForwardingDecision.Verdict.FORWARD, v, "hop " + hop);
                    assertEquals(ProgTestRun.XDP_REDIRECT, r.action(), "cap " + cap + ", hop " + hop);
                    int expected = Math.min(hop, cap) - 1;
                    assertEquals(expected, ForwardingDecision.forwardedHopLimit(hop, cap), "Java, cap " + cap + ", hop " + hop);
                    assertEquals(expected, Byte.toUnsignedInt(r.frame()[outer + XafHeader.HOP_LIMIT_OFFSET]),
                            "XDP, cap " + cap + ", hop " + hop);
                }
            }
        }
    }

    static XafHeader header(byte[] frame) {
        return new XafHeader().wrap(MemorySegment.ofArray(frame), NetworkForm.ID.outerHeaderLength());
    }
}
