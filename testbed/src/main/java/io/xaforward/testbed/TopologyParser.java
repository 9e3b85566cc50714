package io.xaforward.testbed;

import io.xaforward.protocol.NetworkForm;

import io.xaforward.common.YamlFields;
import io.xaforward.common.YamlTree;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.zip.CRC32;

/**
 * Turns topology YAML into a {@link Topology}, rejecting anything ambiguous with the file and field named. Reads the
 * text as the gateway config and the cluster file are read ({@link YamlTree}: no YAML 1.1 coercions, a key given
 * twice refused) with the same strict checks ({@link YamlFields}).
 */
final class TopologyParser {
    static final int MAX_PREFIX = 6;
    static final int MAX_NAME = 8;
    private static final Pattern PREFIX = Pattern.compile("[a-z][a-z0-9]{0,5}");
    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9]*");

    private final String source;
    /** The strict key and value checks; an error names the field (the entry, then the key). */
    private final YamlFields fields;

    private TopologyParser(String source) {
        this.source = source;
        this.fields = new YamlFields((where, key, problem) -> new TopologyException(source, field(where, key), problem));
    }

    private static String field(String where, String key) {
        if (key == null) return where;
        return where.equals(TOP) ? key : where + "." + key;
    }

    private static final String TOP = "(top level)";

    static Topology parse(String yaml, String source) {
        return new TopologyParser(source).parse(yaml);
    }

    static void checkPrefix(String prefix, String source, String field) {
        if (prefix == null || !PREFIX.matcher(prefix).matches())
            throw new TopologyException(source, field, "'" + prefix + "' must be 1-" + MAX_PREFIX
                    + " characters of [a-z0-9] starting with a letter (it starts every namespace and interface name, "
                    + "which Linux limits to 15 characters)");
    }

    /** Default prefix: up to 3 letters/digits of the name plus 3 hex digits of its CRC32, so similar names differ. */
    static String defaultPrefix(String name) {
        String alnum = name.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]", "");
        if (alnum.isEmpty() || !Character.isLetter(alnum.charAt(0))) alnum = "x" + alnum;
        CRC32 crc = new CRC32();
        crc.update(name.getBytes(StandardCharsets.UTF_8));
        String hash = String.format("%08x", crc.getValue()).substring(0, 3);
        return alnum.substring(0, Math.min(3, alnum.length())) + hash;
    }

    private Topology parse(String yaml) {
        Object root = YamlTree.read(yaml, problem -> new TopologyException(source, "(yaml)", problem.replace('\n', ' ')));
        Map<?, ?> top = fields.map(root, TOP);
        fields.allowOnly(top, TOP, Set.of("name", "prefix", "datacenters", "gateways", "links", "wan"));
        String name = string(top, "name", TOP);
        String prefix = top.containsKey("prefix") ? string(top, "prefix", TOP) : defaultPrefix(name);
        checkPrefix(prefix, source, "prefix");

        List<?> dcList = list(top, "datacenters", TOP, true);
        if (dcList.isEmpty()) throw new TopologyException(source, "datacenters", "at least one datacenter is required");
        List<Datacenter> dcs = new ArrayList<>();
        for (int i = 0; i < dcList.size(); i++) dcs.add(datacenter(dcList.get(i), i, "datacenters[" + i + "]"));
        checkUnique(dcs.stream().map(Datacenter::name).toList(), "datacenters", "datacenter name");
        checkSubnetsDisjoint(dcs);

        List<?> gwList = list(top, "gateways", TOP, false);
        List<GatewaySpec> gws = new ArrayList<>();
        Set<String> dcNames = new HashSet<>(dcs.stream().map(Datacenter::name).toList());
        for (int i = 0; i < gwList.size(); i++) gws.add(gateway(gwList.get(i), i, "gateways[" + i + "]", dcNames));
        checkUnique(gws.stream().map(GatewaySpec::name).toList(), "gateways", "gateway name");

        List<?> linkList = list(top, "links", TOP, false);
        List<LinkLimit> links = new ArrayList<>();
        Set<String> seenLinks = new HashSet<>();
        for (int i = 0; i < linkList.size(); i++) {
            String f = "links[" + i + "]";
            LinkLimit l = link(linkList.get(i), f, gws);
            if (!seenLinks.add(l.gateway() + "/" + l.datacenter()))
                throw new TopologyException(source, f, "duplicate limit for gateway '" + l.gateway() + "' and dc '" + l.datacenter() + "'");
            links.add(l);
        }
        Optional<WanLink> wan = top.containsKey("wan") ? Optional.of(wan(top.get("wan"), gws, dcs)) : Optional.empty();
        if (wan.isPresent() && seenLinks.contains(wan.get().gateway() + "/" + wan.get().datacenter()))
            throw new TopologyException(source, "wan", "gateway '" + wan.get().gateway() + "' and dc '" + wan.get().datacenter()
                    + "' already have a port limit in links; shape that link with either links or wan, not both");
        Topology t = new Topology(name, prefix, dcs, gws, links, wan, source);
        for (Datacenter dc : dcs) checkCapacity(dc, t.gatewaysOf(dc.name()).size());
        Layout.of(t); // checks generated interface names against the 15-character limit
        return t;
    }

    private Datacenter datacenter(Object node, int index, String f) {
        Map<?, ?> m = fields.map(node, f);
        fields.allowOnly(m, f, Set.of("name", "form", "mtu", "hosts", "subnet"));
        String name = checkName(string(m, "name", f), f + ".name");
        String formText = string(m, "form", f);
        NetworkForm form;
        try {
            form = NetworkForm.fromName(formText);
        } catch (IllegalArgumentException e) {
            throw new TopologyException(source, f + ".form", e.getMessage());
        }
        int mtu = mtu(m, form, f, 1500);
        List<String> hosts = hosts(m, f);
        IpPrefix subnet = null;
        if (m.containsKey("subnet")) {
            if (form == NetworkForm.ID) throw new TopologyException(source, f + ".subnet", "an id-form datacenter has no IP subnet");
            String text = string(m, "subnet", f);
            try {
                subnet = IpPrefix.parse(text);
            } catch (IllegalArgumentException e) {
                throw new TopologyException(source, f + ".subnet", e.getMessage());
            }
            if (form == NetworkForm.IPV4 && (!subnet.isIpv4() || subnet.length() > 30))
                throw new TopologyException(source, f + ".subnet", "'" + text + "' must be an IPv4 prefix of length <= 30");
            if (form == NetworkForm.IPV6 && (!subnet.isIpv6() || subnet.length() > 120))
                throw new TopologyException(source, f + ".subnet", "'" + text + "' must be an IPv6 prefix of length <= 120");
        } else if (form == NetworkForm.IPV4) {
            subnet = Datacenter.defaultIpv4(index);
        } else if (form == NetworkForm.IPV6) {
            subnet = Datacenter.defaultIpv6(index);
        }
        return new Datacenter(name, index, form, mtu, hosts, subnet);
    }

    /** A datacenter's {@code hosts}: a count (hosts h0, h1, ...) or a list of host names. */
    private List<String> hosts(Map<?, ?> dc, String where) {
        String f = where + ".hosts";
        Object node = dc.get("hosts");
        if (node == null) throw new TopologyException(source, f, "'hosts' is required (a count or a list of host names)");
        List<String> names = new ArrayList<>();
        if (node instanceof String) {
            long count = fields.integer(dc, "hosts", 0, 1, 250, where);
            for (int i = 0; i < count; i++) names.add("h" + i);
        } else if (node instanceof List<?> l) {
            if (l.isEmpty()) throw new TopologyException(source, f, "needs at least one host");
            for (int i = 0; i < l.size(); i++) {
                if (!(l.get(i) instanceof String s)) throw new TopologyException(source, f + "[" + i + "]", "must be a name");
                names.add(checkName(s, f + "[" + i + "]"));
            }
            checkUnique(names, f, "host name");
        } else {
            throw new TopologyException(source, f, "must be a count or a list of host names");
        }
        return names;
    }

    private GatewaySpec gateway(Object node, int index, String f, Set<String> dcNames) {
        Map<?, ?> m = fields.map(node, f);
        fields.allowOnly(m, f, Set.of("name", "joins"));
        String name = checkName(string(m, "name", f), f + ".name");
        if (dcNames.contains(name))
            throw new TopologyException(source, f + ".name", "'" + name + "' is also a datacenter name; use distinct names");
        List<?> joins = list(m, "joins", f, true);
        if (joins.isEmpty()) throw new TopologyException(source, f + ".joins", "a gateway must join at least one datacenter");
        List<String> names = new ArrayList<>();
        for (int i = 0; i < joins.size(); i++) {
            String jf = f + ".joins[" + i + "]";
            if (!(joins.get(i) instanceof String s)) throw new TopologyException(source, jf, "must be a datacenter name");
            if (!dcNames.contains(s))
                throw new TopologyException(source, jf, "unknown datacenter '" + s + "' (known: " + String.join(", ", dcNames.stream().sorted().toList()) + ")");
            names.add(s);
        }
        checkUnique(names, f + ".joins", "datacenter");
        return new GatewaySpec(name, index, names);
    }

    private LinkLimit link(Object node, String f, List<GatewaySpec> gws) {
        Map<?, ?> m = fields.map(node, f);
        fields.allowOnly(m, f, Set.of("gateway", "dc", "rate", "qdisc"));
        String gw = string(m, "gateway", f);
        String dc = string(m, "dc", f);
        checkGatewayJoins(gw, dc, f, gws);
        String rate = string(m, "rate", f);
        long bits = rateBits(rate, f + ".rate");
        LinkLimit.Qdisc qdisc = LinkLimit.Qdisc.HTB;
        if (m.containsKey("qdisc")) {
            try {
                qdisc = LinkLimit.Qdisc.fromName(string(m, "qdisc", f));
            } catch (IllegalArgumentException e) {
                throw new TopologyException(source, f + ".qdisc", e.getMessage());
            }
        }
        return new LinkLimit(gw, dc, rate, bits, qdisc);
    }

    /** {@code f.gateway} names a gateway of the topology that joins the datacenter {@code f.dc}. */
    private void checkGatewayJoins(String gw, String dc, String f, List<GatewaySpec> gws) {
        GatewaySpec spec = gws.stream().filter(g -> g.name().equals(gw)).findFirst()
                .orElseThrow(() -> new TopologyException(source, f + ".gateway", "unknown gateway '" + gw + "'"));
        if (!spec.joins().contains(dc))
            throw new TopologyException(source, f + ".dc", "gateway '" + gw + "' does not join datacenter '" + dc + "'");
    }

    /** A rate field ("100mbit", "1gbit", ...) in bits per second. */
    private long rateBits(String rate, String f) {
        try {
            return LinkLimit.parseRate(rate);
        } catch (IllegalArgumentException e) {
            throw new TopologyException(source, f, e.getMessage());
        }
    }

    /** An entry's {@code mtu}: an integer from the form's minimum (IPv6 1280, else 576) to 9000 (jumbo frames). */
    private int mtu(Map<?, ?> m, NetworkForm form, String where, int dflt) {
        return (int) fields.integer(m, "mtu", dflt, form == NetworkForm.IPV6 ? 1280 : 576, MAX_MTU, where);
    }

    /** The largest MTU a topology may give: jumbo frames. */
    static final int MAX_MTU = 9000;

    private WanLink wan(Object node, List<GatewaySpec> gws, List<Datacenter> dcs) {
        String f = "wan";
        Map<?, ?> m = fields.map(node, f);
        fields.allowOnly(m, f, Set.of("gateway", "dc", "rate", "queue", "mtu", "delay", "jitter", "loss", "loss-burst", "reorder"));
        String gw = string(m, "gateway", f);
        String dc = string(m, "dc", f);
        checkGatewayJoins(gw, dc, f, gws);
        String rate = string(m, "rate", f);
        long bits = rateBits(rate, f + ".rate");
        int queue = (int) fields.integer(m, "queue", WanLink.DEFAULT_QUEUE_PACKETS, 2, 100_000, f); // packets
        Datacenter remote = dcs.stream().filter(d -> d.name().equals(dc)).findFirst().orElseThrow();
        int mtu = mtu(m, remote.form(), f, remote.mtu());
        return new WanLink(gw, dc, rate, bits, queue, mtu, impairment(m, f));
    }

    /** The longest one-way delay a WAN may have (a geostationary satellite hop is ~270 ms). */
    static final long MAX_DELAY_NANOS = 1_000_000_000L;
    private static final Pattern DURATION = Pattern.compile("([0-9]+(?:\\.[0-9]+)?)(s|ms|us)");
    private static final Pattern PERCENT = Pattern.compile("([0-9]+(?:\\.[0-9]+)?)%");

    /** The WAN's delay, jitter, loss and reordering; {@link WanImpairment#NONE} when none is given. */
    private WanImpairment impairment(Map<?, ?> m, String f) {
        long delay = duration(m, "delay", f);
        long jitter = duration(m, "jitter", f);
        if (jitter > delay)
            throw new TopologyException(source, f + ".jitter", "jitter (" + m.get("jitter") + ") must not exceed delay ("
                    + (m.get("delay") == null ? "0" : m.get("delay")) + "): a frame cannot leave before it arrived");
        double loss = percent(m, "loss", f);
        WanImpairment.BurstLoss burst = null;
        if (m.get("loss-burst") != null) {
            if (m.get("loss") != null)
                throw new TopologyException(source, f + ".loss-burst", "give either loss (independent) or loss-burst"
                        + " (Gilbert-Elliott), not both; loss-burst's k < 100% adds loss outside bursts");
            String bf = f + ".loss-burst";
            Map<?, ?> b = fields.map(m.get("loss-burst"), bf);
            fields.allowOnly(b, bf, Set.of("p", "r", "h", "k"));
            for (String key : List.of("p", "r"))
                if (b.get(key) == null) throw new TopologyException(source, bf + "." + key, "'" + key + "' is required");
            double r = percent(b, "r", bf);
            if (r == 0) throw new TopologyException(source, bf + ".r", "r must be above 0%: a burst that never ends loses everything");
            burst = new WanImpairment.BurstLoss(percent(b, "p", bf), r, b.get("h") == null ? 0 : percent(b, "h", bf),
                    b.get("k") == null ? 1 : percent(b, "k", bf));
        }
        double reorder = percent(m, "reorder", f);
        if (reorder > 0 && delay == 0)
            throw new TopologyException(source, f + ".reorder", "reorder needs a delay: it lets frames skip the delay queue");
        return new WanImpairment(delay, jitter, loss, burst, reorder);
    }

    /** A duration such as {@code 20ms}, {@code 500us}, {@code 0.1s} in nanoseconds; 0 when absent. */
    private long duration(Map<?, ?> m, String key, String f) {
        Object v = m.get(key);
        if (v == null) return 0;
        String s = v.toString().trim();
        java.util.regex.Matcher d = DURATION.matcher(s);
        if (!(v instanceof String) || !d.matches())
            throw new TopologyException(source, f + "." + key, key + ": '" + s + "' is not a duration (e.g. 20ms, 500us, 0.1s)");
        double unit = switch (d.group(2)) {
            case "s" -> 1e9;
            case "ms" -> 1e6;
            default -> 1e3;
        };
        double nanos = Double.parseDouble(d.group(1)) * unit;
        if (nanos > MAX_DELAY_NANOS)
            throw new TopologyException(source, f + "." + key, key + " must be at most 1s, got " + s);
        return Math.round(nanos);
    }

    /** A percentage such as {@code 0.1%} as a probability 0..1; 0 when absent. */
    private double percent(Map<?, ?> m, String key, String f) {
        Object v = m.get(key);
        if (v == null) return 0;
        String s = v.toString().trim();
        java.util.regex.Matcher p = PERCENT.matcher(s);
        if (!(v instanceof String) || !p.matches())
            throw new TopologyException(source, f + "." + key, key + ": '" + s + "' is not a percentage (e.g. 0.1%)");
        double fraction = Double.parseDouble(p.group(1)) / 100;
        if (fraction > 1) throw new TopologyException(source, f + "." + key, key + " must be 0%..100%, got " + s);
        return fraction;
    }

    private void checkSubnetsDisjoint(List<Datacenter> dcs) {
        for (int i = 0; i < dcs.size(); i++)
            for (int j = 0; j < i; j++) {
                IpPrefix a = dcs.get(i).subnet(), b = dcs.get(j).subnet();
                if (a != null && b != null && a.overlaps(b))
                    throw new TopologyException(source, "datacenters[" + i + "].subnet",
                            a + " overlaps " + b + " of datacenter '" + dcs.get(j).name() + "'");
            }
    }

    private void checkCapacity(Datacenter dc, int gatewayCount) {
        if (dc.subnet() == null) return;
        long room = dc.form() == NetworkForm.IPV4 ? (1L << dc.subnet().hostBits()) - 2 : 0xfe;
        if (dc.hosts().size() + gatewayCount > room)
            throw new TopologyException(source, "datacenters[" + dc.index() + "].hosts", dc.hosts().size() + " hosts and "
                    + gatewayCount + " gateway ports do not fit into " + dc.subnet());
    }

    private String checkName(String name, String f) {
        if (!NAME.matcher(name).matches())
            throw new TopologyException(source, f, "'" + name + "' must be [a-z][a-z0-9]* (no dashes: they separate name parts)");
        if (name.length() > MAX_NAME)
            throw new TopologyException(source, f, "name too long: '" + name + "' has " + name.length() + " characters, at most " + MAX_NAME);
        return name;
    }

    private void checkUnique(List<String> names, String f, String what) {
        Set<String> seen = new HashSet<>();
        for (String n : names)
            if (!seen.add(n)) throw new TopologyException(source, f, "duplicate " + what + " '" + n + "'");
    }

    /** The list under {@code key}; an absent optional one is empty. */
    private List<?> list(Map<?, ?> m, String key, String where, boolean required) {
        if (!required && m.get(key) == null) return List.of();
        return fields.list(m, key, where);
    }

    /** The required, non-blank single value under {@code key}. */
    private String string(Map<?, ?> m, String key, String where) {
        String s = fields.required(m, key, where);
        if (s.isBlank()) throw new TopologyException(source, field(where, key), "must be a non-empty string");
        return s;
    }
}
