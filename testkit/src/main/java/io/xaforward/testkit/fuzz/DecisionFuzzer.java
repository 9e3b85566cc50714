package io.xaforward.testkit.fuzz;

import io.xaforward.dataplane.Counter;
import io.xaforward.dataplane.CounterSnapshot;
import io.xaforward.dataplane.PortCounterSnapshot;
import io.xaforward.testkit.ProgTestRun;
import io.xaforward.testkit.ProgTestRunner;
import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.XafDataplane;
import io.xaforward.gateway.ForwardingDecision;
import io.xaforward.protocol.FrameParser;
import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.ParsedFrame;
import io.xaforward.protocol.XafHeader;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Runs {@link FuzzFrames} through the real XDP program (BPF_PROG_TEST_RUN on the compiled xaf_gateway.bpf.o) and
 * through the Java reference decision (FrameParser, then {@link ForwardingDecision}, then the relay/AF_XDP engines'
 * rewrite with {@link FrameWriter}) and compares, for every frame: the outcome counter the program moved (exactly one,
 * plus RX_XAF for XAF frames), the XDP action, the output bytes of forwarded frames and that passed frames are
 * untouched. At the end the program's counter deltas must equal the reference's outcome totals and the drop counters
 * must add up to the frames it dropped, and its per-port counters must show every XAF frame arriving on the fuzz
 * port, every forwarded frame (with its bytes) leaving by the egress slot and every frame too big for that slot. The
 * routes spread flows over UDP source-port spans drawn from the seed (2 and more for the IP forms), so the egress
 * source port each frame's src_rank and ingress source port pick is compared too. Needs root (loading BPF); lo
 * (ifindex 1) stands in for the gateway port and the egress device.
 */
public final class DecisionFuzzer {
    static final int LO = 1, PORT_SLOT = 0, FENCED_SLOT = 1, TX_SLOT = 2;
    /**
     * The egress limit of the fuzz setup's tx slot (lo itself takes 64 kB): jumbo frames, and the fuzz frames' largest
     * payloads do not fit every egress form, so drop_too_big is compared as well (see {@link FuzzFrames#PAYLOAD_LENGTHS}).
     */
    public static final int EGRESS_MTU = FuzzFrames.EGRESS_MTU;
    static final byte[] ROUTE_SRC_MAC = {2, 0, 0, 0, 0, (byte) 0xE1}, ROUTE_DST_MAC = {2, 0, 0, 0, 0, (byte) 0xE2};
    static final int ROUTE_SRC_ID = 0x11223344, ROUTE_SRC_PORT = 40001;

    /**
     * What one fuzz run found. Outcome totals are indexed by {@link Counter#ordinal()}; {@code forwardedSourcePorts}:
     * how many distinct UDP source ports the forwarded IP frames compared left from (the routes' spans at work).
     */
    public record Report(long frames, long seed, double seconds, Map<FuzzFrames.Kind, Long> framesByKind,
                         long[] referenceOutcomes, long[] xdpCounterDeltas, long droppedFrames, long dropCounterSum,
                         long forwardedBytesCompared, long disagreements, List<String> firstDisagreements,
                         long portRxPackets, long portTxPackets, long portTxBytes, long portTxTooBig,
                         int forwardedSourcePorts) {
        public double framesPerSecond() { return frames / seconds; }

        /** XAF frames (identified, malformed included) by the reference: everything it did not pass. */
        public long referenceXafFrames() { return frames - referenceOutcomes[Counter.PASS_NON_XAF.ordinal()]; }

        /**
         * True when every frame agreed, every counter matches the reference and the actions, and the per-port
         * counters saw every XAF frame arrive on the fuzz port and every forwarded byte leave by the egress slot.
         */
        public boolean clean() {
            return disagreements == 0 && droppedFrames == dropCounterSum && Arrays.equals(referenceOutcomes, xdpCounterDeltas)
                    && portRxPackets == referenceXafFrames() && portTxPackets == referenceOutcomes[Counter.FORWARDED.ordinal()]
                    && portTxBytes == forwardedBytesCompared && portTxTooBig == referenceOutcomes[Counter.DROP_TOO_BIG.ordinal()];
        }
    }

    /**
     * The reference routes: what the fuzz setup installs in the XDP program, as the Java engines see them; frames leave
     * the IP forms from one of {@code srcPortSpan} UDP source ports from {@link #ROUTE_SRC_PORT}.
     */
    record FuzzRoute(NetworkForm egress, int egressSlot, long ingressMask, byte[] srcIp, byte[] dstIp, OuterAddressing addressing,
                     int srcPortSpan) implements ForwardingDecision.RouteChecks {
        @Override public int jobId() { return FuzzFrames.JOB; }
        @Override public int jobToken() { return FuzzFrames.TOKEN; }
        @Override public NetworkForm egressForm() { return egress; }
        @Override public int egressMtu() { return EGRESS_MTU; }

        /** The ID form's dst_id is the route's network id (the AF_XDP gateway sets it so too). */
        FuzzRoute withDstId(int networkId) {
            addressing.dstId(networkId);
            return this;
        }
    }

    private final FuzzRoute toIpv4, toIpv6, toId, fenced, hairpin;
    private final FrameParser parser = new FrameParser();
    private final FrameWriter writer = new FrameWriter();
    private final XafHeader xaf = new XafHeader();
    private final byte[] frame = new byte[FuzzFrames.MAX_FRAME];
    private final MemorySegment frameSeg = MemorySegment.ofArray(frame);
    private final byte[] expected = new byte[FuzzFrames.MAX_FRAME];
    private final MemorySegment expectedSeg = MemorySegment.ofArray(expected);
    private int expectedLength;

    /** The routes, their source-port spans drawn from {@code seed}: 2..8 and 2..64 for the IP forms. */
    DecisionFuzzer(long seed) {
        SplittableRandom spans = new SplittableRandom(seed ^ 0x5A5A_0001L);
        toIpv4 = route(NetworkForm.IPV4, TX_SLOT, 0, 2 + spans.nextInt(7));
        toIpv6 = route(NetworkForm.IPV6, TX_SLOT, 0, 2 + spans.nextInt(63));
        toId = route(NetworkForm.ID, TX_SLOT, 0, 1 + spans.nextInt(8)).withDstId(FuzzFrames.NET_TO_ID); // the ID form has no port
        fenced = route(NetworkForm.IPV4, TX_SLOT, 1L << FENCED_SLOT, 1 + spans.nextInt(8));
        hairpin = route(NetworkForm.IPV6, PORT_SLOT, 0, 1); // back out of the fuzz port, which it does not list: dropped
    }

    private static FuzzRoute route(NetworkForm egress, int slot, long mask, int span) {
        OuterAddressing a = new OuterAddressing().srcMac(ROUTE_SRC_MAC).dstMac(ROUTE_DST_MAC);
        byte[] src = null, dst = null;
        switch (egress) {
            case IPV4 -> { src = new byte[] {10, 1, 0, 1}; dst = new byte[] {10, 2, 0, 1}; }
            case IPV6 -> { src = FuzzFrames.ip6(0x31); dst = FuzzFrames.ip6(0x32); }
            case ID -> a.srcId(ROUTE_SRC_ID);
        }
        if (src != null) a.srcIp(src).dstIp(dst).srcPort(ROUTE_SRC_PORT).dstPort(XafHeader.UDP_PORT);
        return new FuzzRoute(egress, slot, mask, src, dst, a, span);
    }

    private FuzzRoute lookup(int networkId) {
        return switch (networkId) {
            case FuzzFrames.NET_TO_IPV4 -> toIpv4;
            case FuzzFrames.NET_TO_IPV6 -> toIpv6;
            case FuzzFrames.NET_TO_ID -> toId;
            case FuzzFrames.NET_FENCED -> fenced;
            case FuzzFrames.NET_HAIRPIN -> hairpin;
            default -> null;
        };
    }

    /** Installs the reference routes and the fuzz port (lo, slot {@value #PORT_SLOT}) in {@code dp}. */
    static void install(XafDataplane dp, DecisionFuzzer f) {
        dp.setPort(LO, PORT_SLOT, NetworkForm.IPV4.code(), ForwardingDecision.DEFAULT_MAX_HOP_LIMIT);
        dp.setTxPort(TX_SLOT, LO, EGRESS_MTU);
        dp.setTxPort(PORT_SLOT, LO, EGRESS_MTU); // the fuzz port's own slot, where the hairpin route leaves
        for (int net : new int[] {FuzzFrames.NET_TO_IPV4, FuzzFrames.NET_TO_IPV6, FuzzFrames.NET_TO_ID, FuzzFrames.NET_FENCED,
                FuzzFrames.NET_HAIRPIN}) {
            FuzzRoute r = f.lookup(net);
            boolean ip = r.egress() != NetworkForm.ID;
            dp.putRoute(net, Route.forward(r.egressSlot(), r.egress().code(), r.ingressMask(), FuzzFrames.JOB, FuzzFrames.TOKEN,
                    ROUTE_SRC_ID, ROUTE_SRC_MAC, ROUTE_DST_MAC, r.srcIp(), r.dstIp(),
                    ip ? ROUTE_SRC_PORT : 0, ip ? XafHeader.UDP_PORT : 0).withSrcPortSpan(r.srcPortSpan()));
        }
    }

    /**
     * The Java reference outcome of the first {@code length} bytes of {@link #frame}; for FORWARDED, also writes the
     * frame the Java engines would transmit into {@link #expected}.
     */
    Counter reference(int length) {
        ParsedFrame f = parser.parse(frameSeg, length);
        if (f.kind() == ParsedFrame.Kind.NOT_XAF) return Counter.PASS_NON_XAF;
        if (f.kind() == ParsedFrame.Kind.MALFORMED) return Counter.DROP_MALFORMED;
        xaf.wrap(frameSeg, f.xafOffset());
        FuzzRoute r = lookup(xaf.networkId());
        ForwardingDecision.Verdict v = ForwardingDecision.decide(xaf, r, PORT_SLOT);
        return switch (v) {
            case DROP_NO_ROUTE, DROP_INGRESS, DROP_HAIRPIN, DROP_BAD_TOKEN, DROP_HOP_LIMIT, DROP_TOO_BIG -> v.counter();
            case FORWARD -> {
                // the AF_XDP gateway's rewrite: XAF header and payload behind fresh outer headers, hop limit clamped
                // to the port's cap (install() gives the XDP port the default) and decremented, the UDP source port
                // the flow's (src_rank and ingress source port, read before the header is rewrapped)
                if (r.egress() != NetworkForm.ID) {
                    r.addressing().srcPort(ForwardingDecision.egressSourcePort(ROUTE_SRC_PORT, r.srcPortSpan(), xaf, frameSeg, f));
                }
                int outer = r.egress().outerHeaderLength();
                int xafBytes = XafHeader.LENGTH + f.payloadLength();
                MemorySegment.copy(frameSeg, f.xafOffset(), expectedSeg, outer, xafBytes);
                xaf.wrap(expectedSeg, outer).hopLimit(ForwardingDecision.forwardedHopLimit(xaf.hopLimit(),
                        ForwardingDecision.DEFAULT_MAX_HOP_LIMIT));
                expectedLength = writer.encapsulate(expectedSeg, r.egress(), r.addressing());
                yield v.counter();
            }
        };
    }

    /** The XDP action of a frame counted under {@code outcome}. */
    public static int actionOf(Counter outcome) {
        return switch (outcome) {
            case PASS_NON_XAF -> ProgTestRun.XDP_PASS;
            case FORWARDED, TO_LOCAL -> ProgTestRun.XDP_REDIRECT;
            default -> ProgTestRun.XDP_DROP;
        };
    }

    static boolean isDrop(Counter c) {
        return c.name().startsWith("DROP_");
    }

    /** Fuzzes {@code frames} frames made by {@code new FuzzFrames(seed)}; {@code progress} (may be null) hears every 100,000 frames. */
    public static Report run(long frames, long seed, PrintStream progress) {
        DecisionFuzzer f = new DecisionFuzzer(seed);
        boolean[] sourcePorts = new boolean[0x10000];
        FuzzFrames source = new FuzzFrames(seed);
        int n = Counter.values().length;
        long[] reference = new long[n];
        long[] before = new long[n], after = new long[n];
        EnumMap<FuzzFrames.Kind, Long> byKind = new EnumMap<>(FuzzFrames.Kind.class);
        long[] kindCounts = new long[FuzzFrames.Kind.values().length];
        long dropped = 0, forwardedBytes = 0, disagreements = 0;
        List<String> examples = new ArrayList<>();
        CounterSnapshot start, end;
        PortCounterSnapshot portsStart, portsEnd;
        long t0 = System.nanoTime();
        try (XafDataplane dp = XafDataplane.load();
             ProgTestRunner runner = new ProgTestRunner(dp.programFd(), FuzzFrames.MAX_FRAME)) {
            install(dp, f);
            MemorySegment in = runner.input();
            start = dp.counters();
            portsStart = dp.portCounters();
            dp.packetsInto(before);
            for (long i = 0; i < frames; i++) {
                int length = source.next(f.frame);
                kindCounts[source.kind().ordinal()]++;
                MemorySegment.copy(f.frameSeg, 0, in, 0, length);
                int action = runner.run(length, LO, 0);
                dp.packetsInto(after);
                Counter ref = f.reference(length);
                reference[ref.ordinal()]++;
                if (action == ProgTestRun.XDP_DROP) dropped++;

                Counter moved = null;
                int outcomesMoved = 0;
                for (Counter c : Counter.values()) {
                    long d = after[c.ordinal()] - before[c.ordinal()];
                    if (c == Counter.RX_XAF || d == 0) continue;
                    outcomesMoved += (int) d;
                    moved = c;
                }
                long rx = after[Counter.RX_XAF.ordinal()] - before[Counter.RX_XAF.ordinal()];
                long[] swap = before;
                before = after;
                after = swap;

                String problem = null;
                if (outcomesMoved != 1) problem = outcomesMoved + " outcome counters moved";
                else if (moved != ref) problem = "counter " + moved;
                else if (rx != (ref == Counter.PASS_NON_XAF ? 0 : 1)) problem = "RX_XAF moved by " + rx;
                else if (action != actionOf(ref)) problem = "action " + action;
                else if (ref == Counter.FORWARDED) {
                    int outLength = runner.outputLength();
                    if (outLength != f.expectedLength || MemorySegment.mismatch(runner.output(), 0, outLength, f.expectedSeg, 0, outLength) >= 0) {
                        problem = "output differs from byte " + MemorySegment.mismatch(runner.output(), 0, outLength, f.expectedSeg, 0, f.expectedLength)
                                + ": XDP " + hex(runner.output().asSlice(0, outLength).toArray(ValueLayout.JAVA_BYTE), outLength)
                                + " reference " + hex(f.expected, f.expectedLength);
                    } else {
                        forwardedBytes += outLength;
                        int udp = f.udpSourcePortOffset(outLength);
                        if (udp >= 0) sourcePorts[((f.expected[udp] & 0xFF) << 8) | (f.expected[udp + 1] & 0xFF)] = true;
                    }
                } else if (ref == Counter.PASS_NON_XAF) {
                    if (runner.outputLength() != length || MemorySegment.mismatch(runner.output(), 0, length, f.frameSeg, 0, length) >= 0) {
                        problem = "passed frame was changed";
                    }
                }
                if (problem != null) {
                    if (disagreements++ < 5) {
                        examples.add(source.kind() + " frame (" + length + " bytes) " + hex(f.frame, length)
                                + "\n  reference " + ref + " (" + actionName(actionOf(ref)) + "), XDP " + actionName(action) + ": " + problem);
                    }
                }
                if (progress != null && (i + 1) % 100_000 == 0) {
                    progress.printf("fuzz: %,d frames, %,d disagreements%n", i + 1, disagreements);
                }
            }
            end = dp.counters();
            portsEnd = dp.portCounters();
        }
        PortCounterSnapshot ports = portsEnd.minus(portsStart);
        double seconds = (System.nanoTime() - t0) / 1e9;
        CounterSnapshot delta = end.minus(start);
        long[] deltas = new long[n];
        long dropSum = 0;
        for (Counter c : Counter.values()) {
            deltas[c.ordinal()] = c == Counter.RX_XAF ? 0 : delta.packets(c);
            if (isDrop(c)) dropSum += delta.packets(c);
        }
        for (FuzzFrames.Kind k : FuzzFrames.Kind.values()) byKind.put(k, kindCounts[k.ordinal()]);
        return new Report(frames, seed, seconds, byKind, reference, deltas, dropped, dropSum, forwardedBytes, disagreements,
                List.copyOf(examples), ports.rxPackets(PORT_SLOT), ports.txPackets(TX_SLOT), ports.txBytes(TX_SLOT), ports.txTooBig(TX_SLOT),
                count(sourcePorts));
    }

    /** Offset of the UDP source port in the expected frame (its EtherType says IPv4 or IPv6), or -1 (ID form). */
    int udpSourcePortOffset(int length) {
        int type = length < 14 ? -1 : ((expected[12] & 0xFF) << 8) | (expected[13] & 0xFF);
        return switch (type) {
            case 0x0800 -> NetworkForm.IPV4.outerHeaderLength() - 8;
            case 0x86DD -> NetworkForm.IPV6.outerHeaderLength() - 8;
            default -> -1;
        };
    }

    private static int count(boolean[] set) {
        int n = 0;
        for (boolean b : set) if (b) n++;
        return n;
    }

    /** The first 160 bytes as hex: enough for every header. */
    static String hex(byte[] b, int length) {
        return HexFormat.of().formatHex(b, 0, Math.min(length, 160)) + (length > 160 ? "..." : "");
    }

    static String actionName(int action) {
        return new ProgTestRun.Result(action, new byte[0], 0).actionName();
    }
}
