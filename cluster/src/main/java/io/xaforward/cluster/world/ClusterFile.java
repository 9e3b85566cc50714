package io.xaforward.cluster.world;

import io.xaforward.cluster.TrainJobCodec;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.common.YamlFields;
import io.xaforward.common.YamlTree;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The cluster file of {@code xaf worker --cluster FILE}: the job's ranks with their addresses and each data
 * center's gateway next hop (docs/DEPLOY.md documents it). Every error names the file and the entry.
 *
 * <pre>
 * job: 1
 * datacenters:
 *   - {name: a, form: ipv4, mtu: 1500, gateway: {ip: 10.0.1.254}}
 *   - {name: b, form: id, gateway: {mac: "02:00:00:00:02:fe"}}
 * ranks:
 *   - {rank: 0, datacenter: a, ip: 10.0.1.1, interface: eth1}
 *   - {rank: 1, datacenter: b, mac: "02:00:00:00:02:01", identity: 0x00020001}
 * </pre>
 */
public final class ClusterFile {
    private final String source;
    /** The strict key and value checks, errors as "SOURCE: ENTRY: PROBLEM". */
    private final YamlFields fields = YamlFields.prefixed(this::fail);

    private ClusterFile(String source) {
        this.source = source;
    }

    public static World read(Path file) {
        return parse(text(file), file.toString());
    }

    /** The file's text; a missing or unreadable file is one clear error naming it. */
    private static String text(Path file) {
        try {
            return Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(file + ": cluster file not found");
        } catch (IOException e) {
            throw new IllegalArgumentException(file + ": cannot read: " + e.getMessage());
        }
    }

    public static World parse(String yaml, String source) {
        return new ClusterFile(source).parseText(yaml);
    }

    /**
     * The job's training settings, from the file's optional {@code training:} mapping: option name (without the
     * dashes of xaf worker's option) to its value as written, e.g. {@code training: {preset: gpt2-tiny, steps: 1000}},
     * read by the job's one codec ({@link io.xaforward.cluster.TrainJobCodec#readSection}: unknown names are refused).
     * Empty without the section. The worker checks the values, as it checks its command line.
     */
    public static Map<String, String> training(Path file) {
        return new ClusterFile(file.toString()).trainingOf(text(file));
    }

    private Map<String, String> trainingOf(String yaml) {
        Object root = YamlTree.read(yaml, this::fail);
        if (!(root instanceof Map<?, ?> top) || !top.containsKey("training")) return new LinkedHashMap<>();
        return TrainJobCodec.readSection(top.get("training"), "training", this::fail);
    }

    private record Dc(NetworkForm form, int mtu) {}

    private World parseText(String yaml) {
        Object root = YamlTree.read(yaml, this::fail);
        if (!(root instanceof Map<?, ?> top)) throw fail("expected a mapping with 'job', 'datacenters' and 'ranks'");
        fields.allowOnly(top, "top level", Set.of("job", "datacenters", "ranks", "training"));
        int job = (int) number(top, "job", "top level", null);

        Map<String, Dc> dcs = new LinkedHashMap<>();
        Map<String, NextHop> gateways = new LinkedHashMap<>();
        List<?> dcList = list(top, "datacenters", "top level");
        for (int i = 0; i < dcList.size(); i++) {
            String where = "datacenters[" + i + "]";
            Map<?, ?> d = fields.map(dcList.get(i), where);
            fields.allowOnly(d, where, Set.of("name", "form", "mtu", "gateway"));
            String name = string(d, "name", where);
            where = where + " (" + name + ")";
            if (dcs.containsKey(name)) throw fail(where + ": data center listed twice");
            NetworkForm form = form(string(d, "form", where), where);
            dcs.put(name, new Dc(form, (int) number(d, "mtu", where, 1500L)));
            if (d.containsKey("gateway")) {
                Map<?, ?> g = fields.map(d.get("gateway"), where + ".gateway");
                fields.allowOnly(g, where + ".gateway", Set.of("ip", "mac"));
                Optional<InetAddress> ip = g.containsKey("ip") ? Optional.of(ip(string(g, "ip", where), where)) : Optional.empty();
                Optional<String> mac = g.containsKey("mac") ? Optional.of(mac(string(g, "mac", where), where)) : Optional.empty();
                if (form == NetworkForm.ID ? mac.isEmpty() : ip.isEmpty()) {
                    throw fail(where + ".gateway: the " + form.configName() + " form needs " + (form == NetworkForm.ID ? "a mac" : "an ip"));
                }
                gateways.put(name, new NextHop(ip, mac));
            }
        }

        List<RankAddress> ranks = new ArrayList<>();
        List<?> rankList = list(top, "ranks", "top level");
        for (int i = 0; i < rankList.size(); i++) {
            String where = "ranks[" + i + "]";
            Map<?, ?> r = fields.map(rankList.get(i), where);
            fields.allowOnly(r, where, Set.of("rank", "datacenter", "ip", "mac", "identity", "interface"));
            int rank = (int) number(r, "rank", where, null);
            if (rank != i) throw fail(where + ": ranks must be listed in order 0, 1, 2, ...; found rank " + rank);
            String dcName = string(r, "datacenter", where);
            Dc dc = dcs.get(dcName);
            if (dc == null) throw fail(where + ": data center '" + dcName + "' is not listed under datacenters");
            Optional<InetAddress> ip = r.containsKey("ip") ? Optional.of(ip(string(r, "ip", where), where)) : Optional.empty();
            Optional<String> mac = r.containsKey("mac") ? Optional.of(mac(string(r, "mac", where), where)) : Optional.empty();
            if (dc.form() == NetworkForm.ID ? mac.isEmpty() : ip.isEmpty()) {
                throw fail(where + ": a rank in data center " + dcName + " (" + dc.form().configName() + ") needs "
                        + (dc.form() == NetworkForm.ID ? "a mac" : "an ip"));
            }
            if (ip.isPresent() && NetworkForms.of(ip.get()) != dc.form()) {
                throw fail(where + ": ip " + ip.get().getHostAddress() + " is not an " + dc.form().configName() + " address");
            }
            int identity = (int) number(r, "identity", where, 0L);
            Optional<String> iface = r.containsKey("interface") ? Optional.of(string(r, "interface", where)) : Optional.empty();
            ranks.add(new RankAddress(rank, dcName, dc.form(), dc.mtu(), ip, mac, identity, iface));
        }
        try {
            return new World(job, ranks, gateways);
        } catch (IllegalArgumentException e) {
            throw fail(e.getMessage());
        }
    }

    private IllegalArgumentException fail(String message) {
        return new IllegalArgumentException(source + ": " + message);
    }

    /** A required list with at least one entry. */
    private List<?> list(Map<?, ?> m, String key, String where) {
        List<?> l = fields.list(m, key, where);
        if (l.isEmpty()) throw fail(where + ": '" + key + "' must be a non-empty list");
        return l;
    }

    private String string(Map<?, ?> m, String key, String where) {
        return fields.required(m, key, where).trim();
    }

    /** Decimal or 0x hexadecimal, 0..2^32-1; {@code dflt} when absent, required when it is null. */
    private long number(Map<?, ?> m, String key, String where, Long dflt) {
        return fields.unsigned32(m, key, dflt, where);
    }

    private NetworkForm form(String name, String where) {
        try {
            return NetworkForm.fromName(name);
        } catch (IllegalArgumentException e) {
            throw fail(where + ": " + e.getMessage());
        }
    }

    private InetAddress ip(String text, String where) {
        if (!text.matches("[0-9a-fA-F:.]+")) throw fail(where + ": '" + text + "' is not an IP address literal");
        try {
            return InetAddress.getByName(text);
        } catch (UnknownHostException e) {
            throw fail(where + ": '" + text + "' is not an IP address");
        }
    }

    private String mac(String text, String where) {
        if (!text.matches("(?i)[0-9a-f]{2}(:[0-9a-f]{2}){5}")) throw fail(where + ": '" + text + "' is not a MAC address");
        return text.toLowerCase(Locale.ROOT);
    }

    /** Writes a world as a cluster file (the inverse of {@link #parse}). */
    public static String render(World w) {
        StringBuilder y = new StringBuilder();
        y.append("job: ").append(w.jobId()).append('\n');
        y.append("datacenters:\n");
        for (String dc : w.datacenters()) {
            RankAddress any = w.ranks().stream().filter(r -> r.datacenter().equals(dc)).findFirst().orElseThrow();
            y.append("  - name: ").append(dc).append('\n');
            y.append("    form: ").append(any.form().configName()).append('\n');
            y.append("    mtu: ").append(any.mtu()).append('\n');
            NextHop g = w.gateways().get(dc);
            if (g != null) {
                y.append("    gateway: {");
                List<String> parts = new ArrayList<>();
                g.ip().ifPresent(ip -> parts.add("ip: \"" + ip.getHostAddress() + "\""));
                g.mac().ifPresent(mac -> parts.add("mac: \"" + mac + "\""));
                y.append(String.join(", ", parts)).append("}\n");
            }
        }
        y.append("ranks:\n");
        for (RankAddress r : w.ranks()) {
            y.append("  - {rank: ").append(r.rank()).append(", datacenter: ").append(r.datacenter());
            r.ip().ifPresent(ip -> y.append(", ip: \"").append(ip.getHostAddress()).append('"'));
            r.mac().ifPresent(mac -> y.append(", mac: \"").append(mac).append('"'));
            if (r.identity() != 0) y.append(", identity: ").append(String.format("0x%08x", r.identity()));
            r.iface().ifPresent(i -> y.append(", interface: ").append(i));
            y.append("}\n");
        }
        return y.toString();
    }
}
