package io.xaforward.gateway.registry;

import io.xaforward.common.EtcdClient;

import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.GatewayConfigParser;
import io.xaforward.gateway.GatewayService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * Keeps a gateway's routes equal to the entries under an etcd prefix ({@code xaf gateway --registry URL}). Each
 * key holds one route, written as a route entry of the gateway config file (YAML or JSON), and is read by the
 * file's strict parser ({@link GatewayConfigParser#parseRoute}: no YAML 1.1 coercions, duplicate keys rejected,
 * every value bounds-checked). Every change is applied through the file reload's path (new routes added before old
 * ones are removed).
 *
 * <p>A bad entry is named in the log, counted in {@code xaf_registry_rejected_total} and skipped: a key that held a
 * good route keeps that route, a new key adds nothing, and the other entries still apply. Two keys with the same
 * identifier: the key that sorts first wins, the other is skipped. An empty set (every key deleted, e.g. by
 * {@code etcdctl del --prefix}) is applied only while the key {@code PREFIX_empty} holds {@code true}
 * ({@link #EMPTY_MARKER}); otherwise it is refused and the running routes stay.
 *
 * <p>With {@link JobRoutes} instead ({@code --follow-jobs}), the prefix holds the jobs' rank registrations and each
 * route is derived from one; keys that give no route are passed over, and an empty set is applied (every job ended).
 *
 * <p>When etcd cannot be reached, or answers something malformed, the gateway keeps forwarding on the last routes
 * it had, reports {@code xaf_registry_up 0} and counts the failure, and its watch thread resynchronises (a full
 * read, then a new watch) once etcd answers again. SIGHUP forces a full re-read ({@link #resyncNow}).
 */
public final class RouteRegistryWatch implements AutoCloseable {
    /** The key, under the prefix, that allows an empty route set when it holds {@code true}. */
    public static final String EMPTY_MARKER = "_empty";
    private static final long RETRY_MS = 1000;
    private static final Logger LOG = LoggerFactory.getLogger(RouteRegistryWatch.class);

    /** How the values under the prefix become routes. */
    public interface Entries {
        /**
         * The route that {@code key}'s value gives, or empty for a key that holds none (passed over silently); a bad
         * value throws, with {@code source} (endpoint and key) in the message.
         */
        Optional<GatewayConfig.RouteConfig> route(String key, String value, String source, List<GatewayConfig.PortConfig> ports);

        /** Whether an empty route set is refused unless the prefix holds the {@link #EMPTY_MARKER}. */
        boolean emptyNeedsMarker();

        /**
         * Of the routes one pass gave (by key, after {@link #route} saw every entry), those to apply: the whole pass is
         * visible here, so a reader can bound what one group of keys takes ({@link JobRoutes}: each job's quota).
         */
        default Map<String, GatewayConfig.RouteConfig> admit(Map<String, GatewayConfig.RouteConfig> routes) {
            return routes;
        }

        /** Prometheus text of the reader's own counters, appended to the registry's. */
        default String metrics() {
            return "";
        }
    }

    /** Route entries written by the operator, one per key, in the config file's route syntax. */
    private static Entries operatorRoutes(String prefix) {
        return new Entries() {
            @Override
            public Optional<GatewayConfig.RouteConfig> route(String key, String value, String source,
                                                             List<GatewayConfig.PortConfig> ports) {
                if (key.equals(prefix + EMPTY_MARKER)) return Optional.empty();
                try {
                    return Optional.of(GatewayConfigParser.parseRoute(value, source, ports));
                } catch (GatewayConfigParser.ConfigException e) {
                    // The YAML parser's own message shows the offending line, and a route's line holds its job
                    // token: say where, not what (etcd values are never quoted in logs).
                    if (e.getMessage() != null && e.getMessage().contains(": not valid YAML")) {
                        throw new GatewayConfigParser.ConfigException(source + ": not valid YAML (" + value.length()
                                + " chars, not shown)");
                    }
                    throw e;
                }
            }

            @Override
            public boolean emptyNeedsMarker() {
                return true;
            }
        };
    }

    /** Where the routes go: the running gateway ({@link GatewayService}). */
    public interface Routes {
        GatewayConfig config();

        void applyRoutes(List<GatewayConfig.RouteConfig> routes);

        void addMetrics(Supplier<String> lines);
    }

    private final Routes target;
    private final EtcdClient etcd;
    private final String prefix;
    private final Entries reader;
    /** The registry's values by key, and the last good route of each key (kept while its value is bad). */
    private final Map<String, String> entries = new TreeMap<>();
    private final Map<String, GatewayConfig.RouteConfig> good = new HashMap<>();
    /** Values already reported as bad, so one bad value is logged and counted once. */
    private final Map<String, String> reported = new HashMap<>();
    private final AtomicLong updates = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private final AtomicLong emptyRefused = new AtomicLong();
    private final AtomicLong resyncs = new AtomicLong();
    /** The store revision of the last full read: watch events at or before it are already in {@link #entries}. */
    private long readRevision;
    private volatile boolean up;
    private volatile boolean closing;
    private Thread thread;

    /** Routes written by the operator under {@code prefix}, one route entry per key. */
    public RouteRegistryWatch(Routes target, EtcdClient etcd, String prefix) {
        this(target, etcd, prefix, null);
    }

    /** The routes that {@code reader} makes of the values under {@code prefix} (null: the operator's route entries). */
    public RouteRegistryWatch(Routes target, EtcdClient etcd, String prefix, Entries reader) {
        if (!prefix.startsWith("/")) throw new IllegalArgumentException("registry prefix must start with '/', was " + prefix);
        this.target = target;
        this.etcd = etcd;
        this.prefix = prefix.endsWith("/") ? prefix : prefix + "/";
        this.reader = reader != null ? reader : operatorRoutes(this.prefix);
    }

    /**
     * Reads the routes once (so the gateway starts with the registry's routes; an unreachable etcd fails here, before
     * the gateway reports ready) and then follows changes on a thread.
     */
    public RouteRegistryWatch start() {
        long revision = resync();
        target.addMetrics(this::prometheusText);
        thread = Thread.ofPlatform().daemon(true).name("xaf-gateway-registry").start(() -> follow(revision));
        return this;
    }

    /** Whether the registry answered the last read and the watch thread is running. */
    public boolean up() {
        Thread t = thread;
        return up && t != null && t.isAlive();
    }

    /**
     * A full re-read of the registry, applied at once (SIGHUP). A failure is counted, shown as
     * {@code xaf_registry_up 0} and thrown; the watch thread keeps trying on its own.
     */
    public void resyncNow() {
        try {
            resync();
        } catch (RuntimeException e) {
            errors.incrementAndGet();
            up = false;
            throw e;
        }
    }

    private long resync() {
        EtcdClient.Range r = etcd.range(prefix);
        synchronized (entries) {
            entries.clear();
            for (EtcdClient.KeyValue kv : r.kvs()) entries.put(kv.key(), kv.value());
            readRevision = Math.max(readRevision, r.revision());
            applyEntries();
        }
        resyncs.incrementAndGet();
        up = true;
        return r.revision();
    }

    private void follow(long revision) {
        long from = revision + 1;
        while (!closing) {
            try {
                etcd.watch(prefix, from, this::onEvents);
            } catch (RuntimeException e) { // unreachable, or a malformed answer: never let the thread die
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
                } catch (RuntimeException e) {
                    errors.incrementAndGet();
                    up = false;
                }
            }
        }
    }

    private void onEvents(List<EtcdClient.Event> events) {
        synchronized (entries) {
            boolean changed = false;
            for (EtcdClient.Event e : events) {
                if (e.modRevision() != 0 && e.modRevision() <= readRevision) continue; // already read (SIGHUP re-sync)
                if (e.deleted()) entries.remove(e.key()); else entries.put(e.key(), e.value());
                changed = true;
            }
            if (changed) applyEntries();
        }
    }

    /** Parses every entry (skipping bad ones, see the class comment) and applies the set. */
    private void applyEntries() {
        GatewayConfig current = target.config();
        Map<String, GatewayConfig.RouteConfig> byKey = new LinkedHashMap<>();
        Map<Integer, String> owner = new HashMap<>();
        good.keySet().retainAll(entries.keySet());
        reported.keySet().retainAll(entries.keySet());
        for (var e : entries.entrySet()) {
            String key = e.getKey();
            GatewayConfig.RouteConfig route;
            try {
                Optional<GatewayConfig.RouteConfig> r = reader.route(key, e.getValue(), "registry " + etcd.endpoint() + key,
                        current.ports());
                if (r.isEmpty()) {
                    good.remove(key);
                    continue;
                }
                route = r.get();
                String other = owner.get(route.networkId());
                if (other != null) {
                    throw new GatewayConfigParser.ConfigException("registry " + etcd.endpoint() + key + ": identifier "
                            + String.format("0x%08x", route.networkId()) + " already has a route, from " + other);
                }
                good.put(key, route);
            } catch (RuntimeException ex) {
                report(key, e.getValue(), ex.getMessage());
                route = good.get(key);
                if (route == null || owner.containsKey(route.networkId())) continue;
            }
            owner.put(route.networkId(), key);
            byKey.put(key, route);
        }
        List<GatewayConfig.RouteConfig> routes = new ArrayList<>(reader.admit(byKey).values());
        if (routes.isEmpty() && !current.routes().isEmpty() && reader.emptyNeedsMarker()
                && !"true".equals(entries.get(prefix + EMPTY_MARKER))) {
            emptyRefused.incrementAndGet();
            LOG.warn("registry {}{} holds no routes: refused, keeping the {} running routes (put '{}' = true under the"
                    + " prefix to allow an empty route set)", etcd.endpoint(), prefix, current.routes().size(), EMPTY_MARKER);
            return;
        }
        try {
            target.applyRoutes(routes);
            updates.incrementAndGet();
        } catch (RuntimeException e) {
            rejected.incrementAndGet();
            LOG.warn("registry update rejected, keeping the running routes: {}", e.getMessage());
        }
    }

    private void report(String key, String value, String why) {
        if (value.equals(reported.put(key, value))) return;
        rejected.incrementAndGet();
        LOG.warn("registry entry skipped ({}): {}", good.containsKey(key) ? "its last good route stays" : "no route", why);
    }

    String prometheusText() {
        return "# HELP xaf_registry_up Whether the route registry (etcd) answered the last read and is being watched.\n"
                + "# TYPE xaf_registry_up gauge\nxaf_registry_up " + (up() ? 1 : 0) + "\n"
                + "# HELP xaf_registry_updates_total Route sets applied from the registry.\n"
                + "# TYPE xaf_registry_updates_total counter\nxaf_registry_updates_total " + updates.get() + "\n"
                + "# HELP xaf_registry_resyncs_total Full reads of the registry (start, after an outage, SIGHUP).\n"
                + "# TYPE xaf_registry_resyncs_total counter\nxaf_registry_resyncs_total " + resyncs.get() + "\n"
                + "# HELP xaf_registry_errors_total Failed or malformed reads or watches of the registry.\n"
                + "# TYPE xaf_registry_errors_total counter\nxaf_registry_errors_total " + errors.get() + "\n"
                + "# HELP xaf_registry_rejected_total Registry entries skipped or updates rejected as invalid.\n"
                + "# TYPE xaf_registry_rejected_total counter\nxaf_registry_rejected_total " + rejected.get() + "\n"
                + "# HELP xaf_registry_empty_refused_total Empty route sets refused (no " + EMPTY_MARKER + " marker).\n"
                + "# TYPE xaf_registry_empty_refused_total counter\nxaf_registry_empty_refused_total " + emptyRefused.get() + "\n"
                + reader.metrics();
    }

    @Override
    public void close() {
        closing = true;
        if (thread != null) thread.interrupt();
        etcd.close();
    }
}
