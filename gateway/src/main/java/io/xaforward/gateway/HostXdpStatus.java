package io.xaforward.gateway;

import io.xaforward.dataplane.Counter;
import io.xaforward.dataplane.CounterSnapshot;
import io.xaforward.dataplane.GatewayPins;
import io.xaforward.dataplane.KernelObjects;
import io.xaforward.dataplane.XafDataplane;
import io.xaforward.dataplane.XdpAttachment;
import io.xaforward.dataplane.XdpDispatcher;
import io.xaforward.dataplane.sys.NetworkNamespace;
import io.xaforward.dataplane.sys.Syscalls;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * What {@code xaf gateway status} without {@code --config} shows, as {@code xdp-loader status} does for one namespace:
 * every XAForward XDP program attached on the host. It looks at every interface of the current network namespace and
 * of every named one ({@code ip netns add}, under /var/run/netns; entering them needs root), asks the kernel which XDP
 * program each runs (bpf_xdp_query, native and generic), and keeps the programs that XAForward builds, with their
 * XDP link and the gateway name a link is pinned under. Then, per gateway program, its route count and counters.
 */
public final class HostXdpStatus {
    /** XDP programs XAForward builds, by program name -> what runs them. */
    static final Map<String, String> ROLES = Map.of(
            XafDataplane.PROGRAM, "xaf gateway",
            "xsk_all", "AF_XDP gateway",
            "xdp_pass", "testbed XDP_PASS (peer of a gateway port)",
            "xaf_sink", "benchmark sink",
            "xaf_trafficgen", "benchmark traffic generator",
            "xaf_redirect_ref", "benchmark bare-XDP reference");

    /** One interface with an XAForward program attached. */
    public record Attached(String namespace, String iface, int ifindex, String mode, String program, int programId, int linkId, String pinnedAs) {}

    private final List<Attached> attached;
    private final List<String> searched;
    private final List<String> skipped;
    private final int otherPrograms;

    private HostXdpStatus(List<Attached> attached, List<String> searched, List<String> skipped, int otherPrograms) {
        this.attached = attached;
        this.searched = searched;
        this.skipped = skipped;
        this.otherPrograms = otherPrograms;
    }

    public List<Attached> attached() { return attached; }

    /** Scans this namespace and every named one. */
    public static HostXdpStatus scan() {
        List<KernelObjects.LinkInfo> links = KernelObjects.xdpLinks();
        Map<Integer, String> pinned = GatewayPins.pinnedLinkIds();
        Map<Integer, String> programNames = new HashMap<>();
        List<Attached> out = new ArrayList<>();
        List<String> searched = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        int[] others = {0};

        String here = "(current)";
        Object hereInode = inode(Path.of("/proc/thread-self/ns/net"));
        Map<String, Path> named = new LinkedHashMap<>();
        Path dir = NetworkNamespace.path("x").getParent();
        if (Files.isDirectory(dir)) {
            try (Stream<Path> s = Files.list(dir)) {
                s.sorted().forEach(p -> named.put(p.getFileName().toString(), p));
            } catch (IOException e) {
                skipped.add(dir + " (" + e.getMessage() + ")");
            }
        }
        for (Map.Entry<String, Path> e : named.entrySet()) {
            if (hereInode != null && hereInode.equals(inode(e.getValue()))) here = e.getKey(); // the one we run in
        }
        searched.add(here);
        out.addAll(scanNamespace(here, links, pinned, programNames, others));
        for (String ns : named.keySet()) {
            if (ns.equals(here)) continue;
            try {
                out.addAll(NetworkNamespace.call(ns, () -> scanNamespace(ns, links, pinned, programNames, others)));
                searched.add(ns);
            } catch (RuntimeException ex) {
                skipped.add(ns + " (" + ex.getMessage() + ")");
            }
        }
        return new HostXdpStatus(List.copyOf(out), List.copyOf(searched), List.copyOf(skipped), others[0]);
    }

    private static Object inode(Path p) {
        try {
            return Files.getAttribute(p, "unix:ino");
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** The interfaces of the calling thread's namespace that run an XAForward program. */
    private static List<Attached> scanNamespace(String ns, List<KernelObjects.LinkInfo> links, Map<Integer, String> pinned,
                                                Map<Integer, String> programNames, int[] others) {
        List<Attached> out = new ArrayList<>();
        for (Map.Entry<Integer, String> iface : Syscalls.interfaces().entrySet()) {
            int ifindex = iface.getKey();
            for (XdpAttachment.Mode mode : XdpAttachment.Mode.values()) {
                int prog;
                try {
                    prog = XdpAttachment.attachedProgramId(ifindex, mode);
                } catch (RuntimeException e) {
                    continue; // the interface went away meanwhile
                }
                if (prog == 0) continue;
                String label = mode.label();
                int gateway = XdpDispatcher.gatewayBehind(ifindex, prog);
                if (gateway != prog) { // libxdp's dispatcher: what counts is the gateway it runs, if any
                    if (gateway == 0) {
                        synchronized (others) { others[0]++; }
                        continue;
                    }
                    prog = gateway;
                    label += ", dispatcher";
                }
                String name;
                synchronized (programNames) {
                    name = programNames.computeIfAbsent(prog, HostXdpStatus::programName);
                }
                if (!ROLES.containsKey(name)) {
                    synchronized (others) { others[0]++; }
                    continue;
                }
                int linkId = 0;
                for (KernelObjects.LinkInfo l : links) {
                    if (l.xdpIfindex() == ifindex && l.programId() == prog) linkId = l.id();
                }
                out.add(new Attached(ns, iface.getValue(), ifindex, label, name, prog, linkId, pinned.get(linkId)));
            }
        }
        return out;
    }

    private static String programName(int id) {
        try {
            int fd = KernelObjects.programFdById(id);
            try {
                return KernelObjects.program(fd).name();
            } finally {
                KernelObjects.close(fd);
            }
        } catch (RuntimeException e) {
            return "?";
        }
    }

    /** The listing as aligned text. */
    public String text() {
        StringBuilder b = new StringBuilder();
        if (attached.isEmpty()) {
            b.append("no XAForward XDP program is attached in ").append(searched.size() == 1 ? "this network namespace" : "any of the "
                    + searched.size() + " network namespaces searched").append('\n');
        } else {
            GatewayInspector.Table t = new GatewayInspector.Table("NAMESPACE", "INTERFACE", "IFINDEX", "MODE", "PROGRAM", "PROG-ID", "XDP-LINK", "PINNED-AS", "ROLE");
            for (Attached a : attached) {
                t.row(a.namespace(), a.iface(), Integer.toString(a.ifindex()), a.mode(), a.program(), Integer.toString(a.programId()),
                        a.linkId() == 0 ? "none (no link)" : Integer.toString(a.linkId()), a.pinnedAs() == null ? "-" : a.pinnedAs(),
                        ROLES.get(a.program()));
            }
            b.append(t);
            Set<Integer> gateways = new LinkedHashSet<>();
            for (Attached a : attached) if (a.program().equals(XafDataplane.PROGRAM)) gateways.add(a.programId());
            if (!gateways.isEmpty()) {
                GatewayInspector.Table g = new GatewayInspector.Table("GATEWAY-PROG-ID", "INTERFACES", "ROUTES", "RX-PACKETS", "FORWARDED", "DROPPED");
                for (int id : gateways) {
                    List<String> ifaces = attached.stream().filter(a -> a.programId() == id).map(a -> a.namespace() + "/" + a.iface()).toList();
                    try (XafDataplane dp = XafDataplane.openProgram(id)) {
                        CounterSnapshot s = dp.counters();
                        long dropped = 0;
                        for (Counter c : Counter.values()) if (c.name().startsWith("DROP_")) dropped += s.packets(c);
                        g.row(Integer.toString(id), String.join(",", ifaces), Integer.toString(dp.routeIds().size()),
                                Long.toString(s.packets(Counter.RX_XAF)), Long.toString(s.packets(Counter.FORWARDED)), Long.toString(dropped));
                    } catch (RuntimeException e) {
                        g.row(Integer.toString(id), String.join(",", ifaces), "?", "?", "?", "? (" + e.getMessage() + ")");
                    }
                }
                b.append('\n').append(g);
            }
        }
        b.append('\n').append("network namespaces searched: ").append(String.join(", ", searched)).append('\n');
        if (!skipped.isEmpty()) b.append("not searched: ").append(String.join("; ", skipped)).append('\n');
        if (otherPrograms > 0) b.append(otherPrograms).append(" interface(s) run XDP programs not from XAForward (not shown)\n");
        if (!attached.isEmpty()) b.append("one gateway in detail: xaf gateway status --config FILE, in its network namespace\n");
        return b.toString();
    }
}
