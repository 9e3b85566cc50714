package io.xaforward.dataplane;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static io.xaforward.dataplane.ProgTestRun.XDP_DROP;
import static io.xaforward.dataplane.ProgTestRun.XDP_PASS;
import static io.xaforward.dataplane.ProgTestRun.XDP_REDIRECT;
import static io.xaforward.dataplane.SharedLayouts.FORM_ID;
import static io.xaforward.dataplane.SharedLayouts.FORM_IPV4;
import static io.xaforward.dataplane.SharedLayouts.FORM_IPV6;
import static io.xaforward.dataplane.TestFrames.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Golden packets, Katran style: a table of fixtures (description, input frame, map setup, expected action, expected
 * output frame, expected counter), each run through BPF_PROG_TEST_RUN against the real compiled xaf_gateway.bpf.o.
 * Input and expected frames are built by {@link TestFrames}, independently of the BPF code; checksums in forwarded
 * frames are additionally recomputed naively over the output bytes, payload included.
 */
class GoldenPacketTest {
    static final int LO = 1;                 // exists in every namespace; lo has one rx queue
    static final int NET = 0x0A0B0C0D;       // network index identifier under test
    static final int JOB = 77, TOKEN = 0xC0FFEE11;
    static final int IN_SLOT = 3, TX_SLOT = 5, SRC_ID = 0x11223344;
    static final byte[] R_SMAC = mac(0xE1), R_DMAC = mac(0xE2);
    static final byte[] R_SIP4 = ip4(10, 1, 0, 1), R_DIP4 = ip4(10, 2, 0, 1);
    static final byte[] R_SIP6 = ip6(0x31), R_DIP6 = ip6(0x32);
    static final int R_SPORT = 40001;

    /** One golden packet. {@code expectedOutput == null}: do not compare (drops); pass cases compare to the input. */
    record Fixture(String description, byte[] input, int ingressForm, Consumer<XafDataplane> setup, int expectedAction,
                   byte[] expectedOutput, Counter counter, boolean isXaf, byte[] payload, int egressForm) {}

    static String formName(int f) { return switch (f) { case FORM_IPV4 -> "ipv4"; case FORM_IPV6 -> "ipv6"; case FORM_ID -> "id"; default -> "form" + f; }; }

    static Route route(int egressForm) {
        boolean v6 = egressForm == FORM_IPV6;
        return Route.forward(TX_SLOT, egressForm, (1L << IN_SLOT) | (1L << 9), JOB, TOKEN, SRC_ID, R_SMAC, R_DMAC,
                v6 ? R_SIP6 : R_SIP4, v6 ? R_DIP6 : R_DIP4, R_SPORT, XAF_PORT);
    }

    /** Standard setup: lo is port IN_SLOT speaking {@code ingressForm}, tx slot TX_SLOT -> lo, route NET. */
    static Consumer<XafDataplane> standard(int ingressForm, Route r) {
        return dp -> {
            dp.setPort(LO, IN_SLOT, ingressForm);
            dp.setTxPort(TX_SLOT, LO);
            dp.putRoute(NET, r);
        };
    }

    /** As {@link #standard} with an egress limit of {@code mtu} on TX_SLOT (lo itself takes 64 kB). */
    static Consumer<XafDataplane> withMtu(int ingressForm, Route r, int mtu) {
        return dp -> {
            dp.setPort(LO, IN_SLOT, ingressForm);
            dp.setTxPort(TX_SLOT, LO, mtu);
            dp.putRoute(NET, r);
        };
    }

    /** Bytes a form puts between the Ethernet header and the XAF header: what counts against the MTU besides XAF. */
    static int afterEthernet(int form) {
        return switch (form) { case FORM_IPV4 -> 20 + 8; case FORM_IPV6 -> 40 + 8; default -> 12; };
    }

    /** The largest payload a frame of {@code form} carries within {@code mtu} (PROTOCOL.md §7). */
    static int largestPayload(int form, int mtu) {
        return mtu - afterEthernet(form) - 48;
    }

    /** An ingress frame of {@code form} carrying {@code xafAndPayload}. */
    static byte[] ingress(int form, byte[] xafAndPayload) {
        return switch (form) {
            case FORM_IPV4 -> ipv4Udp(mac(1), mac(2), ip4(192, 168, 1, 10), ip4(192, 168, 2, 20), 33, 0x1234, 0x4000, 50000, XAF_PORT, xafAndPayload);
            case FORM_IPV6 -> ipv6Udp(mac(1), mac(2), ip6(1), ip6(2), 33, 50000, XAF_PORT, xafAndPayload);
            case FORM_ID -> idFrame(mac(1), mac(2), 0x99, NET, 0xFD, xafAndPayload);
            default -> throw new IllegalArgumentException();
        };
    }

    /** What the gateway must emit for {@code egressForm}, built from the route's values. */
    static byte[] expectedEgress(int egressForm, byte[] xafAndPayload) {
        return switch (egressForm) {
            case FORM_IPV4 -> ipv4Udp(R_DMAC, R_SMAC, R_SIP4, R_DIP4, 64, 0, 0x4000, R_SPORT, XAF_PORT, xafAndPayload);
            case FORM_IPV6 -> ipv6Udp(R_DMAC, R_SMAC, R_SIP6, R_DIP6, 64, R_SPORT, XAF_PORT, xafAndPayload);
            case FORM_ID -> idFrame(R_DMAC, R_SMAC, SRC_ID, NET, 0xFD, xafAndPayload);
            default -> throw new IllegalArgumentException();
        };
    }

    static List<Fixture> fixtures() {
        List<Fixture> f = new ArrayList<>();
        int[] forms = {FORM_IPV4, FORM_IPV6, FORM_ID};
        int[][] lengths = {{1, 1000}, {333, 64}, {7, 1400}};
        int seed = 0;
        // ---- forwarding: all nine ingress x egress form pairs, odd and even payloads, plus padded frames ----
        for (int in : forms) {
            for (int out : forms) {
                for (int len : lengths[(in + out) % 3]) {
                    for (int padding : new int[] {0, 17}) {
                        byte[] payload = payload(len, ++seed);
                        Xaf x = Xaf.of(9, NET, JOB, TOKEN, payload);
                        byte[] input = pad(ingress(in, x.bytes()), padding);
                        f.add(new Fixture(formName(in) + " -> " + formName(out) + ", payload " + len + (padding > 0 ? ", padded +" + padding : ""),
                                input, in, standard(in, route(out)), XDP_REDIRECT, expectedEgress(out, x.withHop(8).bytes()),
                                Counter.FORWARDED, true, payload, out));
                    }
                }
            }
        }
        // ---- the egress MTU (PROTOCOL.md §7), at 1500 and with jumbo frames (9000: the frames continue in
        //      fragments, so the program sees multi-buffer frames): for every form pair, the largest frame that fits
        //      the egress port and the ingress port alike is forwarded; one payload byte more than the egress port
        //      takes is dropped as drop_too_big ----
        for (int mtu : new int[] {1500, 9000}) {
            for (int in : forms) {
                for (int out : forms) {
                    int fits = Math.min(largestPayload(in, mtu), largestPayload(out, mtu));
                    String pair = formName(in) + " -> " + formName(out) + ", egress MTU " + mtu;
                    for (int padding : mtu > 1500 ? new int[] {0, 100} : new int[] {0}) {
                        byte[] payload = payload(fits, ++seed);
                        Xaf x = Xaf.of(9, NET, JOB, TOKEN, payload);
                        f.add(new Fixture("mtu: " + pair + ", payload " + fits + " fits" + (padding > 0 ? ", padded +" + padding : ""),
                                pad(ingress(in, x.bytes()), padding), in, withMtu(in, route(out), mtu), XDP_REDIRECT,
                                expectedEgress(out, x.withHop(8).bytes()), Counter.FORWARDED, true, payload, out));
                    }
                    int over = largestPayload(out, mtu) + 1;
                    f.add(new Fixture("mtu: " + pair + ", payload " + over + " is one byte too big", ingress(in, Xaf.of(9, NET, JOB, TOKEN,
                            payload(over, ++seed)).bytes()), in, withMtu(in, route(out), mtu), XDP_DROP, null, Counter.DROP_TOO_BIG, true, null, out));
                }
            }
        }
        // ---- the hop limit cap at ingress (PROTOCOL.md §6): a hop limit above the ingress port's cap (16 unless
        //      configured) is clamped to it, then decremented as always; at or below the cap nothing changes ----
        int[][] hops = {{16, 255, 15}, {16, 17, 15}, {16, 16, 15}, {16, 2, 1}, {4, 255, 3}, {4, 5, 3}, {4, 4, 3}, {255, 255, 254}};
        for (int[] h : hops) {
            int cap = h[0], arrived = h[1], leaves = h[2];
            byte[] payload = payload(40 + cap, ++seed);
            Xaf x = Xaf.of(arrived, NET, JOB, TOKEN, payload);
            Consumer<XafDataplane> setup = dp -> {
                if (cap == XafDataplane.DEFAULT_MAX_HOP_LIMIT) dp.setPort(LO, IN_SLOT, FORM_IPV4); // the default
                else dp.setPort(LO, IN_SLOT, FORM_IPV4, cap);
                dp.setTxPort(TX_SLOT, LO);
                dp.putRoute(NET, route(FORM_ID));
            };
            f.add(new Fixture("hop limit cap " + cap + ": arrives with " + arrived + ", leaves with " + leaves, ingress(FORM_IPV4, x.bytes()),
                    FORM_IPV4, setup, XDP_REDIRECT, expectedEgress(FORM_ID, x.withHop(leaves).bytes()), Counter.FORWARDED, true, null, FORM_ID));
        }
        // a frame that continues in fragments cannot go to an AF_XDP socket (single-buffer only): counted, not lost
        byte[] jumbo = ingress(FORM_IPV4, Xaf.of(9, NET, JOB, TOKEN, payload(8000, 99)).bytes());
        f.add(new Fixture("local: a multi-buffer frame is too big for the AF_XDP socket", jumbo, FORM_IPV4,
                standard(FORM_IPV4, Route.local(0, JOB, TOKEN)), XDP_DROP, null, Counter.DROP_TOO_BIG, true, null, 0));
        // ---- drops: each with its own counter ----
        byte[] p = payload(100, 42);
        Xaf ok = Xaf.of(9, NET, JOB, TOKEN, p);
        Consumer<XafDataplane> std4 = standard(FORM_IPV4, route(FORM_IPV6));
        f.add(drop("bad magic", ingress(FORM_IPV4, ok.withMagic(0x5847).bytes()), std4, Counter.DROP_MALFORMED));
        f.add(drop("bad version", ingress(FORM_IPV4, ok.withVersion(2).bytes()), std4, Counter.DROP_MALFORMED));
        f.add(drop("bad hdr_len", ingress(FORM_IPV4, ok.withHdrLen(52).bytes()), std4, Counter.DROP_MALFORMED));
        f.add(drop("payload_len one more than UDP carries", ingress(FORM_IPV4, ok.withPayloadLen(101).bytes()), std4, Counter.DROP_MALFORMED));
        f.add(drop("payload_len one less than UDP carries (ipv6)", ingress(FORM_IPV6, ok.withPayloadLen(99).bytes()),
                standard(FORM_IPV6, route(FORM_IPV4)), Counter.DROP_MALFORMED));
        f.add(drop("ID length disagrees with payload_len", ingress(FORM_ID, ok.withPayloadLen(98).bytes()),
                standard(FORM_ID, route(FORM_IPV4)), Counter.DROP_MALFORMED));
        byte[] full = ingress(FORM_IPV4, ok.bytes());
        f.add(drop("truncated inside the payload", Arrays.copyOf(full, full.length - 30), std4, Counter.DROP_MALFORMED));
        f.add(drop("truncated inside the XAF header", Arrays.copyOf(full, 14 + 20 + 8 + 30), std4, Counter.DROP_MALFORMED));
        // frames that end inside the UDP or ID header (PROTOCOL.md "Classification"): NOT_XAF before the identifying
        // field (UDP destination port, ID next_hdr), a truncated XAF frame after it
        byte[] full6 = ingress(FORM_IPV6, ok.bytes());
        byte[] fullId = ingress(FORM_ID, ok.bytes());
        f.add(drop("IPv4 truncated inside the UDP header, after the destination port", Arrays.copyOf(full, 14 + 20 + 4), std4, Counter.DROP_MALFORMED));
        f.add(drop("IPv4 truncated inside the UDP header, before its checksum's last byte", Arrays.copyOf(full, 14 + 20 + 7), std4, Counter.DROP_MALFORMED));
        f.add(pass("IPv4 truncated inside the UDP header, before the destination port", Arrays.copyOf(full, 14 + 20 + 3), std4));
        f.add(drop("IPv6 truncated inside the UDP header, after the destination port", Arrays.copyOf(full6, 14 + 40 + 5),
                standard(FORM_IPV6, route(FORM_IPV4)), Counter.DROP_MALFORMED));
        f.add(pass("IPv6 truncated inside the UDP header, before the destination port", Arrays.copyOf(full6, 14 + 40 + 2),
                standard(FORM_IPV6, route(FORM_IPV4))));
        f.add(drop("ID truncated inside the ID header, after next_hdr", Arrays.copyOf(fullId, 14 + 9),
                standard(FORM_ID, route(FORM_ID)), Counter.DROP_MALFORMED));
        f.add(drop("ID truncated inside the ID header, inside its length", Arrays.copyOf(fullId, 14 + 11),
                standard(FORM_ID, route(FORM_ID)), Counter.DROP_MALFORMED));
        f.add(pass("ID truncated inside the ID header, before next_hdr", Arrays.copyOf(fullId, 14 + 8), standard(FORM_ID, route(FORM_ID))));
        f.add(drop("IPv4 fragment (MF) of an XAF datagram",
                ipv4Udp(mac(1), mac(2), ip4(192, 168, 1, 10), ip4(192, 168, 2, 20), 33, 1, 0x2000, 50000, XAF_PORT, ok.bytes()),
                std4, Counter.DROP_MALFORMED));
        f.add(drop("unknown identifier", ingress(FORM_IPV4, Xaf.of(9, NET + 1, JOB, TOKEN, p).bytes()), std4, Counter.DROP_NO_ROUTE));
        f.add(drop("hop limit 1", ingress(FORM_IPV4, ok.withHop(1).bytes()), std4, Counter.DROP_HOP_LIMIT));
        f.add(drop("hop limit 0", ingress(FORM_ID, ok.withHop(0).bytes()), standard(FORM_ID, route(FORM_ID)), Counter.DROP_HOP_LIMIT));
        f.add(drop("wrong token", ingress(FORM_IPV4, ok.withJob(JOB, TOKEN ^ 1).bytes()), std4, Counter.DROP_BAD_TOKEN));
        f.add(drop("wrong job", ingress(FORM_IPV4, ok.withJob(JOB + 1, TOKEN).bytes()), std4, Counter.DROP_BAD_TOKEN));
        f.add(drop("ingress port slot not in the route's mask", ingress(FORM_IPV4, ok.bytes()), dp -> {
            dp.setPort(LO, 4, FORM_IPV4);
            dp.setTxPort(TX_SLOT, LO);
            dp.putRoute(NET, route(FORM_IPV6));
        }, Counter.DROP_INGRESS));
        f.add(drop("drop_one_in = 1", ingress(FORM_IPV4, ok.bytes()), standard(FORM_IPV4, route(FORM_IPV6).withDropOneIn(1)), Counter.DROP_INJECTED));
        f.add(drop("missing tx_port", ingress(FORM_IPV4, ok.bytes()), dp -> {
            dp.setPort(LO, IN_SLOT, FORM_IPV4);
            dp.putRoute(NET, route(FORM_IPV6));
        }, Counter.DROP_REDIRECT));
        f.add(drop("tx_port populated at another slot only", ingress(FORM_IPV4, ok.bytes()), dp -> {
            dp.setPort(LO, IN_SLOT, FORM_IPV4);
            dp.setTxPort(TX_SLOT + 1, LO);
            dp.putRoute(NET, route(FORM_IPV6));
        }, Counter.DROP_REDIRECT));
        f.add(drop("unknown egress form", ingress(FORM_IPV4, ok.bytes()), standard(FORM_IPV4,
                new Route(TX_SLOT, SharedLayouts.ACTION_FORWARD, 7, 0, JOB, TOKEN, 0, 0, null, null, null, null, 1, 2)), Counter.DROP_BAD_FORM));
        f.add(drop("LOCAL route without an AF_XDP socket on the queue", ingress(FORM_IPV4, ok.bytes()),
                standard(FORM_IPV4, Route.local(0, JOB, TOKEN)), Counter.DROP_REDIRECT));
        // ---- LOCAL delivery (no AF_XDP socket in the test, so the redirect falls back to DROP): the frame handed
        //      on is the frame as it arrived, padding trimmed: no hop limit check or decrement, no fault injection
        //      (PROTOCOL.md §7) ----
        for (int in : forms) {
            byte[] pl = payload(in == FORM_IPV6 ? 77 : 100, 50 + in);
            Xaf x = Xaf.of(9, NET, JOB, TOKEN, pl);
            f.add(new Fixture("local: " + formName(in) + " without a socket on the queue, padded +5", pad(ingress(in, x.bytes()), 5), in,
                    standard(in, Route.local(1L << IN_SLOT, JOB, TOKEN)), XDP_DROP, ingress(in, x.bytes()),
                    Counter.DROP_REDIRECT, true, null, 0));
            byte[] lastHop = ingress(in, x.withHop(1).bytes());
            f.add(new Fixture("local: " + formName(in) + " hop limit 1 is still delivered", lastHop, in,
                    standard(in, Route.local(0, JOB, TOKEN)), XDP_DROP, lastHop, Counter.DROP_REDIRECT, true, null, 0));
            byte[] plain = ingress(in, x.bytes());
            f.add(new Fixture("local: " + formName(in) + " fault injection does not apply", plain, in,
                    standard(in, Route.local(0, JOB, TOKEN).withDropOneIn(1)), XDP_DROP, plain, Counter.DROP_REDIRECT, true, null, 0));
        }
        byte[] noCsum = ingress(FORM_IPV4, ok.bytes());
        noCsum[40] = 0; noCsum[41] = 0;
        byte[] noCsumOut = ingress(FORM_IPV4, ok.bytes());
        noCsumOut[40] = 0; noCsumOut[41] = 0;
        f.add(new Fixture("local: IPv4 UDP checksum 0 (none) stays 0", noCsum, FORM_IPV4,
                standard(FORM_IPV4, Route.local(0, JOB, TOKEN)), XDP_DROP, noCsumOut, Counter.DROP_REDIRECT, true, null, 0));
        // ---- pass-through: untouched ----
        byte[] arp = eth(42, new byte[] {-1, -1, -1, -1, -1, -1}, mac(1), ETH_ARP).put(new byte[28]).array();
        f.add(pass("ARP", arp, std4));
        byte[] tcp = ipv4Udp(mac(1), mac(2), ip4(192, 168, 1, 10), ip4(192, 168, 2, 20), 33, 9, 0x4000, 50000, XAF_PORT, ok.bytes());
        tcp[14 + 9] = 6; // protocol TCP, same bytes otherwise
        f.add(pass("TCP", tcp, std4));
        f.add(pass("UDP to another port", ipv4Udp(mac(1), mac(2), ip4(192, 168, 1, 10), ip4(192, 168, 2, 20), 33, 9, 0x4000, 50000, 53, ok.bytes()), std4));
        f.add(pass("IPv4 non-first fragment", ipv4Udp(mac(1), mac(2), ip4(192, 168, 1, 10), ip4(192, 168, 2, 20), 33, 9, 0x0010, 50000, XAF_PORT, ok.bytes()), std4));
        byte[] v6tcp = ingress(FORM_IPV6, ok.bytes());
        v6tcp[14 + 6] = 6; // next header TCP
        f.add(pass("IPv6 non-UDP", v6tcp, standard(FORM_IPV6, route(FORM_IPV4))));
        f.add(pass("ID frame whose next header is not XAF", idFrame(mac(1), mac(2), 1, NET, 0x11, ok.bytes()), standard(FORM_ID, route(FORM_ID))));
        f.add(pass("XAF frame on an ifindex that is not a port", ingress(FORM_IPV4, ok.bytes()), dp -> {
            dp.setTxPort(TX_SLOT, LO);
            dp.putRoute(NET, route(FORM_IPV6));
        }));
        return f;
    }

    static Fixture drop(String d, byte[] in, Consumer<XafDataplane> setup, Counter c) {
        return new Fixture("drop: " + d, in, 0, setup, XDP_DROP, null, c, true, null, 0);
    }

    static Fixture pass(String d, byte[] in, Consumer<XafDataplane> setup) {
        return new Fixture("pass: " + d, in, 0, setup, XDP_PASS, in, Counter.PASS_NON_XAF, false, null, 0);
    }

    @TestFactory
    Stream<DynamicTest> goldenPackets() {
        return fixtures().stream().map(fx -> DynamicTest.dynamicTest(fx.description(), () -> runFixture(fx)));
    }

    static void runFixture(Fixture fx) {
        try (XafDataplane dp = XafDataplane.load()) {
            fx.setup().accept(dp);
            CounterSnapshot before = dp.counters();
            PortCounterSnapshot portsBefore = dp.portCounters();
            ProgTestRun.Result r = ProgTestRun.run(dp.programFd(), fx.input(), LO, 0);
            CounterSnapshot delta = dp.counters().minus(before);
            PortCounterSnapshot ports = dp.portCounters().minus(portsBefore);

            assertEquals(fx.expectedAction(), r.action(), () -> "action was " + r.actionName() + "; counters " + delta);
            assertEquals(1, delta.packets(fx.counter()), () -> "counter " + fx.counter() + " in " + delta);
            assertEquals(fx.input().length, delta.bytes(fx.counter()), "bytes counted = ingress frame length");
            assertEquals(fx.isXaf() ? 1 : 0, delta.packets(Counter.RX_XAF), "RX_XAF");
            assertEquals(1, delta.totalFrames(), () -> "exactly one outcome counted: " + delta);
            // per port: an XAF frame counts on the slot of the port it arrived on, a forwarded one also on its tx slot
            assertEquals(delta.packets(Counter.RX_XAF), java.util.Arrays.stream(ports.rxPackets()).sum(), "port rx packets");
            assertEquals(delta.bytes(Counter.RX_XAF), java.util.Arrays.stream(ports.rxBytes()).sum(), "port rx bytes");
            assertEquals(delta.packets(Counter.FORWARDED), java.util.Arrays.stream(ports.txPackets()).sum(), "port tx packets");
            long tooBigForAPort = fx.counter() == Counter.DROP_TOO_BIG && fx.egressForm() != 0 ? 1 : 0;
            assertEquals(tooBigForAPort, java.util.Arrays.stream(ports.txTooBig()).sum(), "port tx too big");
            assertEquals(tooBigForAPort, ports.txTooBig(TX_SLOT), "too big counted on the egress port's slot");
            if (delta.packets(Counter.RX_XAF) == 1) {
                int slot = fx.description().contains("not in the route's mask") ? 4 : IN_SLOT; // the setups' port slots
                assertEquals(1, ports.rxPackets(slot), "rx counted on the ingress port's slot " + slot);
                assertEquals(fx.input().length, ports.rxBytes(slot));
            }
            if (delta.packets(Counter.FORWARDED) == 1) {
                assertEquals(1, ports.txPackets(TX_SLOT));
                assertEquals(r.frame().length, ports.txBytes(TX_SLOT), "tx bytes = egress frame length");
            }
            if (fx.expectedOutput() != null) {
                assertArrayEquals(fx.expectedOutput(), r.frame(), () -> "output frame\n expected " + HexFormat.of().formatHex(fx.expectedOutput())
                        + "\n actual   " + HexFormat.of().formatHex(r.frame()));
            }
            if (fx.payload() != null) {
                checkForwarded(fx, r.frame());
            }
        }
    }

    /** Independent checks of a forwarded frame: checksums recomputed over the output, payload, hop limit. */
    static void checkForwarded(Fixture fx, byte[] out) {
        int outer = switch (fx.egressForm()) { case FORM_IPV4 -> 42; case FORM_IPV6 -> 62; default -> 26; };
        assertEquals(outer + 48 + fx.payload().length, out.length, "no padding, no lost bytes");
        assertArrayEquals(fx.payload(), Arrays.copyOfRange(out, outer + 48, out.length), "payload byte-identical");
        assertEquals(8, out[outer + 5], "hop limit decremented from 9");
        if (fx.egressForm() == FORM_IPV4) {
            assertEquals(ipv4HeaderChecksum(out, 14), getShort(out, 24), "IPv4 header checksum");
            assertEquals(udpChecksum(out), getShort(out, 40), "UDP checksum (IPv4)");
        } else if (fx.egressForm() == FORM_IPV6) {
            assertEquals(udpChecksum(out), getShort(out, 60), "UDP checksum (IPv6)");
        }
    }
}
