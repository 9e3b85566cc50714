package io.xaforward.dataplane;

import io.xaforward.dataplane.GoldenFixture.Port;
import io.xaforward.dataplane.GoldenFixture.RouteEntry;
import io.xaforward.dataplane.GoldenFixture.Setup;
import io.xaforward.dataplane.GoldenFixture.TxPort;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static io.xaforward.dataplane.GoldenFixture.XDP_DROP;
import static io.xaforward.dataplane.GoldenFixture.XDP_PASS;
import static io.xaforward.dataplane.GoldenFixture.XDP_REDIRECT;
import static io.xaforward.dataplane.GoldenFixture.formName;
import static io.xaforward.dataplane.SharedLayouts.FORM_ID;
import static io.xaforward.dataplane.SharedLayouts.FORM_IPV4;
import static io.xaforward.dataplane.SharedLayouts.FORM_IPV6;
import static io.xaforward.dataplane.SharedLayouts.FORM_NONE;
import static io.xaforward.dataplane.TestFrames.*;

/**
 * The generator of the golden packets, Katran style: a table of fixtures (name, map setup, input frame, expected
 * action, expected output frame, expected counter) written as data files under {@code src/test/resources/golden/}
 * ({@link GoldenFixture} is their text form), which {@link GoldenPacketTest} runs through the real compiled
 * xaf_gateway.bpf.o. Input and expected frames are built by {@link TestFrames}, independently of the BPF code.
 * {@link GoldenFixturesTest} fails when the files and this generator disagree; {@link #main} (or that test with
 * {@code -Dxaf.golden.regenerate=true}) writes the files again. docs/ARCHITECTURE.md, "Golden packets".
 */
public final class GoldenFixtures {
    private GoldenFixtures() {}

    /** Where the files live, relative to the dataplane module (the working directory of its tests). */
    static final Path SOURCE_DIR = Path.of("src", "test", "resources", "golden");
    /** The same files on the test classpath (and in the dataplane test-jar). */
    static final String RESOURCE_DIR = "/golden/";
    /** The files, one per theme, in the order {@link #groups} makes them. */
    static final List<String> FILES = List.of("forward.txt", "span.txt", "mtu.txt", "hop-limit.txt", "local.txt", "drop.txt", "pass.txt",
            "hairpin.txt", "form-length.txt");

    static final int LO = GoldenFixture.IFINDEX; // exists in every namespace; lo has one rx queue
    static final int NET = 0x0A0B0C0D;           // network index identifier under test
    static final int JOB = 77, TOKEN = 0xC0FFEE11;
    static final int IN_SLOT = 3, TX_SLOT = 5, SRC_ID = 0x11223344;
    static final byte[] R_SMAC = mac(0xE1), R_DMAC = mac(0xE2);
    static final byte[] R_SIP4 = ip4(10, 1, 0, 1), R_DIP4 = ip4(10, 2, 0, 1);
    static final byte[] R_SIP6 = ip6(0x31), R_DIP6 = ip6(0x32);
    static final int R_SPORT = 40001;

    /** One file: its name, what its fixtures show (the file's heading) and the fixtures. */
    record Group(String file, String about, List<GoldenFixture> fixtures) {}

    static Route route(int egressForm) {
        boolean v6 = egressForm == FORM_IPV6;
        return Route.forward(TX_SLOT, egressForm, (1L << IN_SLOT) | (1L << 9), JOB, TOKEN, SRC_ID, R_SMAC, R_DMAC,
                v6 ? R_SIP6 : R_SIP4, v6 ? R_DIP6 : R_DIP4, R_SPORT, XAF_PORT);
    }

    /** As {@link #route(int)}, leaving by {@code txSlot} and admitted from the ports of {@code ingressMask} (0: any). */
    static Route route(int egressForm, int txSlot, long ingressMask) {
        boolean v6 = egressForm == FORM_IPV6;
        return Route.forward(txSlot, egressForm, ingressMask, JOB, TOKEN, SRC_ID, R_SMAC, R_DMAC,
                v6 ? R_SIP6 : R_SIP4, v6 ? R_DIP6 : R_DIP4, R_SPORT, XAF_PORT);
    }

    /** lo is port IN_SLOT speaking {@code ingressForm} and also the egress port of that same slot; route NET. */
    static List<Setup> hairpin(int ingressForm, Route r) {
        return List.of(new Port(LO, IN_SLOT, ingressForm, 0), new TxPort(IN_SLOT, LO, 0), new RouteEntry(NET, r));
    }

    /** Standard setup: lo is port IN_SLOT speaking {@code ingressForm}, tx slot TX_SLOT -> lo, route NET. */
    static List<Setup> standard(int ingressForm, Route r) {
        return withMtu(ingressForm, r, 0);
    }

    /** As {@link #standard} with an egress limit of {@code mtu} on TX_SLOT (0: lo's own, 64 kB). */
    static List<Setup> withMtu(int ingressForm, Route r, int mtu) {
        return List.of(new Port(LO, IN_SLOT, ingressForm, 0), new TxPort(TX_SLOT, LO, mtu), new RouteEntry(NET, r));
    }

    /** Bytes a form puts between the Ethernet header and the XAF header: what counts against the MTU besides XAF. */
    static int afterEthernet(int form) {
        return switch (form) { case FORM_IPV4 -> 20 + 8; case FORM_IPV6 -> 40 + 8; default -> 12; };
    }

    /** Bytes before the XAF header in a frame of {@code form}. */
    static int outerLength(int form) {
        return 14 + afterEthernet(form);
    }

    /** The largest payload a frame of {@code form} carries within {@code mtu} (PROTOCOL.md §7). */
    static int largestPayload(int form, int mtu) {
        return mtu - afterEthernet(form) - 48;
    }

    /** An ingress frame of {@code form} carrying {@code xafAndPayload}. */
    static byte[] ingress(int form, byte[] xafAndPayload) {
        return ingress(form, 50000, xafAndPayload);
    }

    /** An ingress frame of {@code form} from UDP source port {@code sport} (the IP forms) carrying {@code xafAndPayload}. */
    static byte[] ingress(int form, int sport, byte[] xafAndPayload) {
        return switch (form) {
            case FORM_IPV4 -> ipv4Udp(mac(1), mac(2), ip4(192, 168, 1, 10), ip4(192, 168, 2, 20), 33, 0x1234, 0x4000, sport, XAF_PORT, xafAndPayload);
            case FORM_IPV6 -> ipv6Udp(mac(1), mac(2), ip6(1), ip6(2), 33, sport, XAF_PORT, xafAndPayload);
            case FORM_ID -> idFrame(mac(1), mac(2), 0x99, NET, 0xFD, xafAndPayload);
            default -> throw new IllegalArgumentException();
        };
    }

    /** What the gateway must emit for {@code egressForm}, built from the route's values. */
    static byte[] expectedEgress(int egressForm, byte[] xafAndPayload) {
        return expectedEgress(egressForm, R_SPORT, xafAndPayload);
    }

    /** As {@link #expectedEgress(int, byte[])}, leaving from UDP source port {@code sport} (the IP forms). */
    static byte[] expectedEgress(int egressForm, int sport, byte[] xafAndPayload) {
        return switch (egressForm) {
            case FORM_IPV4 -> ipv4Udp(R_DMAC, R_SMAC, R_SIP4, R_DIP4, 64, 0, 0x4000, sport, XAF_PORT, xafAndPayload);
            case FORM_IPV6 -> ipv6Udp(R_DMAC, R_SMAC, R_SIP6, R_DIP6, 64, sport, XAF_PORT, xafAndPayload);
            case FORM_ID -> idFrame(R_DMAC, R_SMAC, SRC_ID, NET, 0xFD, xafAndPayload);
            default -> throw new IllegalArgumentException();
        };
    }

    /** A frame forwarded with hop limit 9 -> 8, whose payload and checksums are also checked on their own. */
    static GoldenFixture forwarded(String name, int in, int out, List<Setup> setup, int padding, byte[] payload) {
        Xaf x = Xaf.of(9, NET, JOB, TOKEN, payload);
        return new GoldenFixture(name, in, setup, pad(ingress(in, x.bytes()), padding), XDP_REDIRECT,
                expectedEgress(out, x.withHop(8).bytes()), Counter.FORWARDED, true, payload.length, out);
    }

    /**
     * A frame from UDP source port {@code sport} (0: the ID form) with src_rank {@code rank}, forwarded (hop limit
     * 9 -> 8) by a route spreading flows over {@code span} source ports from {@code srcPort}: it must leave from
     * {@code expectedPort}, which the caller works out by PROTOCOL.md §7's rule.
     */
    static GoldenFixture spread(int in, int out, int srcPort, int span, int sport, int rank, int expectedPort, byte[] payload) {
        boolean v6 = out == FORM_IPV6;
        Route r = Route.forward(TX_SLOT, out, 1L << IN_SLOT, JOB, TOKEN, SRC_ID, R_SMAC, R_DMAC, v6 ? R_SIP6 : R_SIP4,
                v6 ? R_DIP6 : R_DIP4, srcPort, XAF_PORT).withSrcPortSpan(span);
        Xaf x = Xaf.of(9, NET, JOB, TOKEN, payload).withSrcRank(rank);
        byte[] expected = expectedEgress(out, expectedPort, x.withHop(8).bytes());
        String from = in == FORM_ID ? "ID" : "source port " + sport;
        return new GoldenFixture("span: " + formName(in) + " -> " + formName(out) + ", src-port " + srcPort + " span " + span
                + ", " + from + ", src_rank " + rank + ": leaves from " + (out == FORM_ID ? "no port (ID form)" : expectedPort),
                in, standard(in, r), ingress(in, sport, x.bytes()), XDP_REDIRECT, expected, Counter.FORWARDED, true, payload.length, out);
    }

    static GoldenFixture drop(String d, byte[] in, List<Setup> setup, Counter c) {
        return new GoldenFixture("drop: " + d, FORM_NONE, setup, in, XDP_DROP, null, c, true, -1, FORM_NONE);
    }

    static GoldenFixture pass(String d, byte[] in, List<Setup> setup) {
        return new GoldenFixture("pass: " + d, FORM_NONE, setup, in, XDP_PASS, in, Counter.PASS_NON_XAF, false, -1, FORM_NONE);
    }

    /** Every golden packet, by file. */
    static List<Group> groups() {
        int[] forms = {FORM_IPV4, FORM_IPV6, FORM_ID};
        int[] seed = {0};

        // ---- forwarding: all nine ingress x egress form pairs, odd and even payloads, plus padded frames ----
        List<GoldenFixture> forward = new ArrayList<>();
        int[][] lengths = {{1, 1000}, {333, 64}, {7, 1400}};
        for (int in : forms) {
            for (int out : forms) {
                for (int len : lengths[(in + out) % 3]) {
                    for (int padding : new int[] {0, 17}) {
                        forward.add(forwarded(formName(in) + " -> " + formName(out) + ", payload " + len + (padding > 0 ? ", padded +" + padding : ""),
                                in, out, standard(in, route(out)), padding, payload(len, ++seed[0])));
                    }
                }
            }
        }

        // ---- a route's UDP source-port span (PROTOCOL.md §7, "The egress flow"): a frame forwarded into an IP form
        //      leaves from src-port + (src_rank + ingress UDP source port) % span, the ingress port 0 for the ID form;
        //      span 0 or 1: src-port. Four flows of one sender (source ports 9450..9453, src_rank 3) stay four ----
        List<GoldenFixture> spans = new ArrayList<>();
        int[] spanSeed = {1000}; // payloads of their own, so the other files' payloads stay as they were
        for (int in : new int[] {FORM_IPV4, FORM_IPV6}) {
            for (int out : new int[] {FORM_IPV4, FORM_IPV6}) {
                for (int sport = 9450; sport < 9454; sport++) {
                    spans.add(spread(in, out, R_SPORT, 4, sport, 3, R_SPORT + (3 + sport) % 4, payload(100 + sport % 4, ++spanSeed[0])));
                }
            }
        }
        for (int out : new int[] {FORM_IPV4, FORM_IPV6}) {
            for (int rank : new int[] {0, 5, 6, 7}) { // ID ingress: src_rank alone picks the port
                spans.add(spread(FORM_ID, out, R_SPORT, 4, 0, rank, R_SPORT + rank % 4, payload(64 + rank, ++spanSeed[0])));
            }
        }
        // the sum is taken wide: rank and source port both at their largest
        spans.add(spread(FORM_IPV4, FORM_IPV6, R_SPORT, 4, 65535, 65535, R_SPORT + (65535 + 65535) % 4, payload(33, ++spanSeed[0])));
        // a span that is not a power of two, ending at the last port
        for (int sport = 9450; sport < 9452; sport++) {
            spans.add(spread(FORM_IPV6, FORM_IPV4, 65529, 7, sport, 3, 65529 + (3 + sport) % 7, payload(50, ++spanSeed[0])));
        }
        // span 1 and 0: every flow leaves from src-port, as without a span; the ID form has no source port to spread
        for (int span : new int[] {1, 0}) {
            spans.add(spread(FORM_IPV4, FORM_IPV4, R_SPORT, span, 9453, 3, R_SPORT, payload(100, ++spanSeed[0])));
            spans.add(spread(FORM_ID, FORM_IPV6, R_SPORT, span, 0, 6, R_SPORT, payload(100, ++spanSeed[0])));
        }
        spans.add(spread(FORM_IPV4, FORM_ID, R_SPORT, 4, 9451, 3, 0, payload(100, ++spanSeed[0])));

        // ---- the egress MTU (PROTOCOL.md §7), at 1500 and with jumbo frames (9000: the frames continue in
        //      fragments, so the program sees multi-buffer frames): for every form pair, the largest frame that fits
        //      the egress port and the ingress port alike is forwarded; one payload byte more than the egress port
        //      takes is dropped as drop_too_big ----
        List<GoldenFixture> mtus = new ArrayList<>();
        for (int mtu : new int[] {1500, 9000}) {
            for (int in : forms) {
                for (int out : forms) {
                    int fits = Math.min(largestPayload(in, mtu), largestPayload(out, mtu));
                    String pair = formName(in) + " -> " + formName(out) + ", egress MTU " + mtu;
                    for (int padding : mtu > 1500 ? new int[] {0, 100} : new int[] {0}) {
                        mtus.add(forwarded("mtu: " + pair + ", payload " + fits + " fits" + (padding > 0 ? ", padded +" + padding : ""),
                                in, out, withMtu(in, route(out), mtu), padding, payload(fits, ++seed[0])));
                    }
                    int over = largestPayload(out, mtu) + 1;
                    mtus.add(new GoldenFixture("mtu: " + pair + ", payload " + over + " is one byte too big", in, withMtu(in, route(out), mtu),
                            ingress(in, Xaf.of(9, NET, JOB, TOKEN, payload(over, ++seed[0])).bytes()), XDP_DROP, null,
                            Counter.DROP_TOO_BIG, true, -1, out));
                }
            }
        }

        // ---- the hop limit cap at ingress (PROTOCOL.md §6): a hop limit above the ingress port's cap (16 unless
        //      configured) is clamped to it, then decremented as always; at or below the cap nothing changes ----
        List<GoldenFixture> hopLimits = new ArrayList<>();
        int[][] hops = {{16, 255, 15}, {16, 17, 15}, {16, 16, 15}, {16, 2, 1}, {4, 255, 3}, {4, 5, 3}, {4, 4, 3}, {255, 255, 254}};
        for (int[] h : hops) {
            int cap = h[0], arrived = h[1], leaves = h[2];
            byte[] payload = payload(40 + cap, ++seed[0]);
            Xaf x = Xaf.of(arrived, NET, JOB, TOKEN, payload);
            // the default cap is the port's without one configured
            List<Setup> setup = List.of(new Port(LO, IN_SLOT, FORM_IPV4, cap == XafDataplane.DEFAULT_MAX_HOP_LIMIT ? 0 : cap),
                    new TxPort(TX_SLOT, LO, 0), new RouteEntry(NET, route(FORM_ID)));
            hopLimits.add(new GoldenFixture("hop limit cap " + cap + ": arrives with " + arrived + ", leaves with " + leaves, FORM_IPV4, setup,
                    ingress(FORM_IPV4, x.bytes()), XDP_REDIRECT, expectedEgress(FORM_ID, x.withHop(leaves).bytes()), Counter.FORWARDED, true, -1, FORM_ID));
        }

        // ---- LOCAL delivery (no AF_XDP socket in the test, so the redirect falls back to DROP): the frame handed
        //      on is the frame as it arrived, padding trimmed: no hop limit check or decrement
        //      (PROTOCOL.md §7) ----
        List<GoldenFixture> local = new ArrayList<>();
        // a frame that continues in fragments cannot go to an AF_XDP socket (single-buffer only): counted, not lost
        byte[] jumbo = ingress(FORM_IPV4, Xaf.of(9, NET, JOB, TOKEN, payload(8000, 99)).bytes());
        local.add(new GoldenFixture("local: a multi-buffer frame is too big for the AF_XDP socket", FORM_IPV4,
                standard(FORM_IPV4, Route.local(0, JOB, TOKEN)), jumbo, XDP_DROP, null, Counter.DROP_TOO_BIG, true, -1, FORM_NONE));
        for (int in : forms) {
            byte[] pl = payload(in == FORM_IPV6 ? 77 : 100, 50 + in);
            Xaf x = Xaf.of(9, NET, JOB, TOKEN, pl);
            local.add(new GoldenFixture("local: " + formName(in) + " without a socket on the queue, padded +5", in,
                    standard(in, Route.local(1L << IN_SLOT, JOB, TOKEN)), pad(ingress(in, x.bytes()), 5), XDP_DROP, ingress(in, x.bytes()),
                    Counter.DROP_REDIRECT, true, -1, FORM_NONE));
            byte[] lastHop = ingress(in, x.withHop(1).bytes());
            local.add(new GoldenFixture("local: " + formName(in) + " hop limit 1 is still delivered", in,
                    standard(in, Route.local(0, JOB, TOKEN)), lastHop, XDP_DROP, lastHop, Counter.DROP_REDIRECT, true, -1, FORM_NONE));
        }
        byte[] p = payload(100, 42);
        Xaf ok = Xaf.of(9, NET, JOB, TOKEN, p);
        byte[] noCsum = ingress(FORM_IPV4, ok.bytes());
        noCsum[40] = 0; noCsum[41] = 0;
        local.add(new GoldenFixture("local: IPv4 UDP checksum 0 (none) stays 0", FORM_IPV4, standard(FORM_IPV4, Route.local(0, JOB, TOKEN)),
                noCsum, XDP_DROP, noCsum.clone(), Counter.DROP_REDIRECT, true, -1, FORM_NONE));

        // ---- drops: each with its own counter ----
        List<GoldenFixture> drops = new ArrayList<>();
        List<Setup> std4 = standard(FORM_IPV4, route(FORM_IPV6));
        drops.add(drop("bad magic", ingress(FORM_IPV4, ok.withMagic(0x5847).bytes()), std4, Counter.DROP_MALFORMED));
        drops.add(drop("bad version", ingress(FORM_IPV4, ok.withVersion(2).bytes()), std4, Counter.DROP_MALFORMED));
        drops.add(drop("bad hdr_len", ingress(FORM_IPV4, ok.withHdrLen(52).bytes()), std4, Counter.DROP_MALFORMED));
        drops.add(drop("payload_len one more than UDP carries", ingress(FORM_IPV4, ok.withPayloadLen(101).bytes()), std4, Counter.DROP_MALFORMED));
        drops.add(drop("payload_len one less than UDP carries (ipv6)", ingress(FORM_IPV6, ok.withPayloadLen(99).bytes()),
                standard(FORM_IPV6, route(FORM_IPV4)), Counter.DROP_MALFORMED));
        drops.add(drop("ID length disagrees with payload_len", ingress(FORM_ID, ok.withPayloadLen(98).bytes()),
                standard(FORM_ID, route(FORM_IPV4)), Counter.DROP_MALFORMED));
        byte[] full = ingress(FORM_IPV4, ok.bytes());
        drops.add(drop("truncated inside the payload", Arrays.copyOf(full, full.length - 30), std4, Counter.DROP_MALFORMED));
        drops.add(drop("truncated inside the XAF header", Arrays.copyOf(full, 14 + 20 + 8 + 30), std4, Counter.DROP_MALFORMED));
        // frames that end inside the UDP or ID header (PROTOCOL.md "Classification"): NOT_XAF before the identifying
        // field (UDP destination port, ID next_hdr), a truncated XAF frame after it
        byte[] full6 = ingress(FORM_IPV6, ok.bytes());
        byte[] fullId = ingress(FORM_ID, ok.bytes());
        drops.add(drop("IPv4 truncated inside the UDP header, after the destination port", Arrays.copyOf(full, 14 + 20 + 4), std4, Counter.DROP_MALFORMED));
        drops.add(drop("IPv4 truncated inside the UDP header, before its checksum's last byte", Arrays.copyOf(full, 14 + 20 + 7), std4, Counter.DROP_MALFORMED));
        drops.add(pass("IPv4 truncated inside the UDP header, before the destination port", Arrays.copyOf(full, 14 + 20 + 3), std4));
        drops.add(drop("IPv6 truncated inside the UDP header, after the destination port", Arrays.copyOf(full6, 14 + 40 + 5),
                standard(FORM_IPV6, route(FORM_IPV4)), Counter.DROP_MALFORMED));
        drops.add(pass("IPv6 truncated inside the UDP header, before the destination port", Arrays.copyOf(full6, 14 + 40 + 2),
                standard(FORM_IPV6, route(FORM_IPV4))));
        drops.add(drop("ID truncated inside the ID header, after next_hdr", Arrays.copyOf(fullId, 14 + 9),
                standard(FORM_ID, route(FORM_ID)), Counter.DROP_MALFORMED));
        drops.add(drop("ID truncated inside the ID header, inside its length", Arrays.copyOf(fullId, 14 + 11),
                standard(FORM_ID, route(FORM_ID)), Counter.DROP_MALFORMED));
        drops.add(pass("ID truncated inside the ID header, before next_hdr", Arrays.copyOf(fullId, 14 + 8), standard(FORM_ID, route(FORM_ID))));
        drops.add(drop("IPv4 fragment (MF) of an XAF datagram",
                ipv4Udp(mac(1), mac(2), ip4(192, 168, 1, 10), ip4(192, 168, 2, 20), 33, 1, 0x2000, 50000, XAF_PORT, ok.bytes()),
                std4, Counter.DROP_MALFORMED));
        drops.add(drop("unknown identifier", ingress(FORM_IPV4, Xaf.of(9, NET + 1, JOB, TOKEN, p).bytes()), std4, Counter.DROP_NO_ROUTE));
        drops.add(drop("hop limit 1", ingress(FORM_IPV4, ok.withHop(1).bytes()), std4, Counter.DROP_HOP_LIMIT));
        drops.add(drop("hop limit 0", ingress(FORM_ID, ok.withHop(0).bytes()), standard(FORM_ID, route(FORM_ID)), Counter.DROP_HOP_LIMIT));
        drops.add(drop("wrong token", ingress(FORM_IPV4, ok.withJob(JOB, TOKEN ^ 1).bytes()), std4, Counter.DROP_BAD_TOKEN));
        drops.add(drop("wrong job", ingress(FORM_IPV4, ok.withJob(JOB + 1, TOKEN).bytes()), std4, Counter.DROP_BAD_TOKEN));
        drops.add(drop("ingress port slot not in the route's mask", ingress(FORM_IPV4, ok.bytes()),
                List.of(new Port(LO, 4, FORM_IPV4, 0), new TxPort(TX_SLOT, LO, 0), new RouteEntry(NET, route(FORM_IPV6))), Counter.DROP_INGRESS));
        drops.add(drop("missing tx_port", ingress(FORM_IPV4, ok.bytes()),
                List.of(new Port(LO, IN_SLOT, FORM_IPV4, 0), new RouteEntry(NET, route(FORM_IPV6))), Counter.DROP_REDIRECT));
        drops.add(drop("tx_port populated at another slot only", ingress(FORM_IPV4, ok.bytes()),
                List.of(new Port(LO, IN_SLOT, FORM_IPV4, 0), new TxPort(TX_SLOT + 1, LO, 0), new RouteEntry(NET, route(FORM_IPV6))), Counter.DROP_REDIRECT));
        drops.add(drop("unknown egress form", ingress(FORM_IPV4, ok.bytes()), standard(FORM_IPV4,
                new Route(TX_SLOT, SharedLayouts.ACTION_FORWARD, 7, 0, JOB, TOKEN, 0, null, null, null, null, 1, 2)), Counter.DROP_BAD_FORM));
        drops.add(drop("LOCAL route without an AF_XDP socket on the queue", ingress(FORM_IPV4, ok.bytes()),
                standard(FORM_IPV4, Route.local(0, JOB, TOKEN)), Counter.DROP_REDIRECT));

        // ---- pass-through: untouched ----
        List<GoldenFixture> passes = new ArrayList<>();
        byte[] arp = eth(42, new byte[] {-1, -1, -1, -1, -1, -1}, mac(1), ETH_ARP).put(new byte[28]).array();
        passes.add(pass("ARP", arp, std4));
        byte[] tcp = ipv4Udp(mac(1), mac(2), ip4(192, 168, 1, 10), ip4(192, 168, 2, 20), 33, 9, 0x4000, 50000, XAF_PORT, ok.bytes());
        tcp[14 + 9] = 6; // protocol TCP, same bytes otherwise
        passes.add(pass("TCP", tcp, std4));
        passes.add(pass("UDP to another port", ipv4Udp(mac(1), mac(2), ip4(192, 168, 1, 10), ip4(192, 168, 2, 20), 33, 9, 0x4000, 50000, 53, ok.bytes()), std4));
        passes.add(pass("IPv4 non-first fragment", ipv4Udp(mac(1), mac(2), ip4(192, 168, 1, 10), ip4(192, 168, 2, 20), 33, 9, 0x0010, 50000, XAF_PORT, ok.bytes()), std4));
        byte[] v6tcp = ingress(FORM_IPV6, ok.bytes());
        v6tcp[14 + 6] = 6; // next header TCP
        passes.add(pass("IPv6 non-UDP", v6tcp, standard(FORM_IPV6, route(FORM_IPV4))));
        passes.add(pass("ID frame whose next header is not XAF", idFrame(mac(1), mac(2), 1, NET, 0x11, ok.bytes()), standard(FORM_ID, route(FORM_ID))));
        passes.add(pass("XAF frame on an ifindex that is not a port", ingress(FORM_IPV4, ok.bytes()),
                List.of(new TxPort(TX_SLOT, LO, 0), new RouteEntry(NET, route(FORM_IPV6)))));

        // ---- hairpin (PROTOCOL.md §7): a frame never leaves by the port it arrived on unless the route lists that
        //      port in its ingress list; without an ingress list such a frame is dropped as drop_hairpin, before the
        //      token is looked at. A LOCAL route has no egress port: the rule does not apply to it ----
        List<GoldenFixture> hairpins = new ArrayList<>();
        int[] hairpinSeed = {3000}; // payloads of their own, so the other files' payloads stay as they were
        for (int in : forms) {
            for (int out : forms) {
                Xaf x = Xaf.of(9, NET, JOB, TOKEN, payload(60 + in * 3 + out, ++hairpinSeed[0]));
                hairpins.add(new GoldenFixture("hairpin: " + formName(in) + " -> " + formName(out) + ", no ingress list, leaves by the arrival port: dropped",
                        in, hairpin(in, route(out, IN_SLOT, 0)), ingress(in, x.bytes()), XDP_DROP, null, Counter.DROP_HAIRPIN, true, -1, out));
            }
        }
        for (int in : forms) {
            int out = in == FORM_ID ? FORM_IPV4 : FORM_ID;
            hairpins.add(forwarded("hairpin: " + formName(in) + " -> " + formName(out) + ", the route lists the arrival port: forwarded back out of it",
                    in, out, hairpin(in, route(out, IN_SLOT, 1L << IN_SLOT)), 0, payload(90 + in, ++hairpinSeed[0])));
            hairpins.add(forwarded("hairpin: " + formName(in) + " -> " + formName(out) + ", no ingress list, another egress port: forwarded",
                    in, out, standard(in, route(out, TX_SLOT, 0)), 0, payload(95 + in, ++hairpinSeed[0])));
        }
        Xaf badToken = Xaf.of(9, NET, JOB, TOKEN ^ 1, payload(70, ++hairpinSeed[0]));
        hairpins.add(new GoldenFixture("hairpin: checked before the token (wrong token, leaves by the arrival port)", FORM_IPV4,
                hairpin(FORM_IPV4, route(FORM_IPV6, IN_SLOT, 0)), ingress(FORM_IPV4, badToken.bytes()), XDP_DROP, null,
                Counter.DROP_HAIRPIN, true, -1, FORM_IPV6));
        Xaf lastHop = Xaf.of(1, NET, JOB, TOKEN, payload(71, ++hairpinSeed[0]));
        hairpins.add(new GoldenFixture("hairpin: checked before the hop limit (hop limit 1, leaves by the arrival port)", FORM_IPV6,
                hairpin(FORM_IPV6, route(FORM_IPV4, IN_SLOT, 0)), ingress(FORM_IPV6, lastHop.bytes()), XDP_DROP, null,
                Counter.DROP_HAIRPIN, true, -1, FORM_IPV4));
        Xaf local0 = Xaf.of(9, NET, JOB, TOKEN, payload(72, ++hairpinSeed[0]));
        hairpins.add(new GoldenFixture("hairpin: a LOCAL route on the port of slot 0 has no egress port and is not a hairpin", FORM_IPV4,
                List.of(new Port(LO, 0, FORM_IPV4, 0), new TxPort(0, LO, 0), new RouteEntry(NET, Route.local(0, JOB, TOKEN))),
                ingress(FORM_IPV4, local0.bytes()), XDP_DROP, ingress(FORM_IPV4, local0.bytes()), Counter.DROP_REDIRECT, true, -1, FORM_NONE));

        // ---- the egress form's own length fields (PROTOCOL.md §7, "Egress MTU"): an ID frame of nearly 64 kB fits
        //      the ID length but not the IPv6 payload length (8 + 48 + payload <= 65535) nor the IPv4 total length
        //      (20 + 8 + 48 + payload <= 65535). A port MTU above 64 kB does not stop it; the program must, or the
        //      frame would leave with truncated length fields. One byte over each form's limit ----
        List<GoldenFixture> formLengths = new ArrayList<>();
        int bigMtu = 1 << 17;
        for (int out : new int[] {FORM_IPV6, FORM_IPV4}) {
            int over = (out == FORM_IPV6 ? 0xFFFF - 8 - 48 : 0xFFFF - 20 - 8 - 48) + 1;
            formLengths.add(new GoldenFixture("form length: ID -> " + formName(out) + ", egress MTU " + bigMtu + ", payload " + over
                    + " is one byte more than the " + formName(out) + " length fields hold", FORM_ID, withMtu(FORM_ID, route(out), bigMtu),
                    ingress(FORM_ID, Xaf.of(9, NET, JOB, TOKEN, payload(over, 4000 + out)).bytes()), XDP_DROP, null,
                    Counter.DROP_TOO_BIG, true, -1, out));
        }

        return List.of(
                new Group(FILES.get(0), "forwarding between all nine ingress x egress form pairs, odd and even payloads, padded frames", forward),
                new Group(FILES.get(1), "a route's UDP source-port span: the flows of one sender leave from distinct source ports (PROTOCOL.md §7)", spans),
                new Group(FILES.get(2), "the egress MTU at 1500 and 9000 bytes (jumbo frames arrive as multi-buffer frames): the largest frame that fits, and one byte more", mtus),
                new Group(FILES.get(3), "the hop limit cap at ingress (PROTOCOL.md §6)", hopLimits),
                new Group(FILES.get(4), "LOCAL routes: the frame handed on as it arrived (no AF_XDP socket here: the redirect falls back to DROP)", local),
                new Group(FILES.get(5), "malformed, truncated and refused frames, each with its own counter", drops),
                new Group(FILES.get(6), "frames that are not XAF, or not on a port: passed untouched", passes),
                new Group(FILES.get(7), "hairpin: a frame never leaves by the port it arrived on unless its route lists that port as ingress (PROTOCOL.md §7)", hairpins),
                new Group(FILES.get(8), "the egress form's 16-bit length fields, with a port MTU above 64 kB (PROTOCOL.md §7, \"Egress MTU\")", formLengths));
    }

    /** The files' contents by file name, as {@link #main} writes them. */
    static Map<String, String> render() {
        Map<String, String> files = new LinkedHashMap<>();
        for (Group g : groups()) {
            StringBuilder b = new StringBuilder()
                    .append("# Golden packets of the XDP gateway (xaf_gateway.bpf.c): ").append(g.about()).append(".\n")
                    .append("# Generated by io.xaforward.dataplane.GoldenFixtures (dataplane/src/test/java): regenerate, do not edit.\n")
                    .append("# Format and regeneration: docs/ARCHITECTURE.md, \"Golden packets\".\n");
            for (GoldenFixture f : g.fixtures()) b.append('\n').append(f.format());
            files.put(g.file(), b.toString());
        }
        return files;
    }

    /** The *.txt files of {@code dir} by name, sorted. */
    static Map<String, String> readFiles(Path dir) {
        Map<String, String> files = new TreeMap<>();
        try (Stream<Path> list = Files.list(dir)) {
            for (Path p : list.filter(p -> p.getFileName().toString().endsWith(".txt")).toList()) {
                files.put(p.getFileName().toString(), Files.readString(p, StandardCharsets.UTF_8));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading the golden packets in " + dir.toAbsolutePath(), e);
        }
        return files;
    }

    /** Writes every file into {@code dir} and deletes *.txt files there that the generator no longer writes. */
    static void write(Path dir) throws IOException {
        Files.createDirectories(dir);
        Map<String, String> files = render();
        for (String stale : readFiles(dir).keySet()) {
            if (!files.containsKey(stale)) Files.delete(dir.resolve(stale));
        }
        for (Map.Entry<String, String> e : files.entrySet()) {
            Files.writeString(dir.resolve(e.getKey()), e.getValue(), StandardCharsets.UTF_8);
        }
    }

    /** Regenerates the files: {@code [DIR]}, by default {@link #SOURCE_DIR} (run from the dataplane module). */
    public static void main(String[] args) throws IOException {
        Path dir = args.length > 0 ? Path.of(args[0]) : SOURCE_DIR;
        write(dir);
        System.out.println("wrote " + render().size() + " files of golden packets to " + dir.toAbsolutePath());
    }
}
