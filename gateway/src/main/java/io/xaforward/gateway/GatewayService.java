package io.xaforward.gateway;

import io.xaforward.dataplane.Counter;
import io.xaforward.dataplane.CounterSnapshot;
import io.xaforward.dataplane.DispatcherAttachment;
import io.xaforward.dataplane.GatewayPins;
import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.XdpAttachment;
import io.xaforward.dataplane.XafDataplane;
import io.xaforward.dataplane.XdpDispatcher;
import io.xaforward.dataplane.sys.Syscalls;
import io.xaforward.protocol.NetworkForm;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import java.util.List;

/**
 * A running XAForward gateway: the XDP program attached to every configured interface, routes programmed from
 * the config file, counters served to Prometheus, and the file watched for route changes.
 *
 * <p>Start-up checks everything that can be checked before touching the kernel (config, interfaces, privileges),
 * so a bad config leaves nothing attached. {@link #close()} detaches from every interface it attached to.
 */
public final class GatewayService implements AutoCloseable, io.xaforward.gateway.registry.RouteRegistryWatch.Routes {
    private static final long RELOAD_POLL_MS = 500;
    /** A changed config file is read again after this long and applied only when both reads agree. */
    private static final long SETTLE_MS = 200;
    /** As SETTLE_MS, for a file rewritten in place (same inode), where a writer's pause shows a shorter file. */
    private static final long IN_PLACE_SETTLE_MS = 2000;
    /** How long one reload waits for a process that holds the file open for writing (the watcher then tries again). */
    private static final long WRITER_WAIT_MS = 60_000;

    private final Path configFile;
    private final StableFileReader configReader;
    private static final Logger LOG = LoggerFactory.getLogger(GatewayService.class);
    private final XafDataplane dataplane;
    private final Map<String, Integer> ifindexes = new HashMap<>();
    private final Map<String, byte[]> macs = new HashMap<>();
    private final MetricsServer metrics;
    private final GatewayPins pins;
    private final CountDownLatch stopped = new CountDownLatch(1);
    private final Thread watcher;
    private volatile GatewayConfig config;
    private volatile boolean closing;
    private int reloads;
    private int reloadFailures;
    /** Reloads refused because the config file failed its owner, mode or link check (also counted as failures). */
    private int fileRefusals;
    private boolean lastReloadSuccess = true;
    private double lastReloadEpochSeconds, lastGoodReloadEpochSeconds;
    /** The route map's writer, which keeps the gateway's view of the routes it installed (read once at start). */
    private final RouteReconciler reconciler;
    private final List<Supplier<String>> extraMetrics = new CopyOnWriteArrayList<>();
    /** The attach mode given on the command line ({@code --attach}), which wins over the file's; null when none. */
    private final GatewayConfig.AttachMode attachOverride;

    private GatewayService(Path configFile, GatewayConfig config, String pinName, boolean routesFromRegistry,
                           GatewayConfig.AttachMode attachOverride) {
        this.attachOverride = attachOverride;
        this.configFile = configFile;
        this.configReader = new StableFileReader(configFile, SETTLE_MS, IN_PLACE_SETTLE_MS, WRITER_WAIT_MS);
        this.config = config;
        for (GatewayConfig.PortConfig p : config.ports()) {
            ifindexes.put(p.iface(), resolveIfindex(p.iface()));
            macs.put(p.iface(), readMac(p.iface()));
        }
        this.pins = pinName == null ? null : GatewayPins.forGateway(pinName);
        boolean dispatcher = config.attach() == GatewayConfig.AttachMode.DISPATCHER;
        boolean adopting = pins != null && pins.hasMaps();
        if (adopting && pins.pinnedThroughDispatcher() != dispatcher) {
            throw new IllegalStateException("the gateway pinned at " + pins.dir() + " was attached "
                    + (dispatcher ? "with XDP links of its own" : "through libxdp's dispatcher") + ", and this one would attach "
                    + (dispatcher ? "through the dispatcher" : "with links of its own") + ": a restart keeps the attach mode;"
                    + " to change it, 'xaf gateway unpin' the old one first (forwarding stops until the new gateway attaches)");
        }
        // The dispatcher's program is loaded when it attaches; until then the maps stand alone (see loadForDispatcher).
        XafDataplane dp = dispatcher ? loadForDispatcher(pins) : loadDataplane(pins);
        List<XdpAttachment> created = new ArrayList<>();
        try {
            if (pins != null && !adopting) {
                pins.pinMaps(dp);
                if (dispatcher) pins.markDispatcher();
            }
            programPorts(dp, config);
            // Against the map's real contents: a fresh map is empty, an adopted one keeps the routes that forward now.
            Map<Integer, Route> wanted = new LinkedHashMap<>();
            for (GatewayConfig.RouteConfig r : config.routes()) wanted.put(r.networkId(), toRoute(config, r, macs));
            reconciler = RouteReconciler.readFrom(RouteTable.of(dp));
            RouteReconciler.Result routes = adopting && routesFromRegistry ? new RouteReconciler.Result(0, 0, 0)
                    : reconciler.apply(wanted);
            if (adopting) {
                LOG.info("adopted the pinned maps in {}: {} routes added, {} changed, {} removed", pins.dir(),
                        routes.added(), routes.changed(), routes.removed());
            }
            for (GatewayConfig.PortConfig p : config.ports()) {
                XdpAttachment a;
                String how;
                if (pins != null && pins.hasLink(p.iface())) {
                    a = XdpAttachment.adopt(p.iface(), pins.linkPath(p.iface()).toString());
                    dp.adopt(a);
                    a.replaceProgram(dp.programFd()); // atomic: every frame meets the old or the new program
                    how = "adopted pinned ";
                } else if (config.attach() == GatewayConfig.AttachMode.DISPATCHER) {
                    // A pinned gateway's earlier program, left in the dispatcher, leaves it only once this one runs there
                    DispatcherAttachment d = dp.attachThroughDispatcher(p.iface());
                    LOG.info(String.format("attached to %s (ifindex %d, %s, native mode, through libxdp's dispatcher as"
                                    + " program id %d%s; the dispatcher runs %s)", p.iface(), d.ifindex(), p.form().configName(),
                            d.programId(), d.predecessors().isEmpty() ? "" : ", taking over from pinned program id "
                                    + d.predecessors().stream().map(String::valueOf).collect(java.util.stream.Collectors.joining(", ")),
                            XdpDispatcher.components(d.ifindex()).stream()
                                    .map(c -> c.name() + " (id " + c.id() + ", priority " + c.priority() + ")").toList()));
                    continue;
                } else {
                    a = dp.attach(p.iface(), config.attach() == GatewayConfig.AttachMode.NATIVE_OR_GENERIC);
                    created.add(a);
                    if (pins != null) a.pin(pins.linkPath(p.iface()).toString());
                    how = pins != null ? "pinned " : "";
                }
                LOG.info(String.format("attached to %s (ifindex %d, %s, %s mode, %sXDP link %d)", p.iface(), a.ifindex(),
                        p.form().configName(), a.mode().label(), how, a.linkId()));
            }
        } catch (RuntimeException e) {
            if (pins != null) {
                // Leave what was pinned before this start forwarding; take back only what this start attached.
                for (XdpAttachment a : created) {
                    try {
                        java.nio.file.Files.deleteIfExists(pins.linkPath(a.ifname()));
                    } catch (IOException io) {
                        e.addSuppressed(io);
                    }
                    a.detach();
                }
                if (!adopting) pins.remove();
                dp.releaseAll();
            }
            dp.close(); // detaches whatever was attached (and not pinned) before the failure
            throw e;
        }
        this.dataplane = dp;
        this.lastGoodReloadEpochSeconds = System.currentTimeMillis() / 1000.0;
        MetricsServer m = null;
        if (config.metrics().isPresent()) {
            GatewayConfig.MetricsEndpoint ep = config.metrics().get();
            try {
                m = new MetricsServer(ep.host(), ep.port(), this::prometheusText);
                LOG.info("metrics on http://{}:{}/metrics", ep.host().contains(":") ? "[" + ep.host() + "]" : ep.host(), m.port());
            } catch (RuntimeException e) {
                dp.close();
                throw e;
            }
        }
        this.metrics = m;
        this.watcher = config.reload() ? Thread.ofPlatform().daemon(true).name("xaf-gateway-reload").start(this::watchConfig) : null;
    }

    /** Validates {@code configFile}, attaches and programs the gateway. Throws with a clear message on any problem. */
    public static GatewayService start(Path configFile) {
        return start(configFile, null);
    }

    /**
     * As {@link #start(Path)}; with a {@code pinName} the XDP links and maps are pinned under
     * {@link GatewayPins#forGateway}, and what a previous gateway of that name pinned is adopted: its maps (routes,
     * counters) are reused and its links switched to the new program atomically, so forwarding never stops.
     */
    public static GatewayService start(Path configFile, String pinName) {
        return start(configFile, pinName, false);
    }

    /**
     * As {@link #start(Path, String)}; {@code routesFromRegistry}: the routes come from a route registry, not from
     * the file, so an adopted route map is left as it is (it keeps forwarding) until the registry's routes are applied.
     */
    public static GatewayService start(Path configFile, String pinName, boolean routesFromRegistry) {
        return start(configFile, pinName, routesFromRegistry, null);
    }

    /**
     * As {@link #start(Path, String, boolean)}; a non-null {@code attach} (the command line's {@code --attach})
     * replaces the file's {@code attach:} word, now and on every reload. With a {@code pinName} in dispatcher mode,
     * the maps are pinned (libxdp pins the program's place in each dispatcher itself) and a restart's program joins
     * each dispatcher before the one it replaces leaves ({@link DispatcherAttachment}), so no frame is lost.
     */
    public static GatewayService start(Path configFile, String pinName, boolean routesFromRegistry, GatewayConfig.AttachMode attach) {
        GatewayConfig config = withAttach(GatewayConfigParser.parse(configFile), attach);
        return new GatewayService(configFile, config, pinName, routesFromRegistry, attach);
    }

    private static GatewayConfig withAttach(GatewayConfig c, GatewayConfig.AttachMode attach) {
        if (attach == null || attach == c.attach()) return c;
        return new GatewayConfig(attach, c.metrics(), c.reload(), c.ports(), c.routes(), c.maxHopLimit());
    }

    /** The maps alone for the dispatcher: the pinned ones when a gateway of this name is pinned, else new ones. */
    private static XafDataplane loadForDispatcher(GatewayPins pins) {
        if (pins == null || !pins.hasMaps()) return XafDataplane.loadForDispatcher();
        Map<String, Integer> fds = pins.openMaps();
        try {
            return XafDataplane.loadForDispatcher(fds);
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot adopt the gateway pinned at " + pins.dir() + " (" + e.getMessage()
                    + "); 'xaf gateway unpin' removes it (forwarding stops until the new gateway attaches)", e);
        } finally {
            GatewayPins.closeAll(fds);
        }
    }

    private static XafDataplane loadDataplane(GatewayPins pins) {
        if (pins == null || !pins.hasMaps()) return XafDataplane.load();
        Map<String, Integer> fds = pins.openMaps();
        try {
            return XafDataplane.loadReusing(fds);
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot adopt the gateway pinned at " + pins.dir() + " (" + e.getMessage()
                    + "); 'xaf gateway unpin' removes it (forwarding stops until the new gateway attaches)", e);
        } finally {
            GatewayPins.closeAll(fds);
        }
    }

    /**
     * Makes the ports, tx_ports and port_mtus maps hold exactly the configured ports with the MTUs their interfaces
     * have now (writing only what differs).
     */
    private static void programPorts(XafDataplane dp, GatewayConfig config) {
        Map<Integer, XafDataplane.PortEntry> current = dp.ports();
        Set<Integer> slots = new HashSet<>();
        for (GatewayConfig.PortConfig p : config.ports()) {
            int ifindex = Syscalls.ifNameToIndex(p.iface());
            XafDataplane.PortEntry want = new XafDataplane.PortEntry(p.slot(), p.form().code(), config.maxHopLimit());
            if (!want.equals(current.remove(ifindex))) dp.setPort(ifindex, p.slot(), p.form().code(), config.maxHopLimit());
            int mtu = Syscalls.mtu(p.iface());
            if (dp.txPort(p.slot()) != ifindex) dp.setTxPort(p.slot(), ifindex, mtu);
            else if (dp.portMtu(p.slot()) != mtu) dp.setPortMtu(p.slot(), mtu);
            slots.add(p.slot());
        }
        for (int stale : current.keySet()) dp.deletePort(stale);
        for (int slot = 0; slot < io.xaforward.dataplane.SharedLayouts.MAX_PORTS; slot++) {
            if (!slots.contains(slot) && dp.txPort(slot) != 0) dp.deleteTxPort(slot);
        }
    }

    /** Where this gateway is pinned, or null when it is not. */
    public GatewayPins pins() { return pins; }

    @Override
    public GatewayConfig config() { return config; }

    public int reloadCount() {
        synchronized (this) { return reloads; }
    }

    public synchronized CounterSnapshot counters() {
        return dataplane.counters();
    }

    /** Per-port packets and bytes by port slot (see {@link io.xaforward.dataplane.PortCounterSnapshot}). */
    public synchronized io.xaforward.dataplane.PortCounterSnapshot portCounters() {
        return dataplane.portCounters();
    }

    /**
     * Reads every port's MTU again and gives the data plane the ones that changed (on reload: an operator who raises
     * or lowers a link's MTU reloads the gateway, no restart needed).
     */
    private void refreshMtus(GatewayConfig c) {
        for (GatewayConfig.PortConfig p : c.ports()) {
            int mtu = Syscalls.mtu(p.iface());
            int was = dataplane.portMtu(p.slot());
            if (was != mtu) {
                dataplane.setPortMtu(p.slot(), mtu);
                LOG.info("{}: MTU {} (was {})", p.iface(), mtu, was);
            }
        }
    }

    /**
     * Gives every port the hop limit cap of {@code c} where the ports map holds another (a reload that changes
     * {@code max-hop-limit}); one map element per port, each updated atomically.
     */
    private void refreshHopLimitCap(GatewayConfig c) {
        Map<Integer, XafDataplane.PortEntry> current = dataplane.ports();
        for (GatewayConfig.PortConfig p : c.ports()) {
            int ifindex = ifindexes.get(p.iface());
            XafDataplane.PortEntry was = current.get(ifindex);
            if (was == null || was.maxHopLimit() != c.maxHopLimit()) {
                dataplane.setPort(ifindex, p.slot(), p.form().code(), c.maxHopLimit());
                LOG.info("{}: hop limit cap {} (was {})", p.iface(), c.maxHopLimit(), was == null ? "none" : was.maxHopLimit());
            }
        }
    }

    /** The ports map as the kernel holds it (ifindex -> slot, form, hop limit cap). */
    public synchronized Map<Integer, XafDataplane.PortEntry> portEntries() {
        return dataplane.ports();
    }

    /** The egress limit the data plane applies to frames leaving by {@code iface} (its MTU at start or last reload). */
    public synchronized int portMtu(String iface) {
        return dataplane.portMtu(config.port(iface).orElseThrow(() -> new IllegalArgumentException("no port " + iface)).slot());
    }

    /** The ifindex of a port, as resolved at start-up. */
    public int ifindex(String iface) {
        return ifindexes.get(iface);
    }

    public int metricsPort() {
        return metrics == null ? -1 : metrics.port();
    }

    private static int resolveIfindex(String iface) {
        try {
            return Syscalls.ifNameToIndex(iface);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("interface '" + iface + "' does not exist in this network namespace"
                    + " (run the gateway in the namespace that has it, e.g. ip netns exec NS xaf gateway ...)");
        }
    }

    private static byte[] readMac(String iface) {
        // ioctl in this process's network namespace: right under 'ip netns exec' and 'nsenter --net' alike.
        try {
            return Syscalls.hardwareAddress(iface);
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot read the MAC address of '" + iface + "': " + e.getMessage(), e);
        }
    }

    /** The route map entry of {@code r}; {@code macs}: each port's own MAC (a route's source MAC unless it names one). */
    static Route toRoute(GatewayConfig c, GatewayConfig.RouteConfig r, Map<String, byte[]> macs) {
        long ingressMask = 0;
        for (String in : r.ingress()) ingressMask |= 1L << c.port(in).orElseThrow().slot();
        if (r.action() == GatewayConfig.Action.LOCAL) {
            return Route.local(ingressMask, r.jobId(), r.jobToken());
        }
        String egress = r.egress().orElseThrow();
        GatewayConfig.PortConfig port = c.port(egress).orElseThrow();
        NetworkForm form = r.form().orElse(port.form());
        byte[] srcMac = r.srcMac().orElseGet(() -> macs.get(egress));
        return Route.forward(port.slot(), form.code(), ingressMask, r.jobId(), r.jobToken(), r.srcId(), srcMac,
                r.dstMac().orElseThrow(), r.srcIp().orElse(null), r.dstIp().orElse(null), r.srcPort(), r.dstPort())
                .withSrcPortSpan(r.srcPortSpan());
    }

    private void watchConfig() {
        FileTime last = mtime();
        while (!closing) {
            try {
                Thread.sleep(RELOAD_POLL_MS);
            } catch (InterruptedException e) {
                return;
            }
            FileTime now = mtime();
            if (now == null || now.equals(last)) continue;
            last = now;
            try {
                reload();
            } catch (StableFileReader.StillBeingWritten e) {
                LOG.warn("reload postponed, keeping the running routes: {}", e.getMessage());
                last = null; // the next poll tries again
            } catch (RuntimeException e) {
                LOG.warn("reload rejected, keeping the running routes: {}", e.getMessage());
            }
        }
    }

    private FileTime mtime() {
        try {
            return Files.getLastModifiedTime(configFile);
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * Re-reads the config file (waiting until it stops changing, see {@link StableFileReader} for the settle rule)
     * and applies it with {@link #apply}. Called by the file watcher and on SIGHUP.
     */
    public void reload() {
        GatewayConfig next;
        try {
            next = GatewayConfigParser.parse(configReader.read(), configFile.toString(),
                    dataplane.routesMap().maxEntries());
        } catch (GatewayConfigParser.UnsafeConfigFile e) {
            // The file is checked at every reload, as at start: one that someone else could have written is not
            // applied, whatever it holds; the running config stays (the caller logs the reason).
            synchronized (this) { fileRefusals++; }
            recordReload(false);
            throw e;
        } catch (RuntimeException e) {
            recordReload(false);
            throw e;
        }
        apply(next);
    }

    /**
     * Makes the gateway run {@code next}: all or nothing. Ports cannot change without a restart. Routes are
     * reconciled against the routes the gateway installed ({@link RouteReconciler}: one map write per added, changed
     * or removed route, the map is not read back; added and changed first, removed last); if any map write
     * fails, the map is restored to what it held and the running config stays. The entry point for every source
     * of configs (the file, SIGHUP, a registry).
     */
    public synchronized void apply(GatewayConfig next) {
        RouteReconciler.Result result;
        if (next.attach() != config.attach()) {
            // The interfaces stay attached as they are; only a restart changes how.
            if (attachOverride == null) {
                LOG.warn("{}: attach: {} needs a restart; the gateway stays attached as {}", configFile,
                        next.attach().configName(), config.attach().configName());
            }
            next = withAttach(next, config.attach());
        }
        try {
            if (!next.ports().equals(config.ports())) {
                throw new IllegalArgumentException(configFile + ": ports changed; port changes need a restart");
            }
            Map<Integer, Route> wanted = new LinkedHashMap<>();
            for (GatewayConfig.RouteConfig r : next.routes()) wanted.put(r.networkId(), toRoute(next, r, macs));
            refreshMtus(next);
            result = reconciler.apply(wanted);
            refreshHopLimitCap(next);
        } catch (RuntimeException e) {
            recordReload(false);
            throw e;
        }
        config = next;
        reloads++;
        recordReload(true);
        LOG.info("reloaded {}: {} added, {} changed, {} removed", configFile, result.added(), result.changed(),
                result.removed());
    }

    private synchronized void recordReload(boolean success) {
        lastReloadSuccess = success;
        lastReloadEpochSeconds = System.currentTimeMillis() / 1000.0;
        if (success) lastGoodReloadEpochSeconds = lastReloadEpochSeconds; else reloadFailures++;
    }

    /**
     * Replaces the routes by {@code routes} (from a route registry) through {@link #apply}: the same all-or-nothing,
     * add-first/remove-last rule as a file reload. The ports stay as they are.
     */
    @Override
    public void applyRoutes(List<GatewayConfig.RouteConfig> routes) {
        GatewayConfig c = config;
        apply(new GatewayConfig(c.attach(), c.metrics(), c.reload(), c.ports(), List.copyOf(routes), c.maxHopLimit()));
    }

    /** Stops following the config file (a route registry owns the routes instead). */
    public void stopWatchingFile() {
        if (watcher != null) watcher.interrupt();
    }

    /** Adds lines (Prometheus text) to every metrics answer, e.g. the route registry's state. */
    @Override
    public void addMetrics(Supplier<String> lines) {
        extraMetrics.add(lines);
    }

    /** Counters in the Prometheus text format. */
    public String prometheusText() {
        CounterSnapshot s = counters();
        StringBuilder b = new StringBuilder(2048);
        b.append("# HELP xaf_rx_packets_total XAF frames received by the XDP program (each also counts once under an outcome).\n")
                .append("# TYPE xaf_rx_packets_total counter\nxaf_rx_packets_total ").append(s.packets(Counter.RX_XAF)).append('\n');
        b.append("# HELP xaf_rx_bytes_total Bytes of the XAF frames received by the XDP program.\n")
                .append("# TYPE xaf_rx_bytes_total counter\nxaf_rx_bytes_total ").append(s.bytes(Counter.RX_XAF)).append('\n');
        b.append("# HELP xaf_packets_total Frames seen by the XAForward XDP program, by outcome.\n");
        b.append("# TYPE xaf_packets_total counter\n");
        for (Counter c : Counter.values()) {
            if (c == Counter.RX_XAF) continue;
            b.append("xaf_packets_total{outcome=\"").append(c.name().toLowerCase(Locale.ROOT)).append("\"} ").append(s.packets(c)).append('\n');
        }
        b.append("# HELP xaf_bytes_total Bytes of the frames seen by the XAForward XDP program, by outcome.\n");
        b.append("# TYPE xaf_bytes_total counter\n");
        for (Counter c : Counter.values()) {
            if (c == Counter.RX_XAF) continue;
            b.append("xaf_bytes_total{outcome=\"").append(c.name().toLowerCase(Locale.ROOT)).append("\"} ").append(s.bytes(c)).append('\n');
        }
        appendPortCounters(b, portCounters(), config.ports());
        b.append("# HELP xaf_port_mtu_bytes The MTU the gateway applies to frames leaving by the port (read at start and on reload).\n")
                .append("# TYPE xaf_port_mtu_bytes gauge\n");
        for (GatewayConfig.PortConfig port : config.ports()) {
            b.append("xaf_port_mtu_bytes{port=\"").append(port.iface()).append("\"} ").append(portMtu(port.iface())).append('\n');
        }
        b.append("# HELP xaf_port_max_hop_limit The hop limit cap the data plane applies to frames arriving on the port (max-hop-limit).\n")
                .append("# TYPE xaf_port_max_hop_limit gauge\n");
        Map<Integer, XafDataplane.PortEntry> portMap = portEntries();
        for (GatewayConfig.PortConfig port : config.ports()) {
            XafDataplane.PortEntry e = portMap.get(ifindexes.get(port.iface()));
            b.append("xaf_port_max_hop_limit{port=\"").append(port.iface()).append("\"} ").append(e == null ? 0 : e.maxHopLimit()).append('\n');
        }
        b.append("# HELP xaf_routes Routes programmed.\n# TYPE xaf_routes gauge\nxaf_routes ").append(config.routes().size()).append('\n');
        synchronized (this) {
            b.append("# HELP xaf_config_reloads_total Successful config reloads.\n# TYPE xaf_config_reloads_total counter\n")
                    .append("xaf_config_reloads_total ").append(reloads).append('\n');
            b.append("# HELP xaf_config_reload_failures_total Config reloads rejected (the running routes stayed).\n")
                    .append("# TYPE xaf_config_reload_failures_total counter\n")
                    .append("xaf_config_reload_failures_total ").append(reloadFailures).append('\n');
            b.append("# HELP xaf_config_file_refusals_total Config reloads refused because the file failed its owner, mode or"
                    + " symbolic-link check (also counted in xaf_config_reload_failures_total).\n")
                    .append("# TYPE xaf_config_file_refusals_total counter\n")
                    .append("xaf_config_file_refusals_total ").append(fileRefusals).append('\n');
            b.append("# HELP xaf_config_last_reload_successful Whether the last reload attempt was applied (1) or rejected (0).\n")
                    .append("# TYPE xaf_config_last_reload_successful gauge\nxaf_config_last_reload_successful ").append(lastReloadSuccess ? 1 : 0).append('\n');
            b.append("# HELP xaf_config_last_reload_attempt_timestamp_seconds When the last reload was attempted (Unix time; 0: never).\n")
                    .append("# TYPE xaf_config_last_reload_attempt_timestamp_seconds gauge\nxaf_config_last_reload_attempt_timestamp_seconds ")
                    .append((long) lastReloadEpochSeconds).append('\n');
            b.append("# HELP xaf_config_last_reload_success_timestamp_seconds When the running config was applied (Unix time).\n")
                    .append("# TYPE xaf_config_last_reload_success_timestamp_seconds gauge\nxaf_config_last_reload_success_timestamp_seconds ")
                    .append((long) lastGoodReloadEpochSeconds).append('\n');
        }
        for (Supplier<String> extra : extraMetrics) b.append(extra.get());
        return b.toString();
    }

    /** The per-port families of EngineMetrics, from the XDP program's per-port counters (by each port's slot). */
    static void appendPortCounters(StringBuilder b, io.xaforward.dataplane.PortCounterSnapshot p, List<GatewayConfig.PortConfig> ports) {
        EngineMetrics.appendPortCounters(b, ports, (i, f) -> {
            int slot = ports.get(i).slot();
            return switch (f) {
                case RX_PACKETS -> p.rxPackets(slot);
                case RX_BYTES -> p.rxBytes(slot);
                case TX_PACKETS -> p.txPackets(slot);
                case TX_BYTES -> p.txBytes(slot);
                case TX_TOO_BIG -> p.txTooBig(slot);
            };
        });
    }

    /** Blocks until {@link #close()} is called (from a shutdown hook, on SIGTERM or SIGINT). */
    public void awaitStop() throws InterruptedException {
        stopped.await();
    }

    @Override
    public synchronized void close() {
        if (closing) return;
        closing = true;
        try {
            if (watcher != null) watcher.interrupt();
            if (metrics != null) metrics.close();
            if (pins != null && pins.hasMaps()) {
                dataplane.releaseAll(); // the pins keep the program attached, on purpose
                dataplane.close();
                LOG.info("left {} attached and pinned at {}: it keeps forwarding with its routes until a gateway with"
                        + " the same name adopts it, or 'xaf gateway unpin' detaches it", String.join(", ", ifindexes.keySet()), pins.dir());
            } else {
                dataplane.close();
                LOG.info("detached from {}", String.join(", ", ifindexes.keySet()));
            }
        } finally {
            stopped.countDown();
        }
    }
}
