package io.xaforward.gateway;

import io.xaforward.dataplane.CounterSnapshot;
import io.xaforward.dataplane.GatewayPins;
import io.xaforward.dataplane.PortCounterSnapshot;
import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.XafDataplane;
import io.xaforward.dataplane.sys.Syscalls;
import io.xaforward.gateway.registry.RouteRegistryWatch;
import io.xaforward.protocol.NetworkForm;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.function.Supplier;

/**
 * A running XAForward gateway: the XDP program attached to every configured interface, routes programmed from
 * the config file, counters served to Prometheus, and the file watched for route changes.
 *
 * <p>It composes the parts and owns what they share, the running config and how a new one is applied
 * ({@link #apply}): {@link GatewayLifecycle} attaches at start (or adopts a pinned predecessor: the hitless restart)
 * and detaches at the end, {@link ConfigFileWatcher} follows the config file, {@link GatewayMetricsText} writes the
 * metrics text a {@link MetricsServer} serves, and {@link ReloadCounters} counts the reloads for it.
 *
 * <p>Start-up checks everything that can be checked before touching the kernel (config, interfaces, privileges),
 * so a bad config leaves nothing attached. {@link #close()} detaches from every interface it attached to.
 */
public final class GatewayService implements AutoCloseable, RouteRegistryWatch.Routes {
    private static final Logger LOG = LoggerFactory.getLogger(GatewayService.class);

    private final Path configFile;
    private final GatewayLifecycle lifecycle;
    private final ReloadCounters reloadCounters;
    private final ConfigFileWatcher watcher;
    private final GatewayMetricsText metricsText;
    private final MetricsServer metrics;
    private final CountDownLatch stopped = new CountDownLatch(1);
    private volatile GatewayConfig config;
    private volatile boolean closing;
    /** The attach mode given on the command line ({@code --attach}), which wins over the file's; null when none. */
    private final GatewayConfig.AttachMode attachOverride;

    private GatewayService(Path configFile, GatewayConfig config, String pinName, boolean routesFromRegistry,
                           GatewayConfig.AttachMode attachOverride) {
        this.attachOverride = attachOverride;
        this.configFile = configFile;
        this.config = config;
        this.lifecycle = GatewayLifecycle.start(config, pinName, routesFromRegistry);
        this.reloadCounters = new ReloadCounters();
        this.watcher = new ConfigFileWatcher(configFile, lifecycle.dataplane().routesMap().maxEntries(), reloadCounters,
                this::apply);
        this.metricsText = new GatewayMetricsText(this, reloadCounters);
        MetricsServer m = null;
        if (config.metrics().isPresent()) {
            GatewayConfig.MetricsEndpoint ep = config.metrics().get();
            try {
                m = new MetricsServer(ep.host(), ep.port(), metricsText::render);
                LOG.info("metrics on http://{}:{}/metrics", ep.host().contains(":") ? "[" + ep.host() + "]" : ep.host(), m.port());
            } catch (RuntimeException e) {
                lifecycle.dataplane().close();
                throw e;
            }
        }
        this.metrics = m;
        if (config.reload()) watcher.start();
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
     * each dispatcher before the one it replaces leaves ({@code DispatcherAttachment}), so no
     * frame is lost.
     */
    public static GatewayService start(Path configFile, String pinName, boolean routesFromRegistry, GatewayConfig.AttachMode attach) {
        GatewayConfig config = withAttach(GatewayConfigParser.parse(configFile), attach);
        return new GatewayService(configFile, config, pinName, routesFromRegistry, attach);
    }

    private static GatewayConfig withAttach(GatewayConfig c, GatewayConfig.AttachMode attach) {
        if (attach == null || attach == c.attach()) return c;
        return new GatewayConfig(attach, c.metrics(), c.reload(), c.ports(), c.routes(), c.maxHopLimit());
    }

    /** Where this gateway is pinned, or null when it is not. */
    public GatewayPins pins() { return lifecycle.pins(); }

    @Override
    public GatewayConfig config() { return config; }

    public int reloadCount() {
        return reloadCounters.reloads();
    }

    public synchronized CounterSnapshot counters() {
        return lifecycle.dataplane().counters();
    }

    /** Per-port packets and bytes by port slot (see {@link PortCounterSnapshot}). */
    public synchronized PortCounterSnapshot portCounters() {
        return lifecycle.dataplane().portCounters();
    }

    /**
     * Reads every port's MTU again and gives the data plane the ones that changed (on reload: an operator who raises
     * or lowers a link's MTU reloads the gateway, no restart needed).
     */
    private void refreshMtus(GatewayConfig c) {
        XafDataplane dataplane = lifecycle.dataplane();
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
        XafDataplane dataplane = lifecycle.dataplane();
        Map<Integer, XafDataplane.PortEntry> current = dataplane.ports();
        for (GatewayConfig.PortConfig p : c.ports()) {
            int ifindex = lifecycle.ifindex(p.iface());
            XafDataplane.PortEntry was = current.get(ifindex);
            if (was == null || was.maxHopLimit() != c.maxHopLimit()) {
                dataplane.setPort(ifindex, p.slot(), p.form().code(), c.maxHopLimit());
                LOG.info("{}: hop limit cap {} (was {})", p.iface(), c.maxHopLimit(), was == null ? "none" : was.maxHopLimit());
            }
        }
    }

    /** The ports map as the kernel holds it (ifindex -> slot, form, hop limit cap). */
    public synchronized Map<Integer, XafDataplane.PortEntry> portEntries() {
        return lifecycle.dataplane().ports();
    }

    /** The egress limit the data plane applies to frames leaving by {@code iface} (its MTU at start or last reload). */
    public synchronized int portMtu(String iface) {
        return lifecycle.dataplane().portMtu(config.port(iface).orElseThrow(() -> new IllegalArgumentException("no port " + iface)).slot());
    }

    /** The ifindex of a port, as resolved at start-up. */
    public int ifindex(String iface) {
        return lifecycle.ifindex(iface);
    }

    public int metricsPort() {
        return metrics == null ? -1 : metrics.port();
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

    /** The route map entries of every route of {@code c}, by network identifier, in the config's order. */
    static Map<Integer, Route> routesOf(GatewayConfig c, Map<String, byte[]> macs) {
        Map<Integer, Route> wanted = new LinkedHashMap<>();
        for (GatewayConfig.RouteConfig r : c.routes()) wanted.put(r.networkId(), toRoute(c, r, macs));
        return wanted;
    }

    /**
     * Re-reads the config file (waiting until it stops changing, see {@link StableFileReader} for the settle rule)
     * and applies it with {@link #apply}. Called by the file watcher and on SIGHUP.
     */
    public void reload() {
        watcher.reload();
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
            Map<Integer, Route> wanted = routesOf(next, lifecycle.macs());
            refreshMtus(next);
            result = lifecycle.reconciler().apply(wanted);
            refreshHopLimitCap(next);
        } catch (RuntimeException e) {
            reloadCounters.rejected();
            throw e;
        }
        config = next;
        reloadCounters.applied();
        LOG.info("reloaded {}: {} added, {} changed, {} removed", configFile, result.added(), result.changed(),
                result.removed());
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
        watcher.stop();
    }

    /** Adds lines (Prometheus text) to every metrics answer, e.g. the route registry's state. */
    @Override
    public void addMetrics(Supplier<String> lines) {
        metricsText.add(lines);
    }

    /** Counters in the Prometheus text format. */
    public String prometheusText() {
        return metricsText.render();
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
            watcher.stop();
            if (metrics != null) metrics.close();
            lifecycle.stop();
        } finally {
            stopped.countDown();
        }
    }
}
