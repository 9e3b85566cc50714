package io.xaforward.gateway;

import io.xaforward.dataplane.BpfException;
import io.xaforward.dataplane.Counter;
import io.xaforward.dataplane.CounterSnapshot;
import io.xaforward.dataplane.GatewayPins;
import io.xaforward.dataplane.KernelObjects;
import io.xaforward.dataplane.LibBpf;
import io.xaforward.dataplane.PortCounterSnapshot;
import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.SharedLayouts;
import io.xaforward.dataplane.XafDataplane;
import io.xaforward.dataplane.XdpAttachment;
import io.xaforward.dataplane.XdpDispatcher;
import io.xaforward.dataplane.sys.Syscalls;
import io.xaforward.protocol.NetworkForm;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.StringJoiner;
import java.util.TreeMap;

/**
 * What {@code xaf gateway status} and {@code xaf gateway routes} show: the gateway running (or left pinned) on the
 * interfaces of a config file, read from the kernel without bpftool. It finds the XDP program attached to the
 * config's interfaces (bpf_xdp_query), its XDP links, and the program's maps (by the program's map ids), and reads
 * ports, routes and counters from those maps: what the data plane really does, not what the file says.
 */
public final class GatewayInspector implements AutoCloseable {
    /** One configured interface as the kernel sees it; {@code programId} 0 when nothing is attached. */
    public record PortState(String iface, int ifindex, NetworkForm form, int slot, String mode, int programId, int linkId) {}

    private final Path configFile;
    private final List<PortState> ports;
    private final XafDataplane dataplane;
    private final GatewayPins pins;
    private final String pinsUnknown;

    private GatewayInspector(Path configFile, List<PortState> ports, XafDataplane dataplane, GatewayPins pins, String pinsUnknown) {
        this.configFile = configFile;
        this.ports = ports;
        this.dataplane = dataplane;
        this.pins = pins;
        this.pinsUnknown = pinsUnknown;
    }

    /**
     * Opens the gateway on the interfaces of {@code configFile}; {@code pinName} names its pins (for the status line).
     *
     * @throws IllegalStateException when no XAForward gateway program is attached to any of them
     */
    public static GatewayInspector open(Path configFile, String pinName) {
        GatewayConfig config = GatewayConfigParser.parse(configFile);
        List<KernelObjects.LinkInfo> links = KernelObjects.xdpLinks();
        List<PortState> ports = new ArrayList<>();
        int programId = 0;
        for (GatewayConfig.PortConfig p : config.ports()) {
            int ifindex;
            try {
                ifindex = LibBpf.ifNameToIndex(p.iface());
            } catch (BpfException e) {
                throw new IllegalArgumentException("interface '" + p.iface() + "' of " + configFile
                        + " does not exist in this network namespace (run in the gateway's namespace: ip netns exec NS xaf gateway ...)");
            }
            String mode = "-";
            int prog = 0;
            for (XdpAttachment.Mode m : XdpAttachment.Mode.values()) {
                int id = XdpAttachment.attachedProgramId(ifindex, m);
                if (id != 0) {
                    // attach: dispatcher: the interface shows libxdp's dispatcher, which runs the gateway among others
                    int gateway = XdpDispatcher.gatewayBehind(ifindex, id);
                    mode = gateway == id ? m.label() : m.label() + ", dispatcher";
                    prog = gateway;
                    break;
                }
            }
            int linkId = 0;
            for (KernelObjects.LinkInfo l : links) {
                if (prog != 0 && l.xdpIfindex() == ifindex && l.programId() == prog) linkId = l.id();
            }
            if (programId == 0) programId = prog;
            ports.add(new PortState(p.iface(), ifindex, p.form(), p.slot(), mode, prog, linkId));
        }
        if (programId == 0) {
            throw new IllegalStateException("no gateway is running on the interfaces of " + configFile + ": none of "
                    + String.join(", ", config.ports().stream().map(GatewayConfig.PortConfig::iface).toList())
                    + " has an XDP program attached (start one with 'xaf gateway --config " + configFile + "')");
        }
        XafDataplane dp = XafDataplane.openProgram(programId);
        GatewayPins pins = null;
        String pinsUnknown = null;
        try {
            if (pinName != null) pins = GatewayPins.forGateway(pinName);
        } catch (RuntimeException e) {
            pinsUnknown = "/sys/fs/bpf is not visible here; 'nsenter --net' instead of 'ip netns exec' shows pins";
        }
        return new GatewayInspector(configFile, List.copyOf(ports), dp, pins, pinsUnknown);
    }

    public List<PortState> ports() { return ports; }

    /** The routes in the kernel's route map, by network index identifier (unsigned order). */
    public Map<Integer, Route> routes() {
        Map<Integer, Route> out = new TreeMap<>(Integer::compareUnsigned);
        for (int id : dataplane.routeIds()) {
            Route r = dataplane.route(id);
            if (r != null) out.put(id, r);
        }
        return out;
    }

    public CounterSnapshot counters() { return dataplane.counters(); }

    /** Ports, program, pins and counters as aligned text. */
    public String statusText() {
        StringBuilder b = new StringBuilder();
        int prog = ports.stream().mapToInt(PortState::programId).filter(id -> id != 0).findFirst().orElse(0);
        b.append("gateway ").append(configFile).append(": XDP program ").append(XafDataplane.PROGRAM).append(" id ").append(prog);
        boolean dispatcher = ports.stream().anyMatch(p -> p.mode().endsWith(", dispatcher"));
        if (dispatcher && pins != null && pins.hasMaps()) {
            // pinned: a stop leaves the program in every dispatcher, forwarding, for the next gateway of this name to replace
            b.append(", through libxdp's dispatcher, pinned at ").append(pins.dir())
                    .append(" (left forwarding when its gateway stops; 'xaf gateway unpin' removes it)");
        } else if (dispatcher) {
            // libxdp keeps the program in its dispatcher, process or not: a stop removes it, a kill -9 does not
            b.append(", through libxdp's dispatcher (removed when its gateway stops; left forwarding if the process is killed:"
                    + " xdp-loader unload IFACE -i ").append(prog).append(')');
        } else if (pins != null && pins.hasMaps()) b.append(", pinned at ").append(pins.dir());
        else if (pinsUnknown != null) b.append(", pins unknown (").append(pinsUnknown).append(')');
        else b.append(", not pinned (detached when its process ends)");
        b.append('\n');
        Table t = new Table("PORT", "IFINDEX", "FORM", "SLOT", "MTU", "MODE", "XDP-LINK", "PROGRAM", "RX-PACKETS", "TX-PACKETS", "TX-TOO-BIG");
        PortCounterSnapshot traffic = dataplane.portCounters();
        for (PortState p : ports) {
            t.row(p.iface(), Integer.toString(p.ifindex()), p.form().configName(), Integer.toString(p.slot()), mtuText(p),
                    p.mode(), p.programId() == 0 ? "-" : p.mode().endsWith(", dispatcher") ? "libxdp's"
                            : p.linkId() == 0 ? "none (no link)" : Integer.toString(p.linkId()),
                    p.programId() == 0 ? "not attached" : p.programId() == prog ? Integer.toString(p.programId())
                            : p.programId() + " (another program)",
                    Long.toString(traffic.rxPackets(p.slot())), Long.toString(traffic.txPackets(p.slot())),
                    Long.toString(traffic.txTooBig(p.slot())));
        }
        b.append(t).append('\n');
        b.append("routes: ").append(dataplane.routeIds().size()).append('\n').append('\n');
        CounterSnapshot s = counters();
        Table c = new Table("COUNTER", "PACKETS", "BYTES");
        for (Counter k : Counter.values()) {
            c.row(k == Counter.RX_XAF ? "rx" : k.name().toLowerCase(Locale.ROOT), Long.toString(s.packets(k)), Long.toString(s.bytes(k)));
        }
        return b.append(c).toString();
    }

    /**
     * The egress limit the data plane applies to the port (its MTU when the gateway started or last reloaded), with
     * the interface's MTU now when that differs: the gateway applies a changed MTU on its next reload.
     */
    private String mtuText(PortState p) {
        int applied = dataplane.portMtu(p.slot());
        int link;
        try {
            link = Syscalls.mtu(p.iface());
        } catch (RuntimeException e) {
            return Integer.toString(applied);
        }
        return applied == link ? Integer.toString(applied) : applied + " (link now " + link + ": reload to apply)";
    }

    /** The egress limit the data plane applies to frames leaving by the port with {@code slot}; 0: no port there. */
    public int portMtu(int slot) {
        return dataplane.portMtu(slot);
    }

    /** The route map as aligned text, one route per line. */
    public String routesText() {
        Map<Integer, String> ifnames = new HashMap<>();
        Map<Integer, String> bySlot = new HashMap<>();
        for (PortState p : ports) {
            ifnames.put(p.ifindex(), p.iface());
            bySlot.put(p.slot(), p.iface());
        }
        Table t = new Table("ID", "JOB", "ACTION", "EGRESS", "FORM", "DST-MAC", "DST-IP", "SRC-PORT", "DST-PORT", "INGRESS");
        HexFormat mac = HexFormat.ofDelimiter(":");
        for (Map.Entry<Integer, Route> e : routes().entrySet()) {
            Route r = e.getValue();
            boolean local = r.action() == SharedLayouts.ACTION_LOCAL;
            boolean noPorts = local || r.egressForm() == SharedLayouts.FORM_ID;
            int egressIfindex = local ? 0 : dataplane.txPort(r.txSlot());
            String egress = local ? "-" : ifnames.getOrDefault(egressIfindex, egressIfindex == 0 ? "slot " + r.txSlot() + " (empty)" : "ifindex " + egressIfindex);
            String form = local ? "-" : formName(r.egressForm());
            StringJoiner ingress = new StringJoiner(",");
            for (int slot = 0; slot < SharedLayouts.MAX_PORTS; slot++) {
                if ((r.ingressMask() & (1L << slot)) != 0) ingress.add(bySlot.getOrDefault(slot, "slot " + slot));
            }
            t.row(String.format("0x%08x", e.getKey()), Integer.toUnsignedString(r.jobId()), local ? "local" : "forward", egress, form,
                    local ? "-" : mac.formatHex(r.dstMac()), local ? "-" : ip(r), noPorts ? "-" : srcPorts(r), noPorts ? "-" : Integer.toString(r.dstPort()),
                    r.ingressMask() != 0 ? ingress.toString() : local ? "any" : "any but " + egress); // no hairpin (PROTOCOL.md §7)
        }
        return t.toString();
    }

    /** The route's UDP source port, or its span of ports as FIRST-LAST. */
    static String srcPorts(Route r) {
        return r.srcPortSpan() <= 1 ? Integer.toString(r.srcPort()) : r.srcPort() + "-" + (r.srcPort() + r.srcPortSpan() - 1);
    }

    private static String formName(int code) {
        try {
            return NetworkForm.fromCode(code).configName();
        } catch (RuntimeException e) {
            return "form " + code;
        }
    }

    private static String ip(Route r) {
        byte[] ip = r.dstIp();
        if (r.egressForm() == SharedLayouts.FORM_ID) return "-";
        try {
            return InetAddress.getByAddress(r.egressForm() == SharedLayouts.FORM_IPV4 ? Arrays.copyOf(ip, 4) : ip).getHostAddress();
        } catch (UnknownHostException e) {
            return "?";
        }
    }

    @Override
    public void close() {
        dataplane.close();
    }

    /** Left-aligned columns separated by two spaces. */
    static final class Table {
        private final List<String[]> rows = new ArrayList<>();

        Table(String... header) { rows.add(header); }

        void row(String... cells) { rows.add(cells); }

        @Override
        public String toString() {
            int[] width = new int[rows.getFirst().length];
            for (String[] r : rows) for (int i = 0; i < r.length; i++) width[i] = Math.max(width[i], r[i].length());
            StringBuilder b = new StringBuilder();
            for (String[] r : rows) {
                StringBuilder line = new StringBuilder();
                for (int i = 0; i < r.length; i++) {
                    line.append(r[i]);
                    if (i < r.length - 1) line.append(" ".repeat(width[i] - r[i].length() + 2));
                }
                b.append(line.toString().stripTrailing()).append('\n');
            }
            return b.toString();
        }
    }
}
