package io.xaforward.testbed;

import io.xaforward.common.Json;

import io.xaforward.protocol.NetworkForm;
import io.xaforward.testbed.wan.DelayLineProcess;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.Inet6Address;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

/**
 * Builds emulated data centers on one machine: a network namespace per host and gateway, veth pairs (and a bridge
 * namespace for multi-host DCs) as L2 segments, deterministic MACs and addresses, permanent neighbours, routes via
 * the gateways, the edge firewall of {@link GatewayFirewall} in every gateway namespace, offloads set for XDP, and tc
 * rate limits. {@link #up} is idempotent; {@link #down} removes what up
 * made, using the state file and, after a crash, every namespace named {@code <prefix>-*}.
 */
public final class Testbed {
    /** Default directory of state files ({@code <prefix>.json}). */
    public static final Path DEFAULT_STATE_DIR = Path.of("/run/xaforward");
    private static final String XDP_PASS_RESOURCE = "/bpf/xdp_pass.bpf.o";
    private static final Duration TIMEOUT = Netns.DEFAULT_TIMEOUT;

    private final Path stateDir;

    public Testbed() {
        this(DEFAULT_STATE_DIR);
    }

    public Testbed(Path stateDir) {
        this.stateDir = stateDir;
    }

    /** Where the state file of a prefix lives. */
    public Path stateFile(String prefix) {
        return stateDir.resolve(prefix + ".json");
    }

    // ---------------------------------------------------------------------------------------------- up

    /** Creates (or completes) the testbed of a topology; returns its live state. Safe to call again. */
    public TestbedState up(Topology t) {
        requireRoot("up");
        Layout l = Layout.of(t);
        writeState(l, false, readXdp(t.prefix())); // written first: a crash mid-up still leaves a record

        Set<String> idNamespaces = new LinkedHashSet<>();
        for (Node h : l.hosts()) if (h.form() == NetworkForm.ID) idNamespaces.add(h.namespace());
        Set<String> switchNamespaces = new LinkedHashSet<>();
        for (Layout.Bridge b : l.bridges()) switchNamespaces.add(b.namespace());
        l.wan().ifPresent(w -> switchNamespaces.add(w.namespace()));
        for (String ns : l.namespaces()) {
            Netns.add(ns);
            if (idNamespaces.contains(ns) || switchNamespaces.contains(ns))
                sysctl(ns, "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1");
            if (switchNamespaces.contains(ns)) bridgeNetfilterOff(ns);
        }

        Map<String, Set<String>> existing = new HashMap<>();
        for (String ns : l.namespaces()) existing.put(ns, linkNames(ns));
        for (Layout.VethPair v : l.veths()) createVeth(v, existing);
        for (Layout.Bridge b : l.bridges())
            if (!existing.get(b.namespace()).contains(b.name()))
                Netns.exec(null, "ip", "-n", b.namespace(), "link", "add", "name", b.name(), "type", "bridge");
        Optional<Layout.WanSegment> wan = l.wan();
        // With delay, jitter, loss or reordering the delay line joins the WAN's ports instead of the bridge.
        boolean delayLine = wan.isPresent() && wan.get().link().impairment().any();
        if (wan.isPresent() && !delayLine && !existing.get(wan.get().namespace()).contains(Layout.WAN_BRIDGE)) {
            DelayLineProcess.stop(wan.get().namespace()); // a topology that had a delay line before
            Netns.exec(null, "ip", "-n", wan.get().namespace(), "link", "add", "name", Layout.WAN_BRIDGE, "type", "bridge");
        }
        if (delayLine && existing.get(wan.get().namespace()).contains(Layout.WAN_BRIDGE))
            Netns.exec(null, "ip", "-n", wan.get().namespace(), "link", "del", "dev", Layout.WAN_BRIDGE);

        Map<String, List<String>> batch = new LinkedHashMap<>();
        Map<String, List<String>> ethtool = new LinkedHashMap<>();
        for (Layout.VethPair v : l.veths()) {
            configureEnd(batch, ethtool, v.nsA(), v.devA(), v.macA(), v.mtu());
            configureEnd(batch, ethtool, v.nsB(), v.devB(), v.macB(), v.mtu());
        }
        for (Layout.Bridge b : l.bridges()) {
            add(batch, b.namespace(), "link set dev " + b.name() + " type bridge stp_state 0 forward_delay 0" + BRIDGE_NF_OFF);
            add(batch, b.namespace(), "link set dev " + b.name() + " up");
            for (String port : b.ports()) add(batch, b.namespace(), "link set dev " + port + " master " + b.name());
        }
        if (delayLine) wan.ifPresent(w -> {
            // A packet socket cannot send a GRO super-frame back out (it exceeds the MTU): keep WAN frames MTU-sized.
            // The devices that feed these ports already have TSO and tx checksum (so UDP GSO) off, segmenting there.
            add(ethtool, w.namespace(), "ethtool -K " + w.gatewaySide() + " gro off >/dev/null");
            add(ethtool, w.namespace(), "ethtool -K " + w.dcSide() + " gro off >/dev/null");
        });
        if (!delayLine) wan.ifPresent(w -> {
            add(batch, w.namespace(), "link set dev " + Layout.WAN_BRIDGE + " type bridge stp_state 0 forward_delay 0" + BRIDGE_NF_OFF);
            add(batch, w.namespace(), "link set dev " + Layout.WAN_BRIDGE + " up");
            add(batch, w.namespace(), "link set dev " + w.gatewaySide() + " master " + Layout.WAN_BRIDGE);
            add(batch, w.namespace(), "link set dev " + w.dcSide() + " master " + Layout.WAN_BRIDGE);
        });
        for (Node n : concat(l.hosts(), l.gatewayPorts())) {
            if (n.ip() != null)
                add(batch, n.namespace(), "addr replace " + n.ipText() + "/" + n.prefixLength() + " dev " + n.iface()
                        + (n.ip() instanceof Inet6Address ? " nodad" : ""));
        }
        addNeighbours(l, batch);
        addRoutes(t, l, batch);
        for (Map.Entry<String, List<String>> e : batch.entrySet())
            Netns.exec(null, TIMEOUT, String.join("\n", e.getValue()) + "\n", List.of("ip", "-n", e.getKey(), "-b", "-"));
        for (Map.Entry<String, List<String>> e : ethtool.entrySet())
            Netns.exec(e.getKey(), TIMEOUT, null, List.of("sh", "-c", "set -e; " + String.join("; ", e.getValue())));

        for (GatewaySpec g : t.gateways()) {
            List<String> settings = new ArrayList<>(List.of("net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"));
            for (Node p : l.gatewayPorts())
                if (p.name().equals(g.name()) && p.form() == NetworkForm.ID)
                    settings.add("net.ipv6.conf." + p.iface() + ".disable_ipv6=1");
            sysctl(l.gatewayNamespace(g.name()), settings.toArray(String[]::new));
            // Forwarding is on, so the edge goes up with it: whatever later runs here forwards only what it allows.
            List<Node> ports = l.gatewayPorts().stream().filter(p -> p.name().equals(g.name())).toList();
            GatewayFirewall.install(l.gatewayNamespace(g.name()), ports);
        }
        for (LinkLimit limit : t.links()) applyLimit(l, limit);
        wan.ifPresent(w -> {
            // Each direction is shaped on the egress of the WAN port it leaves by: towards the DC on dcSide, towards
            // the gateway on gatewaySide. Both see ordinary skbs, forwarded by this namespace's bridge or sent by its
            // delay line (a packet socket's sends pass the qdisc).
            shapeWan(w.namespace(), w.dcSide(), w.link(), w.link().mtu());
            shapeWan(w.namespace(), w.gatewaySide(), w.link(), w.link().mtu());
            if (delayLine) DelayLineProcess.ensure(w.namespace(), w.gatewaySide(), w.dcSide(), w.link(), stateDir);
        });

        writeState(l, true, readXdp(t.prefix()));
        return state(t);
    }

    private static void createVeth(Layout.VethPair v, Map<String, Set<String>> existing) {
        boolean haveA = existing.get(v.nsA()).contains(v.devA());
        boolean haveB = existing.get(v.nsB()).contains(v.devB());
        if (haveA && haveB) return;
        // A half pair cannot exist for veth, but a stale same-named device of another kind could: clear it.
        if (haveA) Netns.exec(null, "ip", "-n", v.nsA(), "link", "del", "dev", v.devA());
        if (haveB) Netns.exec(null, "ip", "-n", v.nsB(), "link", "del", "dev", v.devB());
        Netns.exec(null, "ip", "-n", v.nsA(), "link", "add", v.devA(), "type", "veth", "peer", "name", v.devB(), "netns", v.nsB());
    }

    private static void configureEnd(Map<String, List<String>> batch, Map<String, List<String>> ethtool,
                                     String ns, String dev, String mac, int mtu) {
        add(batch, ns, "link set dev " + dev + " address " + mac + " mtu " + mtu + " up");
        // tx checksum offload off: XDP_REDIRECT would forward partial checksums; TSO off, GRO on (veth NAPI mode).
        add(ethtool, ns, "ethtool -K " + dev + " tx off tso off gro on >/dev/null");
    }

    private static void addNeighbours(Layout l, Map<String, List<String>> batch) {
        List<Node> all = concat(l.hosts(), l.gatewayPorts());
        for (Node from : all) {
            if (from.ip() == null) continue;
            for (Node to : all) {
                if (to == from || to.ip() == null || !to.datacenter().equals(from.datacenter())) continue;
                if (from.kind() == Node.Kind.GATEWAY_PORT && to.kind() == Node.Kind.GATEWAY_PORT && from.name().equals(to.name()))
                    continue;
                add(batch, from.namespace(), "neigh replace " + to.ipText() + " lladdr " + to.mac() + " dev "
                        + from.iface() + " nud permanent");
            }
        }
    }

    /** Each host routes every other same-form DC's subnet via the first gateway that joins both DCs. */
    private static void addRoutes(Topology t, Layout l, Map<String, List<String>> batch) {
        for (Node h : l.hosts()) {
            if (h.ip() == null) continue;
            for (Datacenter other : t.datacenters()) {
                if (other.name().equals(h.datacenter()) || other.form() != h.form() || other.subnet() == null) continue;
                Optional<GatewaySpec> via = t.gatewaysOf(h.datacenter()).stream()
                        .filter(g -> g.joins().contains(other.name())).findFirst();
                if (via.isEmpty()) continue;
                Node port = l.gatewayPorts().stream()
                        .filter(p -> p.name().equals(via.get().name()) && p.datacenter().equals(h.datacenter()))
                        .findFirst().orElseThrow();
                add(batch, h.namespace(), "route replace " + other.subnet() + " via " + port.ipText() + " dev " + h.iface());
            }
        }
    }

    private static void applyLimit(Layout l, LinkLimit limit) {
        Node port = l.gatewayPorts().stream()
                .filter(p -> p.name().equals(limit.gateway()) && p.datacenter().equals(limit.datacenter()))
                .findFirst().orElseThrow();
        shape(port.namespace(), port.iface(), limit, port.mtu());
        shape(port.peerNamespace(), port.peerIface(), limit, port.mtu());
    }

    private static void shape(String ns, String dev, LinkLimit limit, int mtu) {
        String rate = limit.bitsPerSecond() + "bit";
        // Burst: 4 ms worth of bytes at the rate, but at least two full frames.
        long burst = Math.max(limit.bitsPerSecond() / 8 / 250, 2L * (mtu + 14));
        switch (limit.qdisc()) {
            case HTB -> {
                // HTB cannot "change" itself: replace only when the root is not already our HTB (keeps up idempotent).
                if (!rootQdisc(ns, dev).equals("htb 1:"))
                    Netns.exec(null, "tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1");
                Netns.exec(null, "tc", "-n", ns, "class", "replace", "dev", dev, "parent", "1:", "classid", "1:1",
                        "htb", "rate", rate, "ceil", rate, "burst", Long.toString(burst), "cburst", Long.toString(burst));
            }
            case TBF -> Netns.exec(null, "tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate,
                    "burst", Long.toString(burst), "latency", "50ms");
        }
    }

    /** HTB at the WAN rate with a pfifo of the WAN's queue length under it; idempotent like {@link #shape}. */
    private static void shapeWan(String ns, String dev, WanLink wan, int mtu) {
        String rate = wan.bitsPerSecond() + "bit";
        long burst = Math.max(wan.bitsPerSecond() / 8 / 250, 2L * (mtu + 14));
        if (!rootQdisc(ns, dev).equals("htb 1:"))
            Netns.exec(null, "tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1");
        Netns.exec(null, "tc", "-n", ns, "class", "replace", "dev", dev, "parent", "1:", "classid", "1:1",
                "htb", "rate", rate, "ceil", rate, "burst", Long.toString(burst), "cburst", Long.toString(burst));
        Netns.exec(null, "tc", "-n", ns, "qdisc", "replace", "dev", dev, "parent", "1:1", "handle", "10:",
                "pfifo", "limit", Integer.toString(wan.queuePackets()));
    }

    /** "KIND HANDLE" of the root qdisc of a device, e.g. "htb 1:" or "noqueue 0:". */
    private static String rootQdisc(String ns, String dev) {
        String out = Netns.exec(null, "tc", "-n", ns, "-j", "qdisc", "show", "dev", dev, "root").stdout();
        return Json.readObjects(out).stream().findFirst().map(q -> q.get("kind") + " " + q.get("handle")).orElse("none");
    }

    /**
     * The per-bridge switches of bridge netfilter, off (as a bridge is created; said explicitly so that the intent is
     * in the testbed, not in a kernel default).
     */
    private static final String BRIDGE_NF_OFF = " nf_call_iptables 0 nf_call_ip6tables 0 nf_call_arptables 0";

    /**
     * Keeps an emulated switch a switch: with br_netfilter loaded (Docker and Kubernetes load it), the kernel hands
     * every bridged frame to iptables, ip6tables and arptables ({@code br_nf_pre_routing}, {@code br_nf_forward_ip},
     * ...), work that no Ethernet switch does and that would be charged to the emulated network. The per-bridge
     * {@code nf_call_*} options cannot turn it off alone: the kernel calls the hooks when either the bridge's option
     * or its namespace's {@code net.bridge.bridge-nf-call-*} sysctl is on, and every new namespace starts with the
     * sysctls on. So the switch namespaces (bridges and WAN segments, which run no firewall) get the sysctls off;
     * they are per namespace, the host's own bridges are untouched. Without br_netfilter the sysctls do not exist
     * and bridged frames never meet netfilter: nothing to do. No mode filters bridged traffic in these namespaces
     * (docs/TOPOLOGY.md, "Bridge netfilter").
     */
    private static void bridgeNetfilterOff(String ns) {
        Netns.exec(ns, TIMEOUT, null, List.of("sh", "-c", "if [ -d /proc/sys/net/bridge ]; then sysctl -q -w"
                + " net.bridge.bridge-nf-call-iptables=0 net.bridge.bridge-nf-call-ip6tables=0"
                + " net.bridge.bridge-nf-call-arptables=0; fi"));
    }

    private static void sysctl(String ns, String... settings) {
        List<String> cmd = new ArrayList<>(List.of("sysctl", "-q", "-w"));
        cmd.addAll(List.of(settings));
        Netns.exec(ns, TIMEOUT, null, cmd);
    }

    // ---------------------------------------------------------------------------------------------- XDP

    /**
     * Attaches the XDP_PASS program (native mode) to the veth peer of every gateway port, so that XDP_REDIRECT out
     * of a gateway port delivers. Idempotent; {@link #down} removes it.
     */
    public void attachXdpPass(TestbedState state) {
        requireRoot("attachXdpPass");
        for (Node port : state.gatewayPorts()) attachXdpPass(state.topology().prefix(), port.peerNamespace(), port.peerIface());
    }

    /** Attaches XDP_PASS to one device; recorded in the state file of {@code prefix}. */
    public void attachXdpPass(String prefix, String ns, String dev) {
        Path obj = xdpPassObject();
        try {
            Netns.exec(null, "ip", "-force", "-n", ns, "link", "set", "dev", dev, "xdpdrv", "object", obj.toString(), "section", "xdp.frags");
        } finally {
            try {
                Files.deleteIfExists(obj);
            } catch (IOException ignored) {
                // a leftover temp file is harmless
            }
        }
        List<Map<String, Object>> xdp = new ArrayList<>(readXdp(prefix));
        Map<String, Object> entry = Map.of("ns", ns, "dev", dev);
        if (!xdp.contains(entry)) xdp.add(entry);
        updateXdp(prefix, xdp);
    }

    /** Removes any XDP program from a device (no error if there is none). */
    public void detachXdp(String prefix, String ns, String dev) {
        Netns.exec(null, "ip", "-n", ns, "link", "set", "dev", dev, "xdpdrv", "off");
        List<Map<String, Object>> xdp = new ArrayList<>(readXdp(prefix));
        xdp.remove(Map.of("ns", ns, "dev", dev));
        updateXdp(prefix, xdp);
    }

    private static Path xdpPassObject() {
        try (InputStream in = Testbed.class.getResourceAsStream(XDP_PASS_RESOURCE)) {
            if (in == null)
                throw new IllegalStateException("bpf/xdp_pass.bpf.o is not on the class path: build the dataplane module (needs clang)");
            Path tmp = Files.createTempFile("xdp_pass", ".bpf.o");
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            return tmp;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot extract " + XDP_PASS_RESOURCE, e);
        }
    }

    // ---------------------------------------------------------------------------------------------- down

    /** Removes the testbed of a topology. */
    public void down(Topology t) {
        down(t.prefix());
    }

    /**
     * Removes what {@link #up} made for this prefix, as its state file lists it: detaches the recorded XDP programs,
     * deletes the recorded namespaces, then the state file. Namespaces that merely share the prefix are not touched
     * (another testbed's, or someone else's); {@code up} writes the state file before creating anything, so a
     * crash mid-up is still covered. Without a state file there is nothing to remove.
     */
    public void down(String prefix) {
        requireRoot("down");
        TopologyParser.checkPrefix(prefix, "down", "prefix");
        Map<String, Object> state = readState(prefix);
        List<String> namespaces = new ArrayList<>();
        if (state != null) {
            for (Map<String, Object> x : readXdp(prefix))
                Netns.tryExec(null, TIMEOUT, null, List.of("ip", "-n", (String) x.get("ns"), "link", "set", "dev",
                        (String) x.get("dev"), "xdpdrv", "off"));
            if (state.get("namespaces") instanceof List<?> l) for (Object o : l) namespaces.add((String) o);
        }
        for (String ns : namespaces) {
            DelayLineProcess.stop(ns); // before its ports go; there is none outside WAN namespaces
            DelayLineProcess.removeFiles(stateDir, ns);
        }
        for (String ns : namespaces) Netns.delete(ns);
        try {
            Files.deleteIfExists(stateFile(prefix));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + stateFile(prefix), e);
        }
    }

    // ---------------------------------------------------------------------------------------------- state

    /**
     * The pid of the WAN's delay line, when the topology's WAN has one and it runs: to place it on a CPU or count its
     * CPU time apart, as for the gateway processes.
     */
    public OptionalLong delayLinePid(Topology t) {
        Optional<Layout.WanSegment> wan = Layout.of(t).wan();
        return wan.isPresent() ? DelayLineProcess.pid(wan.get().namespace()) : OptionalLong.empty();
    }

    /**
     * The delay line's counters per direction ({@code to-dc.received}, {@code to-gateway.lost}, ...: received,
     * forwarded, lost, reordered, ring_full, oversize, queue_drops, send_errors, socket_drops), as it last wrote
     * them (every second, and when it stops); empty without a delay line.
     */
    public Map<String, Long> delayLineCounters(Topology t) {
        Optional<Layout.WanSegment> wan = Layout.of(t).wan();
        return wan.isPresent() ? DelayLineProcess.counters(stateDir, wan.get().namespace()) : Map.of();
    }

    /** The live state: the planned nodes with their current ifindexes; fails if a namespace or device is missing. */
    public TestbedState state(Topology t) {
        Layout l = Layout.of(t);
        Map<String, Map<String, Integer>> ifindexes = new HashMap<>();
        for (String ns : l.namespaces()) {
            if (!Netns.exists(ns)) throw new NetnsException("testbed '" + t.prefix() + "' is not up: namespace " + ns + " is missing");
            Map<String, Integer> byName = new HashMap<>();
            for (Map<String, Object> link : ipJson(ns, "link", "show"))
                byName.put((String) link.get("ifname"), ((Number) link.get("ifindex")).intValue());
            ifindexes.put(ns, byName);
        }
        return new TestbedState(t, withIfindexes(l.hosts(), ifindexes), withIfindexes(l.gatewayPorts(), ifindexes));
    }

    private static List<Node> withIfindexes(List<Node> nodes, Map<String, Map<String, Integer>> ifindexes) {
        List<Node> out = new ArrayList<>();
        for (Node n : nodes) {
            Integer idx = ifindexes.get(n.namespace()).get(n.iface());
            if (idx == null) throw new NetnsException("interface " + n.iface() + " missing in namespace " + n.namespace());
            out.add(n.withIfindex(idx));
        }
        return out;
    }

    /** The topology and the live state (namespaces, link state, addresses, qdiscs) as a readable table. */
    public String show(Topology t) {
        return new TestbedReport(t).render();
    }

    static List<Map<String, Object>> ipJson(String ns, String... args) {
        List<String> cmd = new ArrayList<>(List.of("ip", "-n", ns, "-j"));
        cmd.addAll(List.of(args));
        return Json.readObjects(Netns.exec(null, TIMEOUT, null, cmd).stdout());
    }

    private static Set<String> linkNames(String ns) {
        Set<String> names = new LinkedHashSet<>();
        for (Map<String, Object> link : ipJson(ns, "link", "show")) names.add((String) link.get("ifname"));
        return names;
    }

    private void writeState(Layout l, boolean complete, List<Map<String, Object>> xdp) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("prefix", l.topology().prefix());
        s.put("topology", l.topology().name());
        s.put("source", l.topology().source());
        s.put("complete", complete);
        s.put("updated", Instant.now().toString());
        s.put("namespaces", l.namespaces());
        List<Object> veths = new ArrayList<>();
        for (Layout.VethPair v : l.veths())
            veths.add(Map.of("ns", v.nsA(), "dev", v.devA(), "peer_ns", v.nsB(), "peer_dev", v.devB()));
        s.put("veths", veths);
        List<Object> bridges = new ArrayList<>();
        for (Layout.Bridge b : l.bridges()) bridges.add(Map.of("ns", b.namespace(), "name", b.name()));
        s.put("bridges", bridges);
        List<Object> limits = new ArrayList<>();
        for (LinkLimit k : l.topology().links())
            limits.add(Map.of("gateway", k.gateway(), "dc", k.datacenter(), "rate", k.rate(), "qdisc", k.qdisc().configName()));
        s.put("limits", limits);
        s.put("xdp", xdp);
        writeAtomically(stateFile(l.topology().prefix()), Json.pretty(s));
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> readState(String prefix) {
        Path f = stateFile(prefix);
        if (!Files.exists(f)) return null;
        try {
            return (Map<String, Object>) Json.readPlain(Files.readString(f));
        } catch (IOException | RuntimeException e) {
            return null; // a damaged state file: down still removes everything by prefix
        }
    }

    @SuppressWarnings("unchecked")
    private List<Map<String, Object>> readXdp(String prefix) {
        Map<String, Object> s = readState(prefix);
        if (s == null || !(s.get("xdp") instanceof List<?> l)) return List.of();
        return (List<Map<String, Object>>) l;
    }

    private void updateXdp(String prefix, List<Map<String, Object>> xdp) {
        Map<String, Object> s = readState(prefix);
        if (s == null) s = new LinkedHashMap<>(Map.of("prefix", prefix, "namespaces", List.of()));
        s.put("xdp", xdp);
        writeAtomically(stateFile(prefix), Json.pretty(s));
    }

    private static void writeAtomically(Path file, String text) {
        try {
            Files.createDirectories(file.getParent());
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            Files.writeString(tmp, text);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    private static void requireRoot(String op) {
        if (!Netns.isRoot()) throw new IllegalStateException("testbed " + op + " needs root (network namespaces)");
    }

    private static void add(Map<String, List<String>> m, String ns, String line) {
        m.computeIfAbsent(ns, k -> new ArrayList<>()).add(line);
    }

    private static List<Node> concat(List<Node> a, List<Node> b) {
        List<Node> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }
}
