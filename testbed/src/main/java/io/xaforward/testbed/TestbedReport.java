package io.xaforward.testbed;

import io.xaforward.common.Json;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Renders a topology and what the kernel currently has of it as plain-text tables (for {@code xaf topo show}). */
final class TestbedReport {
    private final Topology topology;
    private final Layout layout;

    TestbedReport(Topology topology) {
        this.topology = topology;
        this.layout = Layout.of(topology);
    }

    String render() {
        StringBuilder sb = new StringBuilder();
        sb.append("Topology ").append(topology.name()).append(" (prefix ").append(topology.prefix())
                .append(", from ").append(topology.source()).append(")\n\n");
        List<List<String>> dcs = new ArrayList<>();
        dcs.add(List.of("DC", "FORM", "MTU", "SUBNET", "HOSTS", "GATEWAYS", "SEGMENT"));
        for (Datacenter dc : topology.datacenters()) {
            boolean bridged = layout.bridges().stream().anyMatch(b -> b.datacenter().equals(dc.name()));
            dcs.add(List.of(dc.name(), dc.form().configName(), Integer.toString(dc.mtu()),
                    dc.subnet() == null ? "-" : dc.subnet().toString(), String.join(",", dc.hosts()),
                    String.join(",", topology.gatewaysOf(dc.name()).stream().map(GatewaySpec::name).toList()),
                    bridged ? "bridge " + dc.name() : "direct veth"));
        }
        table(sb, dcs);
        sb.append('\n');

        Map<String, Map<String, Map<String, Object>>> live = new HashMap<>();
        for (String ns : layout.namespaces()) live.put(ns, Netns.exists(ns) ? links(ns) : null);
        List<List<String>> nodes = new ArrayList<>();
        nodes.add(List.of("NODE", "DC", "NAMESPACE", "NS", "IFACE", "IFINDEX", "LINK", "MAC", "ADDRESS", "IDENTITY", "RATE"));
        for (Node n : concatNodes()) {
            Map<String, Map<String, Object>> nsLinks = live.get(n.namespace());
            Map<String, Object> link = nsLinks == null ? null : nsLinks.get(n.iface());
            String kind = n.kind() == Node.Kind.HOST ? "host " : "gw ";
            nodes.add(List.of(kind + n.name(), n.datacenter(), n.namespace(), nsLinks == null ? "missing" : "present",
                    n.iface(), link == null ? "-" : String.valueOf(link.get("ifindex")),
                    link == null ? "absent" : linkState(link), link == null ? n.mac() : String.valueOf(link.get("address")),
                    link == null ? "-" : addresses(link), String.format("0x%08x", n.identity()), rate(n, nsLinks != null)));
        }
        table(sb, nodes);
        layout.wan().ifPresent(w -> {
            boolean up = live.get(w.namespace()) != null;
            sb.append('\n').append("WAN between gateway ").append(w.link().gateway()).append(" and DC ").append(w.link().datacenter())
                    .append(": namespace ").append(w.namespace()).append(", ").append(w.link().rate()).append(" per direction (HTB on ")
                    .append(w.dcSide()).append(" towards the DC, on ").append(w.gatewaySide()).append(" towards the gateway), queue ")
                    .append(w.link().queuePackets()).append(" packets, MTU ").append(w.link().mtu()).append(", ").append(impairment(w)).append(up ? "" : " (not up)").append('\n');
        });
        long present = layout.namespaces().stream().filter(ns -> live.get(ns) != null).count();
        sb.append('\n').append(present).append(" of ").append(layout.namespaces().size()).append(" namespaces present\n");
        return sb.toString();
    }

    /** The WAN's delay, jitter, loss and reordering as the file gave them, and the delay line's pid when it runs. */
    private static String impairment(Layout.WanSegment w) {
        WanImpairment i = w.link().impairment();
        if (!i.any()) return "no added delay (bridge)";
        StringBuilder sb = new StringBuilder("delay line: ");
        sb.append(String.format(java.util.Locale.ROOT, "delay %.3f ms", i.delayNanos() / 1e6));
        if (i.jitterNanos() > 0) sb.append(String.format(java.util.Locale.ROOT, " ± %.3f ms (uniform)", i.jitterNanos() / 1e6));
        if (i.loss() > 0) sb.append(String.format(java.util.Locale.ROOT, ", loss %s%%", percent(i.loss())));
        if (i.burst() != null)
            sb.append(String.format(java.util.Locale.ROOT, ", burst loss p %s%% r %s%% h %s%% k %s%% (mean %s%%)", percent(i.burst().p()),
                    percent(i.burst().r()), percent(i.burst().h()), percent(i.burst().k()), percent(i.burst().meanLoss())));
        if (i.reorder() > 0) sb.append(String.format(java.util.Locale.ROOT, ", reorder %s%%", percent(i.reorder())));
        java.util.OptionalLong pid = io.xaforward.testbed.wan.DelayLineProcess.pid(w.namespace());
        sb.append(pid.isPresent() ? ", pid " + pid.getAsLong() : ", not running");
        return sb.toString();
    }

    private static String percent(double fraction) {
        return new java.math.BigDecimal(fraction * 100).round(new java.math.MathContext(4)).stripTrailingZeros().toPlainString();
    }

    private List<Node> concatNodes() {
        List<Node> all = new ArrayList<>(layout.hosts());
        all.addAll(layout.gatewayPorts());
        return all;
    }

    private static Map<String, Map<String, Object>> links(String ns) {
        Map<String, Map<String, Object>> byName = new HashMap<>();
        for (Map<String, Object> l : Testbed.ipJson(ns, "addr", "show")) byName.put((String) l.get("ifname"), l);
        return byName;
    }

    private static String linkState(Map<String, Object> link) {
        Object flags = link.get("flags");
        if (flags instanceof List<?> f && f.contains("LOWER_UP")) return "up";
        if (flags instanceof List<?> f && f.contains("UP")) return "no-carrier";
        return "down";
    }

    private static String addresses(Map<String, Object> link) {
        List<String> out = new ArrayList<>();
        if (link.get("addr_info") instanceof List<?> infos)
            for (Object o : infos)
                if (o instanceof Map<?, ?> a && !"link".equals(a.get("scope"))) out.add(a.get("local") + "/" + a.get("prefixlen"));
        return out.isEmpty() ? "-" : String.join(",", out);
    }

    private String rate(Node n, boolean nsPresent) {
        String gw = n.kind() == Node.Kind.GATEWAY_PORT ? n.name() : null;
        var limit = topology.links().stream()
                .filter(k -> k.datacenter().equals(n.datacenter()) && (gw == null
                        ? n.peerNamespace().equals(layout.gatewayNamespace(k.gateway())) : k.gateway().equals(gw)))
                .findFirst();
        if (limit.isEmpty()) return "-";
        String configured = limit.get().rate() + " " + limit.get().qdisc().configName();
        if (!nsPresent) return configured + " (not applied)";
        var r = Netns.tryExec(null, Duration.ofSeconds(10), null, List.of("tc", "-n", n.namespace(), "-j", "qdisc", "show", "dev", n.iface()));
        if (!r.ok()) return configured + " (no device)";
        String liveKind = Json.readObjects(r.stdout()).stream().filter(q -> "root".equals(q.get("root")) || Boolean.TRUE.equals(q.get("root")))
                .map(q -> String.valueOf(q.get("kind"))).findFirst().orElse("none");
        return configured + (liveKind.equals(limit.get().qdisc().configName()) ? " (active)" : " (live: " + liveKind + ")");
    }

    private static void table(StringBuilder sb, List<List<String>> rows) {
        int[] widths = new int[rows.get(0).size()];
        for (List<String> r : rows) for (int i = 0; i < r.size(); i++) widths[i] = Math.max(widths[i], r.get(i).length());
        for (List<String> r : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < r.size(); i++) {
                line.append(r.get(i));
                if (i < r.size() - 1) line.append(" ".repeat(widths[i] - r.get(i).length() + 2));
            }
            sb.append(line.toString().stripTrailing()).append('\n');
        }
    }
}
