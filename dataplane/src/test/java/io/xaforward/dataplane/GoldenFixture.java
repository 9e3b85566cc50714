package io.xaforward.dataplane;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import static io.xaforward.dataplane.SharedLayouts.FORM_ID;
import static io.xaforward.dataplane.SharedLayouts.FORM_IPV4;
import static io.xaforward.dataplane.SharedLayouts.FORM_IPV6;
import static io.xaforward.dataplane.SharedLayouts.FORM_NONE;

/**
 * One golden packet of the XDP gateway as data: the map entries to set up, the frame handed to the program on
 * ifindex {@link #IFINDEX}, and what must come of it. {@link #format} and {@link #parse} are the text form of
 * the files under {@code src/test/resources/golden/} (described in docs/ARCHITECTURE.md, "Golden packets"), which
 * {@link #all} reads from the classpath. They ship in the dataplane test-jar, so the Java engines' tests read the same
 * fixtures.
 *
 * @param name           what the fixture shows (the test's display name)
 * @param ingressForm    the form the frame arrives in; {@link SharedLayouts#FORM_NONE} when it does not matter
 * @param setup          map entries, applied in order to a freshly loaded program
 * @param input          the frame
 * @param expectedAction XDP action the program must return
 * @param expectedOutput the frame the program must leave behind; null: not compared (drops)
 * @param counter        the one outcome counter the frame must move
 * @param isXaf          whether the frame also counts as RX_XAF
 * @param payloadLength  -1, or: the frame is forwarded with hop limit 9 -> 8 and the output's payload and checksums
 *                       are checked independently against the input's {@code payloadLength} payload bytes
 * @param egressForm     the route's egress form (checks of forwarded frames; whether DROP_TOO_BIG counts on a port)
 */
public record GoldenFixture(String name, int ingressForm, List<Setup> setup, byte[] input, int expectedAction,
                     byte[] expectedOutput, Counter counter, boolean isXaf, int payloadLength, int egressForm) {

    /**
     * The XDP actions a fixture can expect (enum xdp_action of linux/bpf.h). The fixtures spell them out rather than
     * borrow them from testkit's ProgTestRun, which runs them: testkit depends on dataplane, so dataplane's test-jar
     * cannot depend on it.
     */
    public static final int XDP_DROP = 1, XDP_PASS = 2, XDP_REDIRECT = 4;

    /** The ifindex every golden frame enters on: lo, which exists in every namespace and has one rx queue. */
    public static final int IFINDEX = 1;

    private static final HexFormat HEX = HexFormat.of();

    public GoldenFixture {
        setup = List.copyOf(setup);
    }

    /** One map entry of a fixture's setup. */
    public sealed interface Setup {
        void apply(XafDataplane dp);

        String format();
    }

    /** A gateway port ({@code ports}); {@code maxHop} 0: the default cap ({@link XafDataplane#setPort(int, int, int)}). */
    public record Port(int ifindex, int slot, int form, int maxHop) implements Setup {
        public void apply(XafDataplane dp) {
            if (maxHop == 0) dp.setPort(ifindex, slot, form);
            else dp.setPort(ifindex, slot, form, maxHop);
        }

        public String format() {
            return "port " + ifindex + " slot " + slot + " form " + formName(form) + (maxHop == 0 ? "" : " max-hop " + maxHop);
        }
    }

    /** An egress slot ({@code tx_ports}, {@code port_mtus}); {@code mtu} 0: the interface's own MTU. */
    public record TxPort(int slot, int ifindex, int mtu) implements Setup {
        public void apply(XafDataplane dp) {
            if (mtu == 0) dp.setTxPort(slot, ifindex);
            else dp.setTxPort(slot, ifindex, mtu);
        }

        public String format() {
            return "tx-port " + slot + " ifindex " + ifindex + (mtu == 0 ? "" : " mtu " + mtu);
        }
    }

    /** A route ({@code routes}) for {@code networkId}. */
    public record RouteEntry(int networkId, Route route) implements Setup {
        public void apply(XafDataplane dp) {
            dp.putRoute(networkId, route);
        }

        public String format() {
            Route r = route;
            return "route " + hex32(networkId) + " action " + (r.action() == SharedLayouts.ACTION_LOCAL ? "local" : "forward")
                    + " tx-slot " + r.txSlot() + " egress-form " + formName(r.egressForm())
                    + " ingress-mask 0x" + Long.toHexString(r.ingressMask()) + " job " + r.jobId() + " token " + hex32(r.jobToken())
                    + " src-id " + hex32(r.srcId())
                    + " src-mac " + HEX.formatHex(r.srcMac()) + " dst-mac " + HEX.formatHex(r.dstMac())
                    + " src-ip " + HEX.formatHex(r.srcIp()) + " dst-ip " + HEX.formatHex(r.dstIp())
                    + " src-port " + r.srcPort() + " src-port-span " + r.srcPortSpan() + " dst-port " + r.dstPort();
        }
    }

    /** The slot of the port that frames enter on, or -1 when {@link #IFINDEX} is not a port. */
    public int ingressSlot() {
        return setup.stream().filter(s -> s instanceof Port p && p.ifindex() == IFINDEX).mapToInt(s -> ((Port) s).slot()).findFirst().orElse(-1);
    }

    /** The egress slot of the fixture's route, or -1 without one. */
    public int routeTxSlot() {
        return setup.stream().filter(s -> s instanceof RouteEntry).mapToInt(s -> ((RouteEntry) s).route().txSlot()).findFirst().orElse(-1);
    }

    /** Every golden packet on the classpath ({@code /golden/<file>} for each of {@link GoldenFixtures#FILES}), by file. */
    public static Map<String, List<GoldenFixture>> all() {
        Map<String, List<GoldenFixture>> byFile = new LinkedHashMap<>();
        for (String file : GoldenFixtures.FILES) {
            String resource = GoldenFixtures.RESOURCE_DIR + file;
            try (InputStream in = GoldenFixture.class.getResourceAsStream(resource)) {
                if (in == null) throw new IllegalStateException("no " + resource + " on the classpath");
                byFile.put(file, parseFile(new String(in.readAllBytes(), StandardCharsets.UTF_8), file));
            } catch (IOException e) {
                throw new UncheckedIOException(resource, e);
            }
        }
        return byFile;
    }

    // ---- the text form ------------------------------------------------------------------------------------------

    static String formName(int form) {
        return switch (form) {
            case FORM_NONE -> "none";
            case FORM_IPV4 -> "ipv4";
            case FORM_IPV6 -> "ipv6";
            case FORM_ID -> "id";
            default -> Integer.toString(form);
        };
    }

    static int form(String s) {
        return switch (s) {
            case "none" -> FORM_NONE;
            case "ipv4" -> FORM_IPV4;
            case "ipv6" -> FORM_IPV6;
            case "id" -> FORM_ID;
            default -> Integer.parseInt(s);
        };
    }

    /**
     * The XDP action the program returns for a frame it counts under {@code outcome}: pass for non-XAF frames,
     * redirect for forwarded and locally delivered ones, drop for every drop. The Java engines' tests map their
     * decision through it to compare it with {@link #expectedAction}.
     */
    public static int actionOf(Counter outcome) {
        return switch (outcome) {
            case PASS_NON_XAF -> XDP_PASS;
            case FORWARDED, TO_LOCAL -> XDP_REDIRECT;
            default -> XDP_DROP;
        };
    }

    static String actionName(int action) {
        return switch (action) {
            case XDP_PASS -> "pass";
            case XDP_DROP -> "drop";
            case XDP_REDIRECT -> "redirect";
            default -> throw new IllegalArgumentException("action " + action);
        };
    }

    static int action(String s) {
        return switch (s) {
            case "pass" -> XDP_PASS;
            case "drop" -> XDP_DROP;
            case "redirect" -> XDP_REDIRECT;
            default -> throw new IllegalArgumentException("unknown action '" + s + "'");
        };
    }

    private static boolean bool(String s, String where) {
        return switch (s) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException(where + ": xaf '" + s + "' is not true or false");
        };
    }

    private static String hex32(int v) { return String.format("0x%08x", v); }

    private static int int32(String s) { return (int) Long.parseLong(s.substring(2), 16); }

    /** The fixture as a block of "key: value" lines (no blank line). */
    String format() {
        StringBuilder b = new StringBuilder();
        b.append("name: ").append(name).append('\n');
        b.append("ingress-form: ").append(formName(ingressForm)).append('\n');
        for (Setup s : setup) b.append("setup: ").append(s.format()).append('\n');
        b.append("input: ").append(HEX.formatHex(input)).append('\n');
        b.append("action: ").append(actionName(expectedAction)).append('\n');
        b.append("counter: ").append(counter.name().toLowerCase(Locale.ROOT)).append('\n');
        b.append("xaf: ").append(isXaf).append('\n');
        b.append("egress-form: ").append(formName(egressForm)).append('\n');
        if (payloadLength >= 0) b.append("payload-length: ").append(payloadLength).append('\n');
        if (expectedOutput != null) b.append("output: ").append(HEX.formatHex(expectedOutput)).append('\n');
        return b.toString();
    }

    /** Fixtures of a file: '#' lines are comments, blank lines separate fixtures. */
    static List<GoldenFixture> parseFile(String text, String source) {
        List<GoldenFixture> out = new ArrayList<>();
        List<String> block = new ArrayList<>();
        int lineNo = 0, blockStart = 0;
        for (String line : (text + "\n").split("\n", -1)) {
            lineNo++;
            if (line.startsWith("#")) continue;
            if (line.isBlank()) {
                if (!block.isEmpty()) out.add(parse(block, source + ":" + blockStart));
                block.clear();
                continue;
            }
            if (block.isEmpty()) blockStart = lineNo;
            block.add(line);
        }
        return out;
    }

    /** One fixture from its "key: value" lines; {@code where} names it in errors. */
    static GoldenFixture parse(List<String> lines, String where) {
        Map<String, String> fields = new LinkedHashMap<>();
        List<Setup> setup = new ArrayList<>();
        for (String line : lines) {
            int colon = line.indexOf(": ");
            if (colon < 0) throw new IllegalArgumentException(where + ": not 'key: value': " + line);
            String key = line.substring(0, colon), value = line.substring(colon + 2);
            if (key.equals("setup")) setup.add(parseSetup(value, where));
            else if (fields.put(key, value) != null) throw new IllegalArgumentException(where + ": '" + key + "' twice");
        }
        for (String required : List.of("name", "ingress-form", "input", "action", "counter", "xaf", "egress-form")) {
            if (!fields.containsKey(required)) throw new IllegalArgumentException(where + ": no '" + required + "'");
        }
        for (String key : fields.keySet()) {
            if (!List.of("name", "ingress-form", "input", "action", "counter", "xaf", "egress-form", "payload-length", "output").contains(key)) {
                throw new IllegalArgumentException(where + ": unknown key '" + key + "'");
            }
        }
        String output = fields.get("output");
        String payloadLength = fields.get("payload-length");
        return new GoldenFixture(fields.get("name"), form(fields.get("ingress-form")), setup, HEX.parseHex(fields.get("input")),
                action(fields.get("action")), output == null ? null : HEX.parseHex(output),
                Counter.valueOf(fields.get("counter").toUpperCase(Locale.ROOT)), bool(fields.get("xaf"), where),
                payloadLength == null ? -1 : Integer.parseInt(payloadLength), form(fields.get("egress-form")));
    }

    private static Setup parseSetup(String value, String where) {
        String[] w = value.split(" ");
        if (w.length % 2 != 0) throw new IllegalArgumentException(where + ": setup '" + value + "': not '<kind> <key> (<name> <value>)...'");
        Map<String, String> kv = new LinkedHashMap<>();
        for (int i = 2; i + 1 < w.length; i += 2) kv.put(w[i], w[i + 1]);
        try {
            Setup s = switch (w[0]) {
                case "port" -> new Port(Integer.parseInt(w[1]), Integer.parseInt(field(kv, "slot")), form(field(kv, "form")),
                        kv.containsKey("max-hop") ? Integer.parseInt(field(kv, "max-hop")) : 0);
                case "tx-port" -> new TxPort(Integer.parseInt(w[1]), Integer.parseInt(field(kv, "ifindex")),
                        kv.containsKey("mtu") ? Integer.parseInt(field(kv, "mtu")) : 0);
                case "route" -> new RouteEntry(int32(w[1]), new Route(Integer.parseInt(field(kv, "tx-slot")),
                        switch (field(kv, "action")) {
                            case "forward" -> SharedLayouts.ACTION_FORWARD;
                            case "local" -> SharedLayouts.ACTION_LOCAL;
                            case String other -> throw new IllegalArgumentException("unknown action '" + other + "'");
                        },
                        form(field(kv, "egress-form")), Long.parseUnsignedLong(field(kv, "ingress-mask").substring(2), 16),
                        Integer.parseInt(field(kv, "job")), int32(field(kv, "token")),
                        int32(field(kv, "src-id")), HEX.parseHex(field(kv, "src-mac")), HEX.parseHex(field(kv, "dst-mac")),
                        HEX.parseHex(field(kv, "src-ip")), HEX.parseHex(field(kv, "dst-ip")),
                        Integer.parseInt(field(kv, "src-port")), Integer.parseInt(field(kv, "dst-port")),
                        Integer.parseInt(field(kv, "src-port-span"))));
                default -> throw new IllegalArgumentException("unknown setup kind '" + w[0] + "'");
            };
            if (!kv.isEmpty()) throw new IllegalArgumentException("unknown " + kv.keySet());
            return s;
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(where + ": setup '" + value + "': " + e.getMessage(), e);
        }
    }

    /** Takes {@code key} out of {@code kv} (what is left at the end is unknown). */
    private static String field(Map<String, String> kv, String key) {
        String v = kv.remove(key);
        if (v == null) throw new IllegalArgumentException("no '" + key + "'");
        return v;
    }
}
