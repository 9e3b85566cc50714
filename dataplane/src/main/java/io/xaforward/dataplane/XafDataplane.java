package io.xaforward.dataplane;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static io.xaforward.dataplane.SharedLayouts.PORT;
import static io.xaforward.dataplane.SharedLayouts.ROUTE;

/**
 * The XDP gateway as one object: loads xaf_gateway.bpf.o, fills its maps (ports, tx_ports, routes, xsks), reads
 * its counters and attaches it to interfaces. {@link #close} detaches everything it attached and releases the
 * object, so a gateway leaves nothing behind. Control-plane only (not per packet); not thread-safe.
 */
public final class XafDataplane implements AutoCloseable {
    /** Classpath location of the compiled program (built by src/main/bpf/build.sh). */
    public static final String OBJECT_RESOURCE = "bpf/xaf_gateway.bpf.o";
    public static final String PROGRAM = "xaf_gateway";

    private final BpfObject object;
    private final int progFd;
    private final BpfMap routes, ports, txPorts, xsks, counters;
    // Shared: a gateway reads counters from its metrics thread; callers serialise access (scratch buffers below).
    private final Arena arena = Arena.ofShared();
    private final MemorySegment key = arena.allocate(ValueLayout.JAVA_INT);
    private final MemorySegment routeValue = arena.allocate(ROUTE);
    private final MemorySegment portValue = arena.allocate(PORT);
    private final MemorySegment perCpu;
    private final List<XdpAttachment> attachments = new ArrayList<>();

    private XafDataplane(BpfObject object) {
        this.object = object;
        this.progFd = object.programFd(PROGRAM);
        this.routes = object.map("routes");
        this.ports = object.map("ports");
        this.txPorts = object.map("tx_ports");
        this.xsks = object.map("xsks");
        this.counters = object.map("counters");
        if (counters.valueSize() != SharedLayouts.COUNTERS_VALUE.byteSize()) {
            throw new IllegalStateException("map 'counters' has " + counters.valueSize() + "-byte values; this build expects struct xaf_counters ("
                    + SharedLayouts.COUNTERS_VALUE.byteSize() + " bytes): the BPF object and the Java classes come from different builds");
        }
        this.perCpu = arena.allocate(counters.valueBufferSize(), 8);
    }

    /** System property naming a BPF object file to load instead of the one shipped on the classpath. */
    public static final String OBJECT_PROPERTY = "xaf.bpf.object";

    /**
     * Loads the gateway program shipped on the classpath, or the file named by the system property
     * {@value #OBJECT_PROPERTY} when it is set.
     */
    public static XafDataplane load() {
        String override = System.getProperty(OBJECT_PROPERTY);
        if (override != null && !override.isBlank()) return load(java.nio.file.Path.of(override));
        return load(BpfObject.openResource(OBJECT_RESOURCE));
    }

    /** Loads a gateway program from a file (tests, custom builds). */
    public static XafDataplane load(java.nio.file.Path objectFile) {
        return load(BpfObject.open(objectFile));
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

    public int programFd() { return progFd; }
    public BpfObject object() { return object; }
    public BpfMap routesMap() { return routes; }

    /** Makes {@code ifindex} a gateway port with bit {@code slot} in route ingress masks, speaking {@code form}. */
    public void setPort(int ifindex, int slot, int form) {
        if (slot < 0 || slot >= SharedLayouts.MAX_PORTS) throw new IllegalArgumentException("slot " + slot + " not in 0..63");
        if (form < SharedLayouts.FORM_IPV4 || form > SharedLayouts.FORM_ID) throw new IllegalArgumentException("unknown form " + form);
        key.set(ValueLayout.JAVA_INT, 0, ifindex);
        portValue.fill((byte) 0);
        portValue.set(ValueLayout.JAVA_INT, SharedLayouts.offset(PORT, "slot"), slot);
        portValue.set(ValueLayout.JAVA_BYTE, SharedLayouts.offset(PORT, "form"), (byte) form);
        ports.update(key, portValue, BpfMap.ANY);
    }

    /** Stops treating {@code ifindex} as a gateway port (its frames pass to the kernel). */
    public boolean deletePort(int ifindex) { return ports.deleteInt(ifindex); }

    /** Routes with tx_slot {@code slot} leave through {@code egressIfindex}. */
    public void setTxPort(int slot, int egressIfindex) {
        if (slot < 0 || slot >= SharedLayouts.MAX_PORTS) throw new IllegalArgumentException("slot " + slot + " not in 0..63");
        txPorts.updateInt(slot, egressIfindex, BpfMap.ANY);
    }

    public boolean deleteTxPort(int slot) { return txPorts.deleteInt(slot); }

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
    public java.util.List<Integer> routeIds() {
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

    /**
     * Packets per counter (index = {@link Counter#ordinal()}), summed over CPUs, written into {@code packets}: the
     * allocation-free read for callers that check the counters after every frame (the fuzzer).
     */
    public void packetsInto(long[] packets) {
        if (packets.length != Counter.values().length) throw new IllegalArgumentException("need one slot per Counter");
        java.util.Arrays.fill(packets, 0);
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
        XdpAttachment a = XdpAttachment.attach(progFd, ifname, allowGenericFallback);
        attachments.add(a);
        return a;
    }

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
        if (first != null) throw first;
    }

    public List<XdpAttachment> attachments() { return List.copyOf(attachments); }

    @Override
    public void close() {
        try {
            detachAll();
        } finally {
            object.close();
            arena.close();
        }
    }
}
