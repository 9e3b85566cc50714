package io.xaforward.gateway;

import io.xaforward.dataplane.Counter;
import io.xaforward.dataplane.GoldenFixture;
import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.SharedLayouts;
import io.xaforward.dataplane.sys.Syscalls;
import io.xaforward.protocol.FrameParser;
import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.ParsedFrame;
import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The XDP program's golden packets (the dataplane's data files) through the Java engines' decision: FrameParser,
 * {@link ForwardingDecision} with the ingress port's hop limit cap, and the rewrite with {@link FrameWriter}, as the
 * relay and AF_XDP gateways do it. Every fixture whose outcome the Java engines decide must get the fixture's counter,
 * action and output frame. XDP-only cases are left out, by what their setup holds: frames on an interface that is
 * not a port, LOCAL routes (AF_XDP sockets), a route without an egress port or with an unknown form.
 */
class GoldenDecisionTest {

    /** The Java outcome of one fixture, or null with {@code why} when the Java engines do not decide it. */
    record Outcome(Counter counter, byte[] output, String why) {}

    @TestFactory
    Stream<DynamicTest> javaEnginesDecideAsTheGoldenPacketsSay() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Map.Entry<String, List<GoldenFixture>> file : GoldenFixture.all().entrySet()) {
            for (GoldenFixture fx : file.getValue()) {
                Outcome o = decide(fx);
                if (o.counter() != null) tests.add(DynamicTest.dynamicTest(file.getKey() + ": " + fx.name(), () -> check(fx, o)));
            }
        }
        return tests.stream();
    }

    @Test
    void mostGoldenPacketsAreDecidedByTheJavaEngines() {
        long all = 0, decided = 0;
        for (List<GoldenFixture> fixtures : GoldenFixture.all().values()) {
            for (GoldenFixture fx : fixtures) {
                all++;
                if (decide(fx).counter() != null) decided++;
            }
        }
        // 183 fixtures; 14 are XDP-only: the 8 LOCAL ones, and among the drops and passes LOCAL without a socket,
        // no egress port (two), an unknown egress form and a frame on an interface that is not a port, and the LOCAL
        // route among the hairpins
        assertEquals(183, all, "golden packets");
        assertEquals(169, decided, "golden packets the Java engines decide");
    }

    static void check(GoldenFixture fx, Outcome o) {
        assertEquals(fx.counter(), o.counter(), "outcome");
        assertEquals(fx.expectedAction(), GoldenFixture.actionOf(o.counter()), "action");
        assertEquals(fx.isXaf(), o.counter() != Counter.PASS_NON_XAF, "XAF frame");
        if (fx.expectedOutput() != null) {
            assertArrayEquals(fx.expectedOutput(), o.output(), () -> "output frame\n expected " + HexFormat.of().formatHex(fx.expectedOutput())
                    + "\n java     " + HexFormat.of().formatHex(o.output()));
        }
    }

    static Outcome skip(String why) {
        return new Outcome(null, null, why);
    }

    /** What the Java engines do with the fixture's frame, on a port and routes set up as the fixture says. */
    static Outcome decide(GoldenFixture fx) {
        GoldenFixture.Port port = null;
        GoldenFixture.TxPort tx = null;
        GoldenFixture.RouteEntry route = null;
        for (GoldenFixture.Setup s : fx.setup()) {
            switch (s) {
                case GoldenFixture.Port p when p.ifindex() == GoldenFixture.IFINDEX -> port = p;
                case GoldenFixture.Port p -> { }
                case GoldenFixture.TxPort t -> tx = t;
                case GoldenFixture.RouteEntry r -> route = r;
            }
        }
        if (port == null) return skip("not a port: XDP attach");
        byte[] frame = fx.input();
        MemorySegment in = MemorySegment.ofArray(frame);
        ParsedFrame f = new FrameParser().parse(in, frame.length);
        if (f.kind() == ParsedFrame.Kind.NOT_XAF) return new Outcome(Counter.PASS_NON_XAF, frame.clone(), null);
        if (f.kind() == ParsedFrame.Kind.MALFORMED) return new Outcome(Counter.DROP_MALFORMED, null, null);
        XafHeader xaf = new XafHeader().wrap(in, f.xafOffset());
        Route r = route == null || route.networkId() != xaf.networkId() ? null : route.route();
        if (r != null && r.action() == SharedLayouts.ACTION_LOCAL) return skip("LOCAL: AF_XDP socket");
        if (r != null && (tx == null || tx.slot() != r.txSlot())) return skip("no egress port: devmap");
        if (r != null && (r.egressForm() < SharedLayouts.FORM_IPV4 || r.egressForm() > SharedLayouts.FORM_ID)) return skip("unknown egress form");
        int mtu = tx == null ? 0 : tx.mtu() != 0 ? tx.mtu() : Syscalls.mtu(Syscalls.ifIndexToName(tx.ifindex()));
        ForwardingDecision.RouteChecks checks = r == null ? null : new Checks(r, mtu);
        ForwardingDecision.Verdict v = ForwardingDecision.decide(xaf, checks, port.slot());
        return new Outcome(v.counter(), v == ForwardingDecision.Verdict.FORWARD ? rewrite(in, f, xaf, r, port) : null, null);
    }

    /**
     * The engines' rewrite: XAF header and payload behind fresh outer headers, the hop limit clamped and decremented,
     * the UDP source port picked from the route's span by the frame's src_rank and ingress source port.
     */
    static byte[] rewrite(MemorySegment in, ParsedFrame f, XafHeader inXaf, Route r, GoldenFixture.Port port) {
        int networkId = inXaf.networkId();
        int srcPort = ForwardingDecision.egressSourcePort(r.srcPort(), r.srcPortSpan(), inXaf, in, f);
        NetworkForm egress = NetworkForm.fromCode(r.egressForm());
        int outer = egress.outerHeaderLength();
        int xafBytes = XafHeader.LENGTH + f.payloadLength();
        MemorySegment out = MemorySegment.ofArray(new byte[outer + xafBytes]);
        MemorySegment.copy(in, f.xafOffset(), out, outer, xafBytes);
        XafHeader xaf = new XafHeader().wrap(out, outer);
        int cap = port.maxHop() == 0 ? ForwardingDecision.DEFAULT_MAX_HOP_LIMIT : port.maxHop();
        xaf.hopLimit(ForwardingDecision.forwardedHopLimit(xaf.hopLimit(), cap));
        OuterAddressing a = new OuterAddressing().srcMac(r.srcMac()).dstMac(r.dstMac());
        switch (egress) {
            case IPV4 -> a.srcIp(Arrays.copyOf(r.srcIp(), 4)).dstIp(Arrays.copyOf(r.dstIp(), 4)).srcPort(srcPort).dstPort(r.dstPort());
            case IPV6 -> a.srcIp(r.srcIp()).dstIp(r.dstIp()).srcPort(srcPort).dstPort(r.dstPort());
            case ID -> a.srcId(r.srcId()).dstId(networkId);
        }
        int length = new FrameWriter().encapsulate(out, egress, a);
        return out.asSlice(0, length).toArray(ValueLayout.JAVA_BYTE);
    }

    /** A fixture's route as the Java engines' route checks. */
    record Checks(Route r, int egressMtu) implements ForwardingDecision.RouteChecks {
        @Override public long ingressMask() { return r.ingressMask(); }
        @Override public int jobId() { return r.jobId(); }
        @Override public int jobToken() { return r.jobToken(); }
        @Override public NetworkForm egressForm() { return NetworkForm.fromCode(r.egressForm()); }
        @Override public int egressSlot() { return r.txSlot(); }
    }

    @Test
    void outcomeCountsAreExercised() {
        // every Java outcome appears among the golden packets, so none of them is compared against nothing
        java.util.EnumSet<Counter> seen = java.util.EnumSet.noneOf(Counter.class);
        for (List<GoldenFixture> fixtures : GoldenFixture.all().values()) {
            for (GoldenFixture fx : fixtures) {
                Outcome o = decide(fx);
                if (o.counter() != null) seen.add(o.counter());
            }
        }
        assertTrue(seen.containsAll(List.of(Counter.PASS_NON_XAF, Counter.FORWARDED, Counter.DROP_MALFORMED, Counter.DROP_NO_ROUTE,
                Counter.DROP_INGRESS, Counter.DROP_HAIRPIN, Counter.DROP_BAD_TOKEN, Counter.DROP_HOP_LIMIT, Counter.DROP_TOO_BIG)), seen::toString);
    }
}
