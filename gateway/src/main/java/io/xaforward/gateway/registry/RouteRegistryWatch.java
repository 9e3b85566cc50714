package io.xaforward.gateway.registry;

import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.GatewayConfigParser;
import io.xaforward.gateway.GatewayService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Keeps a gateway's routes equal to the entries under an etcd prefix ({@code xaf gateway --registry URL}). Each
 * key holds one route, written as a route entry of the gateway config file (YAML or JSON). Every change is applied
 * through {@link GatewayService#applyRoutes}, the file reload's path: the whole set is validated first (one bad
 * entry rejects the update and keeps the running routes), then new routes are added before old ones are removed.
 *
 * <p>When etcd cannot be reached the gateway keeps forwarding on the last routes it had, reports
 * {@code xaf_registry_up 0} and counts the failure, and resynchronises (a full read, then a new watch) once etcd
 * answers again.
 */
public final class RouteRegistryWatch implements AutoCloseable {
    private static final long RETRY_MS = 1000;
    private static final Logger LOG = LoggerFactory.getLogger(RouteRegistryWatch.class);

    private final GatewayService service;
    private final EtcdClient etcd;
    private final String prefix;
    private final Map<String, String> entries = new TreeMap<>();
    private final AtomicLong updates = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private volatile boolean up;
    private volatile boolean closing;
    private Thread thread;

    public RouteRegistryWatch(GatewayService service, EtcdClient etcd, String prefix) {
        if (!prefix.startsWith("/")) throw new IllegalArgumentException("registry prefix must start with '/', was " + prefix);
        this.service = service;
        this.etcd = etcd;
        this.prefix = prefix.endsWith("/") ? prefix : prefix + "/";
    }

    /**
     * Reads the routes once (so the gateway starts with the registry's routes; an unreachable etcd fails here, before
     * the gateway reports ready) and then follows changes on a thread.
     */
    public RouteRegistryWatch start() {
        long revision = resync();
        service.addMetrics(this::prometheusText);
        thread = Thread.ofPlatform().daemon(true).name("xaf-gateway-registry").start(() -> follow(revision));
        return this;
    }

    public boolean up() { return up; }

    private long resync() {
        EtcdClient.Range r = etcd.range(prefix);
        synchronized (entries) {
            entries.clear();
            for (EtcdClient.KeyValue kv : r.kvs()) entries.put(kv.key(), kv.value());
            applyEntries();
        }
        up = true;
        return r.revision();
    }

    private void follow(long revision) {
        long from = revision + 1;
        while (!closing) {
            try {
                etcd.watch(prefix, from, events -> {
                    synchronized (entries) {
                        for (EtcdClient.Event e : events) {
                            if (e.deleted()) entries.remove(e.key()); else entries.put(e.key(), e.value());
                        }
                        applyEntries();
                    }
                });
            } catch (EtcdException e) {
                if (closing) return;
                errors.incrementAndGet();
                if (up) LOG.warn("route registry lost, keeping the last routes: {}", e.getMessage());
                up = false;
            }
            // Back off, then read everything again: changes made while we were away are not replayed.
            while (!closing) {
                try {
                    Thread.sleep(RETRY_MS);
                    from = resync() + 1;
                    LOG.info("route registry {}{} reachable again", etcd.endpoint(), prefix);
                    break;
                } catch (InterruptedException e) {
                    return;
                } catch (EtcdException e) {
                    errors.incrementAndGet();
                }
            }
        }
    }

    /** Validates the whole set as a config file would be, then applies it; a bad entry keeps the running routes. */
    private void applyEntries() {
        String source = "registry " + etcd.endpoint() + prefix;
        try {
            service.applyRoutes(parse(entries, service.config(), source));
            updates.incrementAndGet();
        } catch (RuntimeException e) {
            rejected.incrementAndGet();
            LOG.warn("registry update rejected, keeping the running routes: {}", e.getMessage());
        }
    }

    /** The routes of the registry entries, checked by the config file's parser against the gateway's ports. */
    static List<GatewayConfig.RouteConfig> parse(Map<String, String> entries, GatewayConfig current, String source) {
        Yaml yaml = new Yaml(new SafeConstructor(new LoaderOptions()));
        List<Object> routes = new ArrayList<>();
        for (var e : entries.entrySet()) {
            Object route;
            try {
                route = yaml.load(e.getValue());
            } catch (RuntimeException ex) {
                throw new IllegalArgumentException(source + ": " + e.getKey() + " is not YAML or JSON: " + ex.getMessage());
            }
            if (!(route instanceof Map<?, ?>)) throw new IllegalArgumentException(source + ": " + e.getKey() + " is not a route mapping");
            routes.add(route);
        }
        List<Object> ports = new ArrayList<>();
        for (GatewayConfig.PortConfig p : current.ports()) {
            Map<String, Object> port = new LinkedHashMap<>();
            port.put("interface", p.iface());
            port.put("form", p.form().configName());
            port.put("slot", p.slot());
            ports.add(port);
        }
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("metrics", false);
        config.put("reload", false);
        config.put("ports", ports);
        config.put("routes", routes);
        return GatewayConfigParser.parse(yaml.dump(config), source).routes();
    }

    String prometheusText() {
        return "# HELP xaf_registry_up Whether the route registry (etcd) answered the last time it was asked.\n"
                + "# TYPE xaf_registry_up gauge\nxaf_registry_up " + (up ? 1 : 0) + "\n"
                + "# HELP xaf_registry_updates_total Route sets applied from the registry.\n"
                + "# TYPE xaf_registry_updates_total counter\nxaf_registry_updates_total " + updates.get() + "\n"
                + "# HELP xaf_registry_errors_total Failed reads or watches of the registry (outages).\n"
                + "# TYPE xaf_registry_errors_total counter\nxaf_registry_errors_total " + errors.get() + "\n"
                + "# HELP xaf_registry_rejected_total Registry updates rejected as invalid (running routes kept).\n"
                + "# TYPE xaf_registry_rejected_total counter\nxaf_registry_rejected_total " + rejected.get() + "\n";
    }

    @Override
    public void close() {
        closing = true;
        if (thread != null) thread.interrupt();
        etcd.close();
    }
}
