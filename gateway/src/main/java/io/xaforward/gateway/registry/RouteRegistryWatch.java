package io.xaforward.gateway.registry;

import io.xaforward.common.EtcdClient;
import io.xaforward.common.EtcdException;

import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.GatewayConfigParser;
import io.xaforward.gateway.GatewayService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
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
 * <p><b>Reading by group.</b> A reader may ask for the registry to be read group by group ({@link
 * Entries#readByGroup}; {@link JobRoutes} does: a group is one job's directory {@code /xaf/jobs/JOB/}). A full read
 * then lists the keys first (keys only, in pages of up to {@value #LIST_PAGE}, skipping from each group's first key to the
 * group's end), and reads each group with a range of its own, all at one store revision. A group that holds more
 * keys or bytes than one answer may ({@link EtcdClient.Limits}), or whose answer is malformed, is skipped: named in
 * the log, counted in {@code xaf_registry_groups_skipped_total}, shown in {@code xaf_registry_groups_skipped}, and
 * its routes are withdrawn; every other group is read and applied. Without this, one job that writes 65,537 keys
 * under its own directory made the single range of the whole prefix too large: no gateway could start and running
 * ones froze every job's routes. The watch keeps each group's size as its events arrive and skips a group the
 * moment it outgrows the limits, so a flood does not hold the other groups' changes back; a skipped group's events
 * are not stored, and at most once a second the group is counted again (etcd counts without sending the keys) and
 * read back in once it fits. Keys directly under the prefix, and groups the reader does not want
 * ({@link Entries#wantsGroup}), are never read.
 *
 * <p>When etcd cannot be reached, or answers something malformed, the gateway keeps forwarding on the last routes
 * it had, reports {@code xaf_registry_up 0} and counts the failure, and its watch thread resynchronises (a full
 * read, then a new watch) once etcd answers again. SIGHUP forces a full re-read ({@link #resyncNow}).
 */
public final class RouteRegistryWatch implements AutoCloseable {
    /** The key, under the prefix, that allows an empty route set when it holds {@code true}. */
    public static final String EMPTY_MARKER = "_empty";
    private static final long RETRY_MS = 1000;
    /** Keys per page of the key listing of a read by group. */
    static final int LIST_PAGE = 1000;
    /** How often a skipped group that had changes is counted again (and read back in once it fits). */
    private static final long RECHECK_MS = 1000;
    /**
     * What one key costs in a range answer beyond its base64 key and value: the JSON field names, create and mod
     * revisions, version (about 100 bytes as etcd 3.4 writes them; rounded up). The watch's estimate of a group's
     * answer: a group the watch keeps is one a full read can take, give or take this estimate.
     */
    private static final int ANSWER_BYTES_PER_KEY = 128;
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

        /**
         * Whether the registry is read group by group (the keys of each directory {@code PREFIX NAME/} in a range of
         * their own, a group over the answer limits skipped alone; see the class comment), rather than in one range.
         */
        default boolean readByGroup() {
            return false;
        }

        /**
         * In a read by group: whether the keys under {@code group} (a directory of the prefix, ending in '/') can give
         * routes; a group that cannot is neither read nor watched.
         */
        default boolean wantsGroup(String group) {
            return true;
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
    private final TreeMap<String, String> entries = new TreeMap<>();
    private final Map<String, GatewayConfig.RouteConfig> good = new HashMap<>();
    /** Values already reported as bad, so one bad value is logged and counted once. */
    private final Map<String, String> reported = new HashMap<>();
    private final AtomicLong updates = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private final AtomicLong emptyRefused = new AtomicLong();
    private final AtomicLong resyncs = new AtomicLong();
    /** In a read by group: the groups skipped now, with the reason, and the count of groups ever skipped. */
    private final Map<String, String> skippedGroups = new TreeMap<>();
    private final AtomicLong groupsSkippedTotal = new AtomicLong();
    private volatile int groupsSkippedNow;
    /** Groups of the last full read beyond the most one read lists ({@link EtcdClient.Limits#maxRangeKeys}). */
    private int groupsNotListed;
    /** In a read by group: each group's keys and estimated answer bytes in {@link #entries}. */
    private final Map<String, long[]> groupSizes = new HashMap<>();
    /** Skipped groups the watch saw change since they were last counted. */
    private final Set<String> recheck = new LinkedHashSet<>();
    /** Groups read again by {@link #recheckSkipped}: the revision of that read (their older events are in it). */
    private final Map<String, Long> groupReadRevision = new HashMap<>();
    private ScheduledExecutorService rechecker;
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
        if (reader.readByGroup()) {
            rechecker = Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon(true)
                    .name("xaf-gateway-registry-recheck").unstarted(r));
            rechecker.scheduleWithFixedDelay(this::recheckSkipped, RECHECK_MS, RECHECK_MS, TimeUnit.MILLISECONDS);
        }
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
        GroupedRead r = reader.readByGroup() ? readByGroup() : new GroupedRead(etcd.range(prefix), Map.of(), 0);
        synchronized (entries) {
            entries.clear();
            groupSizes.clear();
            groupReadRevision.clear();
            recheck.clear();
            for (EtcdClient.KeyValue kv : r.range().kvs()) putEntry(kv.key(), kv.value());
            readRevision = Math.max(readRevision, r.range().revision());
            for (String g : List.copyOf(skippedGroups.keySet())) {
                if (!r.skipped().containsKey(g)) {
                    skippedGroups.remove(g);
                    LOG.info("registry {}{}: group {} is within the limits again and read", etcd.endpoint(), prefix, g);
                }
            }
            r.skipped().forEach(this::skipGroup);
            groupsNotListed = r.groupsNotListed();
            groupsSkippedNow = skippedGroups.size() + groupsNotListed;
            applyEntries();
        }
        resyncs.incrementAndGet();
        up = true;
        return r.range().revision();
    }

    /** A full read: the keys of the groups read, the groups skipped (with why), and groups beyond the most listed. */
    private record GroupedRead(EtcdClient.Range range, Map<String, String> skipped, int groupsNotListed) {}

    /**
     * Lists the groups (keys only, page by page, jumping over each group's keys after its first) and reads each group
     * on its own, at the revision of the first page; a group whose answer is refused is skipped, not the read.
     */
    private GroupedRead readByGroup() {
        int maxGroups = etcd.limits().maxRangeKeys();
        List<String> groups = new ArrayList<>();
        int notListed = 0;
        long revision = 0;
        String from = prefix;
        int pageKeys = Math.min(LIST_PAGE, etcd.limits().maxRangeKeys());
        int limit = pageKeys;
        while (true) {
            EtcdClient.KeyPage page;
            try {
                page = etcd.keys(from, prefix, revision, limit);
            } catch (EtcdException.AnswerRefused e) {
                // Keys so long that a page of them exceeds the answer limit: go on one key per page.
                if (limit == 1) throw e;
                limit = 1;
                continue;
            }
            if (revision == 0) revision = page.revision();
            String last = null;
            for (String key : page.keys()) {
                String g = groupOf(key);
                if (g == null || g.equals(last) || !reader.wantsGroup(g)) continue;
                last = g;
                if (groups.size() < maxGroups) groups.add(g); else notListed++;
            }
            if (!page.more() || page.keys().isEmpty()) break;
            String lastKey = page.keys().getLast();
            String g = groupOf(lastKey);
            from = g == null ? lastKey + "\0" : afterGroup(g);
            limit = pageKeys;
        }
        if (notListed > 0) {
            LOG.warn("registry {}{} holds more than {} groups; {} groups after {} are not read (remove the stale ones)",
                    etcd.endpoint(), prefix, maxGroups, notListed, groups.getLast());
        }
        List<EtcdClient.KeyValue> kvs = new ArrayList<>();
        Map<String, String> skipped = new TreeMap<>();
        for (String g : groups) {
            try {
                kvs.addAll(readGroup(g, revision).kvs());
            } catch (EtcdException.AnswerRefused e) {
                skipped.put(g, e.getMessage());
            }
        }
        return new GroupedRead(new EtcdClient.Range(kvs, revision), skipped, notListed);
    }

    /**
     * One group's keys at {@code revision} (0: the newest). Counted first: a group far over the key limit is refused
     * on etcd's count, without having etcd send its keys.
     */
    private EtcdClient.Range readGroup(String group, long revision) {
        long n = etcd.count(group, revision);
        if (n > etcd.limits().maxRangeKeys()) {
            throw new EtcdException.AnswerRefused(n + " keys, more than the " + etcd.limits().maxRangeKeys()
                    + " one read takes");
        }
        return etcd.range(group, revision);
    }

    /** The group of {@code key}: the directory of the prefix it lies in ({@code PREFIX NAME/}), or null directly under the prefix. */
    private String groupOf(String key) {
        int slash = key.indexOf('/', prefix.length());
        return slash < 0 ? null : key.substring(0, slash + 1);
    }

    /** The first key after every key of {@code group}: its final '/' raised to '0' (the byte after it). */
    private static String afterGroup(String group) {
        return group.substring(0, group.length() - 1) + "0";
    }

    private void putEntry(String key, String value) {
        String old = entries.put(key, value);
        if (!reader.readByGroup()) return;
        String g = groupOf(key);
        if (g == null) return;
        long[] size = groupSizes.computeIfAbsent(g, k -> new long[2]);
        if (old == null) size[0]++; else size[1] -= answerBytes(key, old);
        size[1] += answerBytes(key, value);
    }

    private void removeEntry(String key) {
        String old = entries.remove(key);
        if (old == null || !reader.readByGroup()) return;
        long[] size = groupSizes.get(groupOf(key));
        if (size == null) return;
        size[0]--;
        size[1] -= answerBytes(key, old);
    }

    /** About what {@code key} with {@code value} adds to a range answer (base64 of both, plus the JSON around them). */
    private static long answerBytes(String key, String value) {
        return base64Length(key) + base64Length(value) + ANSWER_BYTES_PER_KEY;
    }

    private static long base64Length(String s) {
        long utf8 = s.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        return (utf8 + 2) / 3 * 4;
    }

    /** Why {@code group} no longer fits one answer, from what the watch delivered; null while it fits. */
    private String overLimits(String group) {
        long[] size = groupSizes.get(group);
        if (size == null) return null;
        EtcdClient.Limits limits = etcd.limits();
        if (size[0] > limits.maxRangeKeys()) return size[0] + " keys, more than the " + limits.maxRangeKeys() + " one read takes";
        if (size[1] > limits.maxAnswerBytes()) {
            return "about " + size[1] + " bytes as a range answer, more than the " + limits.maxAnswerBytes() + " one answer may hold";
        }
        return null;
    }

    /** Withdraws {@code group}'s keys (so its routes) and counts and logs it once, until it is read back in. */
    private void skipGroup(String group, String why) {
        entries.subMap(group, afterGroup(group)).clear();
        groupSizes.remove(group);
        if (skippedGroups.put(group, why) == null) {
            groupsSkippedTotal.incrementAndGet();
            LOG.warn("registry {}{}: group {} skipped, its routes withdrawn until it is within the limits again; the other"
                    + " groups are read and applied as usual: {}", etcd.endpoint(), prefix, group, why);
        }
    }

    /**
     * Counts again each skipped group that changed since its last count, and reads it back in once it fits (on the
     * rechecker thread, once a second: a flood's every batch does not cost etcd a count).
     */
    private void recheckSkipped() {
        try {
            recheckSkippedGroups();
        } catch (RuntimeException e) { // an exception would cancel the schedule: log it, try again at the next tick
            LOG.warn("registry {}{}: recheck of skipped groups failed: {}", etcd.endpoint(), prefix, e.getMessage());
        }
    }

    private void recheckSkippedGroups() {
        synchronized (entries) {
            boolean changed = false;
            for (var it = recheck.iterator(); it.hasNext(); ) {
                String g = it.next();
                if (!skippedGroups.containsKey(g)) {
                    it.remove();
                    continue;
                }
                try {
                    EtcdClient.Range r = readGroup(g, 0);
                    it.remove();
                    for (EtcdClient.KeyValue kv : r.kvs()) putEntry(kv.key(), kv.value());
                    groupReadRevision.put(g, r.revision());
                    skippedGroups.remove(g);
                    LOG.info("registry {}{}: group {} is within the limits again and read", etcd.endpoint(), prefix, g);
                    changed = true;
                } catch (EtcdException.AnswerRefused e) {
                    it.remove(); // still over: counted again at its next change
                } catch (RuntimeException e) {
                    // etcd unreachable: the watch thread notices and re-reads everything; keep it for the next tick
                    break;
                }
            }
            groupsSkippedNow = skippedGroups.size() + groupsNotListed;
            if (changed) applyEntries();
        }
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
                String group = null;
                if (reader.readByGroup()) {
                    group = groupOf(e.key());
                    if (group == null || !reader.wantsGroup(group)) continue; // never read either
                    Long groupRead = groupReadRevision.get(group);
                    if (groupRead != null && e.modRevision() != 0 && e.modRevision() <= groupRead) continue;
                    if (skippedGroups.containsKey(group)) {
                        recheck.add(group);
                        continue;
                    }
                }
                if (e.deleted()) removeEntry(e.key()); else putEntry(e.key(), e.value());
                changed = true;
                String why = group == null ? null : overLimits(group);
                if (why != null) {
                    skipGroup(group, why);
                    groupsSkippedNow = skippedGroups.size() + groupsNotListed;
                }
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
                + "# HELP xaf_registry_groups_skipped Groups of keys (with --follow-jobs: jobs) not read now: more keys or bytes"
                + " than one answer may hold, or a malformed answer; their routes are withdrawn.\n"
                + "# TYPE xaf_registry_groups_skipped gauge\nxaf_registry_groups_skipped " + groupsSkippedNow + "\n"
                + "# HELP xaf_registry_groups_skipped_total Times a group of keys was skipped (counted once until it is read again).\n"
                + "# TYPE xaf_registry_groups_skipped_total counter\nxaf_registry_groups_skipped_total " + groupsSkippedTotal.get() + "\n"
                + reader.metrics();
    }

    @Override
    public void close() {
        closing = true;
        if (thread != null) thread.interrupt();
        if (rechecker != null) rechecker.shutdownNow();
        etcd.close();
    }
}
