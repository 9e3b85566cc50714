package io.xaforward.dataplane;

import io.xaforward.dataplane.sys.Syscalls;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

import static io.xaforward.dataplane.SharedLayouts.PORT;
import static io.xaforward.dataplane.SharedLayouts.ROUTE;

/**
 * The XDP gateway as one object: loads xaf_gateway.bpf.o, fills its maps (ports, tx_ports, port_mtus, routes, xsks), reads
 * its counters and attaches it to interfaces. {@link #close} detaches everything it attached and releases the
 * object, so a gateway leaves nothing behind. Control-plane only (not per packet); not thread-safe.
 */
public final class XafDataplane implements AutoCloseable {
    /** Classpath location of the compiled program (built by src/main/bpf/build.sh). */
    public static final String OBJECT_RESOURCE = "bpf/xaf_gateway.bpf.o";
    public static final String PROGRAM = "xaf_gateway";

    /** The maps of the program, by their names in xaf_gateway.bpf.c. */
    public static final List<String> MAP_NAMES = List.of("routes", "ports", "tx_ports", "port_mtus", "xsks", "counters");

    private final BpfObject object; // null when opened from a program another process loaded
    private final int progFd;
    private final List<Integer> ownedFds; // fds this object closes itself (program and maps opened by id)
    private final BpfMap routes, ports, txPorts, portMtus, xsks, counters;
    // Shared: a gateway reads counters from its metrics thread; callers serialise access (scratch buffers below).
    private final Arena arena = Arena.ofShared();
    private final MemorySegment key = arena.allocate(ValueLayout.JAVA_INT);
    private final MemorySegment routeValue = arena.allocate(ROUTE);
    private final MemorySegment portValue = arena.allocate(PORT);
    private final MemorySegment perCpu;
    private final List<XdpAttachment> attachments = new ArrayList<>();
    /** Opens the object this dataplane was loaded from again, unloaded (null when opened from another process). */
    private Supplier<BpfObject> reopen;
    /** The program libxdp's dispatcher runs, loaded on the first {@link #attachThroughDispatcher}; null before. */
    private DispatcherAttachment.Program dispatcherProgram;
    private final List<DispatcherAttachment> dispatcherAttachments = new ArrayList<>();

    private XafDataplane(BpfObject object, int progFd, Map<String, BpfMap> maps, List<Integer> ownedFds) {
        this.object = object;
        this.progFd = progFd;
        this.ownedFds = ownedFds;
        this.routes = maps.get("routes");
        this.ports = maps.get("ports");
        this.txPorts = maps.get("tx_ports");
        this.portMtus = maps.get("port_mtus");
        this.xsks = maps.get("xsks");
        this.counters = maps.get("counters");
        if (counters.valueSize() != SharedLayouts.COUNTERS_VALUE.byteSize()) {
            throw new IllegalStateException("map 'counters' has " + counters.valueSize() + "-byte values; this build expects struct xaf_counters ("
                    + SharedLayouts.COUNTERS_VALUE.byteSize() + " bytes): the BPF object and the Java classes come from different builds");
        }
        if (routes.valueSize() != ROUTE.byteSize() || ports.valueSize() != PORT.byteSize()) {
            throw new IllegalStateException("maps 'routes'/'ports' have " + routes.valueSize() + "/" + ports.valueSize()
                    + "-byte values; this build expects " + ROUTE.byteSize() + "/" + PORT.byteSize()
                    + ": the BPF program and the Java classes come from different builds");
        }
        this.perCpu = arena.allocate(counters.valueBufferSize(), 8);
    }

    private XafDataplane(BpfObject object) {
        this(object, object.programFd(PROGRAM), mapsOf(object), List.of());
    }

    private static Map<String, BpfMap> mapsOf(BpfObject object) {
        Map<String, BpfMap> maps = new HashMap<>();
        for (String name : MAP_NAMES) maps.put(name, object.map(name));
        return maps;
    }

    /**
     * The maps of the gateway program with kernel id {@code programId}, which another process loaded and attached
     * (what {@code xaf gateway status} reads). Closing it closes only the fds it opened: the program stays.
     *
     * @throws IllegalStateException when that program is not the XAForward gateway
     */
    public static XafDataplane openProgram(int programId) {
        List<Integer> fds = new ArrayList<>();
        try {
            int progFd = KernelObjects.programFdById(programId);
            fds.add(progFd);
            KernelObjects.ProgramInfo info = KernelObjects.program(progFd);
            if (!info.name().equals(PROGRAM)) {
                throw new IllegalStateException("XDP program id " + programId + " is '" + info.name() + "', not the XAForward gateway ('" + PROGRAM + "')");
            }
            Map<String, BpfMap> maps = new HashMap<>();
            for (int mapId : info.mapIds()) {
                int fd = KernelObjects.mapFdById(mapId);
                fds.add(fd);
                KernelObjects.MapInfo m = KernelObjects.map(fd);
                if (MAP_NAMES.contains(m.name())) maps.put(m.name(), BpfMap.of(m, fd));
            }
            for (String name : MAP_NAMES) {
                if (!maps.containsKey(name)) throw new IllegalStateException("XDP program id " + programId + " has no map '" + name + "'");
            }
            return new XafDataplane(null, progFd, maps, List.copyOf(fds));
        } catch (RuntimeException e) {
            fds.forEach(LibBpf::closeFd);
            throw e;
        }
    }

    /** System property naming a BPF object file to load instead of the one shipped on the classpath. */
    public static final String OBJECT_PROPERTY = "xaf.bpf.object";

    /**
     * Loads the gateway program shipped on the classpath, or the file named by the system property
     * {@value #OBJECT_PROPERTY} when it is set.
     */
    public static XafDataplane load() {
        return load(XafDataplane::openObject);
    }

    /** The gateway's object, opened (not loaded): the file named by {@value #OBJECT_PROPERTY}, or the shipped one. */
    private static BpfObject openObject() {
        String override = System.getProperty(OBJECT_PROPERTY);
        return override != null && !override.isBlank() ? BpfObject.open(Path.of(override))
                : BpfObject.openResource(OBJECT_RESOURCE);
    }

    /** Loads a gateway program from a file (tests, custom builds). */
    public static XafDataplane load(Path objectFile) {
        return load(() -> BpfObject.open(objectFile));
    }

    private static XafDataplane load(Supplier<BpfObject> opener) {
        XafDataplane dp = load(opener.get());
        dp.reopen = opener;
        return dp;
    }

    /**
     * The gateway's maps without its program, for {@link #attachThroughDispatcher} only: the program libxdp's
     * dispatcher runs is loaded (as an extension) at the first attach, and it must be the first program to use the
     * maps. The kernel ties a devmap (tx_ports) to the first program that uses it: type, JIT and fragment support;
     * an extension loaded after a plain XDP program that uses the same devmap is refused with EINVAL (seen on Linux
     * 6.1). {@link #attach} is refused on such a dataplane.
     */
    public static XafDataplane loadForDispatcher() {
        return loadForDispatcher(Map.of());
    }

    /**
     * As {@link #loadForDispatcher()}, with existing maps instead of new ones ({@code mapFds}: name -> fd of a map
     * of the same shape, e.g. a pinned gateway's, as for {@link #loadReusing}); the caller keeps and closes its fds.
     */
    public static XafDataplane loadForDispatcher(Map<String, Integer> mapFds) {
        BpfObject obj = openObject();
        try {
            for (Map.Entry<String, Integer> e : mapFds.entrySet()) obj.reuseMap(e.getKey(), e.getValue());
            int rc = LibBpf.setAutoload(obj.nativeProgram(PROGRAM), false);
            if (rc != 0) throw new BpfException("bpf_program__set_autoload(" + PROGRAM + ", false)", rc);
        } catch (RuntimeException e) {
            obj.close();
            throw e;
        }
        XafDataplane dp;
        try {
            obj.load();
            dp = new XafDataplane(obj, -1, mapsOf(obj), List.of());
        } catch (RuntimeException e) {
            obj.close();
            throw e;
        }
        dp.reopen = XafDataplane::openObject;
        return dp;
    }

    /**
     * Loads the gateway program (as {@link #load()}) but makes it use existing maps instead of new ones:
     * {@code mapFds} maps a map name to an fd of a map of the same shape (e.g. opened from a bpffs pin), so the new
     * program starts with the routes, ports and counters the maps hold. The caller keeps and closes its fds.
     */
    public static XafDataplane loadReusing(Map<String, Integer> mapFds) {
        if (mapFds.isEmpty()) return load();
        BpfObject obj = openObject();
        try {
            for (Map.Entry<String, Integer> e : mapFds.entrySet()) obj.reuseMap(e.getKey(), e.getValue());
        } catch (RuntimeException e) {
            obj.close();
            throw e;
        }
        XafDataplane dp = load(obj);
        dp.reopen = XafDataplane::openObject;
        return dp;
    }

    private static XafDataplane load(BpfObject obj) {
        try {
            obj.load();
            return new XafDataplane(obj);
        } catch (BpfException e) {
            obj.close();
            if (e.errno() == 1) { // EPERM
                throw new BpfException("loading the XDP program needs root (CAP_BPF and CAP_NET_ADMIN); "
                        + e.operation(), e.errno(), e.verifierLog());
            }
            throw e;
        } catch (RuntimeException e) {
            obj.close();
            throw e;
        }
    }

    /** The plain XDP program's fd; -1 for a dataplane made for the dispatcher ({@link #loadForDispatcher}). */
    public int programFd() { return progFd; }
    /** The loaded object; null for a dataplane opened with {@link #openProgram}. */
    public BpfObject object() { return object; }
    public BpfMap routesMap() { return routes; }

    /** The map named {@code name} (one of {@link #MAP_NAMES}). */
    public BpfMap map(String name) {
        return switch (name) {
            case "routes" -> routes;
            case "ports" -> ports;
            case "tx_ports" -> txPorts;
            case "port_mtus" -> portMtus;
            case "xsks" -> xsks;
            case "counters" -> counters;
            default -> throw new IllegalArgumentException("no map '" + name + "'");
        };
    }

    /**
     * One entry of the ports map: the port's slot (its bit in ingress masks), its network form and the cap on the
     * hop limit of frames arriving on it (docs/PROTOCOL.md §6).
     */
    public record PortEntry(int slot, int form, int maxHopLimit) {}

    /** The hop limit cap of a port unless its gateway's configuration says otherwise (PROTOCOL.md §6). */
    public static final int DEFAULT_MAX_HOP_LIMIT = 16;

    /** The ports map as the kernel holds it: ifindex -> slot and form. */
    public Map<Integer, PortEntry> ports() {
        Map<Integer, PortEntry> out = new TreeMap<>();
        for (int ifindex : ports.intKeys()) {
            key.set(ValueLayout.JAVA_INT, 0, ifindex);
            if (ports.lookup(key, portValue)) {
                out.put(ifindex, new PortEntry(portValue.get(ValueLayout.JAVA_INT, SharedLayouts.offset(PORT, "slot")),
                        Byte.toUnsignedInt(portValue.get(ValueLayout.JAVA_BYTE, SharedLayouts.offset(PORT, "form"))),
                        Byte.toUnsignedInt(portValue.get(ValueLayout.JAVA_BYTE, SharedLayouts.offset(PORT, "max_hop")))));
            }
        }
        return out;
    }

    /** The ifindex routes with tx_slot {@code slot} leave through, or 0 when the slot is empty. */
    public int txPort(int slot) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = a.allocateFrom(ValueLayout.JAVA_INT, slot);
            MemorySegment v = a.allocate(ValueLayout.JAVA_INT);
            return txPorts.lookup(k, v) ? v.get(ValueLayout.JAVA_INT, 0) : 0;
        }
    }

    /**
     * Makes {@code ifindex} a gateway port with bit {@code slot} in route ingress masks, speaking {@code form}, with
     * the default hop limit cap ({@value #DEFAULT_MAX_HOP_LIMIT}).
     */
    public void setPort(int ifindex, int slot, int form) {
        setPort(ifindex, slot, form, DEFAULT_MAX_HOP_LIMIT);
    }

    /**
     * As {@link #setPort(int, int, int)}; frames arriving on the port with a hop limit above {@code maxHopLimit}
     * (2..255) are forwarded as if they had arrived with {@code maxHopLimit} (PROTOCOL.md §6).
     */
    public void setPort(int ifindex, int slot, int form, int maxHopLimit) {
        if (slot < 0 || slot >= SharedLayouts.MAX_PORTS) throw new IllegalArgumentException("slot " + slot + " not in 0..63");
        if (form < SharedLayouts.FORM_IPV4 || form > SharedLayouts.FORM_ID) throw new IllegalArgumentException("unknown form " + form);
        if (maxHopLimit < 2 || maxHopLimit > 255) throw new IllegalArgumentException("hop limit cap " + maxHopLimit + " not in 2..255");
        key.set(ValueLayout.JAVA_INT, 0, ifindex);
        portValue.fill((byte) 0);
        portValue.set(ValueLayout.JAVA_INT, SharedLayouts.offset(PORT, "slot"), slot);
        portValue.set(ValueLayout.JAVA_BYTE, SharedLayouts.offset(PORT, "form"), (byte) form);
        portValue.set(ValueLayout.JAVA_BYTE, SharedLayouts.offset(PORT, "max_hop"), (byte) maxHopLimit);
        ports.update(key, portValue, BpfMap.ANY);
    }

    /** Stops treating {@code ifindex} as a gateway port (its frames pass to the kernel). */
    public boolean deletePort(int ifindex) { return ports.deleteInt(ifindex); }

    /**
     * Routes with tx_slot {@code slot} leave through {@code egressIfindex}, whose MTU is read now (in this thread's
     * network namespace) as the slot's egress limit; {@link #setPortMtu} updates it when the MTU changes.
     */
    public void setTxPort(int slot, int egressIfindex) {
        if (slot < 0 || slot >= SharedLayouts.MAX_PORTS) throw new IllegalArgumentException("slot " + slot + " not in 0..63");
        txPorts.updateInt(slot, egressIfindex, BpfMap.ANY);
        setPortMtu(slot, Syscalls.mtu(Syscalls.ifIndexToName(egressIfindex)));
    }

    /** As {@link #setTxPort(int, int)} with an explicit egress limit {@code mtu} (tests, ports whose MTU is known). */
    public void setTxPort(int slot, int egressIfindex, int mtu) {
        if (slot < 0 || slot >= SharedLayouts.MAX_PORTS) throw new IllegalArgumentException("slot " + slot + " not in 0..63");
        txPorts.updateInt(slot, egressIfindex, BpfMap.ANY);
        setPortMtu(slot, mtu);
    }

    /**
     * The egress limit of slot {@code slot}: frames routed there are forwarded only when what follows their
     * Ethernet header (IP packet, or ID header + XAF header + payload) is at most {@code mtu} bytes.
     */
    public void setPortMtu(int slot, int mtu) {
        if (slot < 0 || slot >= SharedLayouts.MAX_PORTS) throw new IllegalArgumentException("slot " + slot + " not in 0..63");
        if (mtu < 1) throw new IllegalArgumentException("MTU " + mtu + " of slot " + slot + " must be positive");
        portMtus.updateInt(slot, mtu, BpfMap.ANY);
    }

    /** The egress limit of slot {@code slot} as the program sees it; 0 when no port has that slot. */
    public int portMtu(int slot) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = a.allocateFrom(ValueLayout.JAVA_INT, slot);
            MemorySegment v = a.allocate(ValueLayout.JAVA_INT);
            return portMtus.lookup(k, v) ? v.get(ValueLayout.JAVA_INT, 0) : 0;
        }
    }

    /** Empties slot {@code slot}: its devmap entry goes and its MTU becomes 0 (no port). */
    public boolean deleteTxPort(int slot) {
        portMtus.updateInt(slot, 0, BpfMap.ANY); // an ARRAY map entry cannot be deleted, only zeroed
        return txPorts.deleteInt(slot);
    }

    /** Registers the AF_XDP socket {@code socketFd} for frames of LOCAL routes arriving on rx queue {@code queue}. */
    public void setXsk(int queue, int socketFd) { xsks.updateInt(queue, socketFd, BpfMap.ANY); }

    public boolean deleteXsk(int queue) { return xsks.deleteInt(queue); }

    /** Inserts or replaces the route for network index identifier {@code networkId} (unsigned 32-bit). */
    public void putRoute(int networkId, Route r) {
        key.set(ValueLayout.JAVA_INT, 0, networkId);
        RouteCodec.write(r, routeValue);
        routes.update(key, routeValue, BpfMap.ANY);
    }

    /** The route for {@code networkId}, or null. */
    public Route route(int networkId) {
        key.set(ValueLayout.JAVA_INT, 0, networkId);
        return routes.lookup(key, routeValue) ? RouteCodec.read(routeValue) : null;
    }

    /** The network index identifiers that have a route in the kernel's map right now. */
    public List<Integer> routeIds() {
        return routes.intKeys();
    }

    /** Removes the route; false when there was none. */
    public boolean deleteRoute(int networkId) {
        key.set(ValueLayout.JAVA_INT, 0, networkId);
        return routes.delete(key);
    }

    /** Packets and bytes per counter, summed over CPUs (one map read: every CPU's struct xaf_counters). */
    public CounterSnapshot counters() {
        Counter[] all = Counter.values();
        long[] p = new long[all.length];
        long[] b = new long[all.length];
        key.set(ValueLayout.JAVA_INT, 0, 0);
        if (counters.lookup(key, perCpu)) {
            long stride = (counters.valueSize() + 7L) & ~7L; // per-CPU values are 8-aligned
            for (long cpu = 0; cpu < perCpu.byteSize(); cpu += stride) {
                for (Counter c : all) {
                    p[c.ordinal()] += perCpu.get(ValueLayout.JAVA_LONG, cpu + PACKETS_OFFSET + 8L * c.code());
                    b[c.ordinal()] += perCpu.get(ValueLayout.JAVA_LONG, cpu + BYTES_OFFSET + 8L * c.code());
                }
            }
        }
        return new CounterSnapshot(p, b);
    }

    /** Per-port packets and bytes (index = port slot), summed over CPUs (one map read). */
    public PortCounterSnapshot portCounters() {
        int n = SharedLayouts.MAX_PORTS;
        long[] rxP = new long[n], rxB = new long[n], txP = new long[n], txB = new long[n], tooBig = new long[n];
        key.set(ValueLayout.JAVA_INT, 0, 0);
        if (counters.lookup(key, perCpu)) {
            long stride = (counters.valueSize() + 7L) & ~7L;
            for (long cpu = 0; cpu < perCpu.byteSize(); cpu += stride) {
                for (int slot = 0; slot < n; slot++) {
                    rxP[slot] += perCpu.get(ValueLayout.JAVA_LONG, cpu + PORT_RX_PACKETS + 8L * slot);
                    rxB[slot] += perCpu.get(ValueLayout.JAVA_LONG, cpu + PORT_RX_BYTES + 8L * slot);
                    txP[slot] += perCpu.get(ValueLayout.JAVA_LONG, cpu + PORT_TX_PACKETS + 8L * slot);
                    txB[slot] += perCpu.get(ValueLayout.JAVA_LONG, cpu + PORT_TX_BYTES + 8L * slot);
                    tooBig[slot] += perCpu.get(ValueLayout.JAVA_LONG, cpu + PORT_TX_TOO_BIG + 8L * slot);
                }
            }
        }
        return new PortCounterSnapshot(rxP, rxB, txP, txB, tooBig);
    }

    private static final long PORT_RX_PACKETS = SharedLayouts.offset(SharedLayouts.COUNTERS_VALUE, "port_rx_packets");
    private static final long PORT_RX_BYTES = SharedLayouts.offset(SharedLayouts.COUNTERS_VALUE, "port_rx_bytes");
    private static final long PORT_TX_PACKETS = SharedLayouts.offset(SharedLayouts.COUNTERS_VALUE, "port_tx_packets");
    private static final long PORT_TX_BYTES = SharedLayouts.offset(SharedLayouts.COUNTERS_VALUE, "port_tx_bytes");
    private static final long PORT_TX_TOO_BIG = SharedLayouts.offset(SharedLayouts.COUNTERS_VALUE, "port_tx_too_big");

    /**
     * Packets per counter (index = {@link Counter#ordinal()}), summed over CPUs, written into {@code packets}: the
     * allocation-free read for callers that check the counters after every frame (the fuzzer).
     */
    public void packetsInto(long[] packets) {
        if (packets.length != Counter.values().length) throw new IllegalArgumentException("need one slot per Counter");
        Arrays.fill(packets, 0);
        key.set(ValueLayout.JAVA_INT, 0, 0);
        if (!counters.lookup(key, perCpu)) return;
        long stride = (counters.valueSize() + 7L) & ~7L;
        for (long cpu = 0; cpu < perCpu.byteSize(); cpu += stride) {
            for (int c = 0; c < packets.length; c++) packets[c] += perCpu.get(ValueLayout.JAVA_LONG, cpu + PACKETS_OFFSET + 8L * c);
        }
    }

    private static final long PACKETS_OFFSET = SharedLayouts.offset(SharedLayouts.COUNTERS_VALUE, "packets");
    private static final long BYTES_OFFSET = SharedLayouts.offset(SharedLayouts.COUNTERS_VALUE, "bytes");

    /** Attaches the gateway to {@code ifname} (native mode; generic only if {@code allowGenericFallback}). */
    public XdpAttachment attach(String ifname, boolean allowGenericFallback) {
        if (progFd < 0) throw new IllegalStateException("this dataplane was loaded for libxdp's dispatcher: attach through it");
        XdpAttachment a = XdpAttachment.attach(progFd, ifname, allowGenericFallback);
        attachments.add(a);
        return a;
    }

    /**
     * Adds the gateway to libxdp's multiprog dispatcher on {@code ifname} ({@code attach: dispatcher}), beside the
     * programs already there. The program the dispatcher runs is this dataplane's program loaded a second time, as
     * an extension, with this dataplane's maps: routes, ports and counters written here apply to it, before and after
     * it is attached. See {@link DispatcherAttachment} for what differs from {@link #attach}.
     *
     * @throws BpfException          when the kernel refuses extension programs (checked before the first attach, so
     *                               nothing is attached then), or libxdp or the kernel refuses the attach
     * @throws IllegalStateException when libxdp is missing, /sys/fs/bpf is not a BPF filesystem here, or the
     *                               interface cannot take another program ({@link DispatcherAttachment#attach})
     */
    public DispatcherAttachment attachThroughDispatcher(String ifname) {
        if (dispatcherProgram == null) {
            if (reopen == null) throw new IllegalStateException("a dataplane opened from another process's program cannot attach");
            LibXdp.get();
            try {
                GatewayPins.bpffs();
            } catch (IllegalStateException e) {
                throw new IllegalStateException("libxdp keeps the programs of its dispatcher pinned on the BPF filesystem,"
                        + " and " + e.getMessage(), e);
            }
            XdpDispatcher.requireExtensions();
            BpfObject second = reopen.get();
            try {
                for (String name : MAP_NAMES) second.reuseMap(name, map(name).fd());
                dispatcherProgram = new DispatcherAttachment.Program(second);
            } catch (RuntimeException e) {
                second.close();
                throw e;
            }
        }
        DispatcherAttachment a = DispatcherAttachment.attach(dispatcherProgram, ifname, KernelObjects.map(routesMap().fd()).id());
        dispatcherProgram.object().loadedElsewhere();
        dispatcherAttachments.add(a);
        return a;
    }

    /** The interfaces this dataplane shares through libxdp's dispatcher. */
    public List<DispatcherAttachment> dispatcherAttachments() { return List.copyOf(dispatcherAttachments); }

    /** Detaches every interface this dataplane attached to; the first failure is thrown after trying all. */
    public void detachAll() {
        RuntimeException first = null;
        for (XdpAttachment a : attachments) {
            try {
                a.detach();
            } catch (RuntimeException e) {
                if (first == null) first = e; else first.addSuppressed(e);
            }
        }
        attachments.clear();
        for (DispatcherAttachment a : dispatcherAttachments) {
            try {
                a.detach();
            } catch (RuntimeException e) {
                if (first == null) first = e; else first.addSuppressed(e);
            }
        }
        dispatcherAttachments.clear();
        if (first != null) throw first;
    }

    /** Makes an attachment made elsewhere (e.g. a pinned link adopted) part of this dataplane's attachments. */
    public void adopt(XdpAttachment a) {
        attachments.add(a);
    }

    /**
     * Closes this process's fds to every link without detaching: links pinned on a bpffs stay attached (and keep
     * this program and its maps alive); unpinned ones are detached by the kernel. Programs in libxdp's dispatcher
     * stay there (libxdp pins their links).
     */
    public void releaseAll() {
        for (XdpAttachment a : attachments) a.release();
        attachments.clear();
        // libxdp pins each program's place in a dispatcher itself: released, it stays there
        for (DispatcherAttachment a : dispatcherAttachments) a.release();
        dispatcherAttachments.clear();
    }

    public List<XdpAttachment> attachments() { return List.copyOf(attachments); }

    @Override
    public void close() {
        try {
            detachAll();
        } finally {
            if (dispatcherProgram != null) {
                dispatcherProgram.close();
                dispatcherProgram = null;
            }
            if (object != null) object.close();
            ownedFds.forEach(LibBpf::closeFd);
            arena.close();
        }
    }
}
