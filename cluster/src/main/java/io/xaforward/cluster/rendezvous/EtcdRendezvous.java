package io.xaforward.cluster.rendezvous;

import io.xaforward.cluster.deploy.WorkerOptions;
import io.xaforward.cluster.deploy.WorldSource;
import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.cluster.world.World;
import io.xaforward.gateway.registry.EtcdClient;
import io.xaforward.gateway.registry.EtcdException;
import io.xaforward.gateway.registry.EtcdSecurity;
import io.xaforward.protocol.NetworkForm;

import java.io.PrintStream;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.HashSet;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import io.xaforward.gateway.YamlTree;

/**
 * The etcd rendezvous of a job: each rank registers its address under {@code /xaf/jobs/JOB/ranks/RANK}, attached
 * to a lease it keeps alive (a dead worker's key vanishes when its lease expires), then waits until all ranks of the
 * world are registered and builds the {@link World} from the registrations, exactly as a cluster file would give it.
 * A rank that does not show up within the timeout fails the join with the missing ranks named.
 *
 * <p>A registration is one YAML flow mapping: datacenter, form, mtu, ip or mac (and identity on the id form), the
 * interface, and the data center's gateway next hop.
 */
public final class EtcdRendezvous implements WorldSource {
    static final long LEASE_TTL_SECONDS = 10;
    private static final long POLL_MS = 200;

    /** What only this rank knows about its data center: its name and the gateway port it sends to. */
    public record Site(String datacenter, String gateway, int identity) {}

    private final EtcdClient etcd;
    private final Site site;
    private final Duration timeout;
    private final PrintStream log;
    private volatile long lease;
    private Thread keepAlive;

    public EtcdRendezvous(URI endpoint, Site site, Duration timeout, PrintStream log) {
        this(endpoint, EtcdSecurity.NONE, site, timeout, log);
    }

    /** As above, reaching etcd with {@code security} (TLS, client certificate, user and password). */
    public EtcdRendezvous(URI endpoint, EtcdSecurity security, Site site, Duration timeout, PrintStream log) {
        this.etcd = new EtcdClient(endpoint, Duration.ofSeconds(5), security);
        this.site = site;
        this.timeout = timeout;
        this.log = log;
    }

    public static String jobPrefix(int job) {
        return "/xaf/jobs/" + job + "/ranks/";
    }

    /** Where a job's settings may be kept for all its ranks: a YAML mapping as a cluster file's training section. */
    public static String trainingKey(int job) {
        return "/xaf/jobs/" + job + "/training";
    }

    /** The job's settings kept at {@link #trainingKey} (empty when there are none), read strictly. */
    public static Map<String, String> training(URI endpoint, EtcdSecurity security, int job) {
        try (EtcdClient etcd = new EtcdClient(endpoint, Duration.ofSeconds(5), security)) {
            String key = trainingKey(job);
            for (EtcdClient.KeyValue kv : etcd.range(key).kvs()) {
                if (!kv.key().equals(key)) continue;
                String source = "etcd " + endpoint + key;
                Function<String, RuntimeException> fail = why -> new IllegalArgumentException(source + ": " + why);
                return ClusterFile.settings(YamlTree.read(kv.value(), fail), "training", fail);
            }
            return Map.of();
        }
    }

    @Override
    public World join(WorkerOptions o) throws InterruptedException {
        LocalAddress self = LocalAddress.of(o.iface(), o.form());
        String registration = registration(o, self);
        String prefix = jobPrefix(o.jobId());
        String key = prefix + o.rank();
        long deadline = System.nanoTime() + timeout.toNanos();

        lease = etcd.grantLease(LEASE_TTL_SECONDS);
        keepAlive = Thread.ofPlatform().daemon(true).name("xaf-rendezvous-lease").start(this::keepAlive);
        // A restarted rank may find its previous incarnation's key until that lease expires: wait for it.
        while (!etcd.create(key, registration, lease)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("rendezvous of job " + o.jobId() + " at " + etcd.endpoint() + ": rank "
                        + o.rank() + " is already registered (" + key + ") by another worker");
            }
            Thread.sleep(POLL_MS);
        }
        Set<String> reported = new HashSet<>();
        while (true) {
            Map<Integer, Map<String, Object>> ranks = registrations(etcd.range(prefix).kvs(), prefix, o.worldSize(),
                    "etcd " + etcd.endpoint(), why -> {
                        if (reported.add(why)) log.println("xaf worker: rendezvous: ignored " + why);
                    });
            if (ranks.size() == o.worldSize()) {
                World w = ClusterFile.parse(clusterYaml(o.jobId(), ranks), "etcd " + etcd.endpoint() + prefix);
                WorldSource.checkAgainst(w, o, "the rendezvous");
                return w;
            }
            if (System.nanoTime() > deadline) {
                List<Integer> missing = new ArrayList<>();
                for (int r = 0; r < o.worldSize(); r++) if (!ranks.containsKey(r)) missing.add(r);
                throw new IllegalStateException("rendezvous of job " + o.jobId() + " at " + etcd.endpoint()
                        + " timed out after " + timeout.toSeconds() + " s: missing rank" + (missing.size() > 1 ? "s " : " ")
                        + join(missing) + " (registered: " + join(new ArrayList<>(ranks.keySet())) + ")");
            }
            Thread.sleep(POLL_MS);
        }
    }

    private String registration(WorkerOptions o, LocalAddress self) {
        StringBuilder y = new StringBuilder("{datacenter: \"").append(site.datacenter()).append("\", form: ")
                .append(o.form().configName()).append(", mtu: ").append(self.mtu()).append(", interface: \"")
                .append(o.iface()).append('"');
        if (o.form() == NetworkForm.ID) {
            y.append(", mac: \"").append(self.mac()).append("\", identity: ").append(Integer.toUnsignedString(site.identity()));
            y.append(", gateway: {mac: \"").append(site.gateway()).append("\"}");
        } else {
            y.append(", ip: \"").append(self.ip().orElseThrow().getHostAddress()).append('"');
            y.append(", gateway: {ip: \"").append(site.gateway()).append("\"}");
        }
        return y.append('}').toString();
    }

    /**
     * The registrations under {@code prefix}, each read strictly ({@link #registration(String, String)}). A key that
     * is not a rank number, a rank outside the world, or a value that does not read is named through {@code ignored}
     * and left out, as if that rank had not registered: one bad or foreign entry cannot break every join.
     */
    static Map<Integer, Map<String, Object>> registrations(List<EtcdClient.KeyValue> kvs, String prefix, int worldSize,
                                                           String source, Consumer<String> ignored) {
        Map<Integer, Map<String, Object>> ranks = new TreeMap<>();
        for (EtcdClient.KeyValue kv : kvs) {
            String tail = kv.key().substring(prefix.length());
            if (!tail.matches("0|[1-9][0-9]{0,8}")) {
                ignored.accept(kv.key() + ": not a rank number");
                continue;
            }
            int rank = Integer.parseInt(tail);
            if (rank >= worldSize) {
                ignored.accept(kv.key() + ": rank " + rank + " is outside the world of " + worldSize);
                continue;
            }
            try {
                ranks.put(rank, registration(kv.value(), source + kv.key()));
            } catch (IllegalArgumentException e) {
                ignored.accept(e.getMessage());
            }
        }
        return ranks;
    }

    /**
     * One registration, read with no YAML 1.1 coercions and duplicate keys refused ({@link YamlTree}), every key
     * known and every value checked: the values of the cluster file it becomes, typed.
     */
    static Map<String, Object> registration(String text, String source) {
        Function<String, RuntimeException> fail = why -> new IllegalArgumentException(source + ": " + why);
        if (!(YamlTree.read(text, fail) instanceof Map<?, ?> reg)) throw fail.apply("not a mapping: " + text);
        Map<String, Object> out = new LinkedHashMap<>();
        for (var e : reg.entrySet()) {
            String key = String.valueOf(e.getKey());
            Object v = e.getValue();
            if (key.equals("gateway")) {
                if (!(v instanceof Map<?, ?> g) || g.size() != 1 || !(g.get("ip") instanceof String || g.get("mac") instanceof String)) {
                    throw fail.apply("gateway must be {ip: ADDRESS} or {mac: ADDRESS}");
                }
                out.put(key, new LinkedHashMap<>(g));
                continue;
            }
            if (!(v instanceof String s)) throw fail.apply(key + " must be a single value");
            switch (key) {
                case "datacenter", "interface", "ip", "mac" -> out.put(key, s);
                case "form" -> {
                    try {
                        out.put(key, NetworkForm.fromName(s).configName());
                    } catch (IllegalArgumentException ex) {
                        throw fail.apply("form: " + ex.getMessage());
                    }
                }
                case "mtu" -> out.put(key, (int) number(s, 68, 65535, key, fail));
                case "identity" -> out.put(key, number(s, 0, 0xFFFF_FFFFL, key, fail));
                default -> throw fail.apply("unknown key '" + key + "'");
            }
        }
        for (String k : List.of("datacenter", "form", "mtu")) if (!out.containsKey(k)) throw fail.apply("'" + k + "' is required");
        return out;
    }

    /** Decimal without a leading zero, or 0x hexadecimal, within [min, max]. */
    private static long number(String s, long min, long max, String key, Function<String, RuntimeException> fail) {
        long n;
        try {
            if (s.matches("0|[1-9][0-9]{0,18}")) n = Long.parseLong(s);
            else if (s.matches("0[xX][0-9a-fA-F]{1,15}")) n = Long.parseLong(s.substring(2), 16);
            else throw fail.apply(key + ": '" + s + "' is not a decimal or 0x number");
        } catch (NumberFormatException e) {
            throw fail.apply(key + ": '" + s + "' is out of range");
        }
        if (n < min || n > max) throw fail.apply(key + " must be " + min + ".." + max + ", got " + s);
        return n;
    }

    /** The registrations as a cluster file, so that the rendezvous and the file share one parser and its checks. */
    static String clusterYaml(int job, Map<Integer, Map<String, Object>> registrations) {
        org.yaml.snakeyaml.Yaml yaml = new org.yaml.snakeyaml.Yaml(new org.yaml.snakeyaml.constructor.SafeConstructor(
                new org.yaml.snakeyaml.LoaderOptions()));
        Map<String, Map<String, Object>> dcs = new LinkedHashMap<>();
        List<Map<String, Object>> ranks = new ArrayList<>();
        for (var e : registrations.entrySet()) {
            Map<String, Object> reg = e.getValue();
            String dc = String.valueOf(reg.get("datacenter"));
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("name", dc);
            d.put("form", reg.get("form"));
            d.put("mtu", reg.get("mtu"));
            if (reg.get("gateway") != null) d.put("gateway", reg.get("gateway"));
            Map<String, Object> known = dcs.putIfAbsent(dc, d);
            if (known != null && !known.get("form").equals(d.get("form"))) {
                throw new IllegalStateException("ranks of data center " + dc + " registered different forms");
            }
            if (known != null && (int) d.get("mtu") < (int) known.get("mtu")) {
                known.put("mtu", d.get("mtu"));
            }
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("rank", e.getKey());
            r.put("datacenter", dc);
            for (String k : List.of("ip", "mac", "identity", "interface")) if (reg.get(k) != null) r.put(k, reg.get(k));
            ranks.add(r);
        }
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("job", job);
        top.put("datacenters", new ArrayList<>(dcs.values()));
        top.put("ranks", ranks);
        return yaml.dump(top);
    }

    private static String join(List<Integer> ranks) {
        return ranks.isEmpty() ? "none" : String.join(", ", ranks.stream().map(String::valueOf).toList());
    }

    private void keepAlive() {
        while (!Thread.currentThread().isInterrupted()) {
            try {
                Thread.sleep(LEASE_TTL_SECONDS * 1000 / 3);
                etcd.keepAlive(lease);
            } catch (InterruptedException e) {
                return;
            } catch (EtcdException e) {
                log.println("xaf worker: cannot renew the rendezvous lease: " + e.getMessage());
            }
        }
    }

    /** Stops renewing and revokes the lease, so this rank's registration vanishes at once. */
    @Override
    public void close() {
        if (keepAlive != null) keepAlive.interrupt();
        if (lease != 0) {
            try {
                etcd.revoke(lease);
            } catch (EtcdException e) {
                log.println("xaf worker: could not revoke the rendezvous lease (it expires in " + LEASE_TTL_SECONDS + " s): " + e.getMessage());
            }
        }
        etcd.close();
    }

}
