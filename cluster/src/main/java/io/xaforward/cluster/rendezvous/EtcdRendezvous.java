package io.xaforward.cluster.rendezvous;

import io.xaforward.cluster.deploy.WorkerOptions;
import io.xaforward.cluster.deploy.WorldSource;
import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.cluster.world.World;
import io.xaforward.gateway.registry.EtcdClient;
import io.xaforward.gateway.registry.EtcdException;
import io.xaforward.protocol.NetworkForm;

import java.io.PrintStream;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

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
        this.etcd = new EtcdClient(endpoint, Duration.ofSeconds(5));
        this.site = site;
        this.timeout = timeout;
        this.log = log;
    }

    public static String jobPrefix(int job) {
        return "/xaf/jobs/" + job + "/ranks/";
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
        while (true) {
            Map<Integer, String> ranks = new TreeMap<>();
            for (EtcdClient.KeyValue kv : etcd.range(prefix).kvs()) {
                String tail = kv.key().substring(prefix.length());
                if (tail.matches("\\d+")) ranks.put(Integer.parseInt(tail), kv.value());
            }
            if (ranks.keySet().stream().anyMatch(r -> r >= o.worldSize())) {
                throw new IllegalStateException("rendezvous of job " + o.jobId() + ": ranks " + ranks.keySet()
                        + " registered, but the world size is " + o.worldSize());
            }
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

    /** The registrations as a cluster file, so that the rendezvous and the file share one parser and its checks. */
    static String clusterYaml(int job, Map<Integer, String> registrations) {
        org.yaml.snakeyaml.Yaml yaml = new org.yaml.snakeyaml.Yaml(new org.yaml.snakeyaml.constructor.SafeConstructor(
                new org.yaml.snakeyaml.LoaderOptions()));
        Map<String, Map<String, Object>> dcs = new LinkedHashMap<>();
        List<Map<String, Object>> ranks = new ArrayList<>();
        for (var e : registrations.entrySet()) {
            Object parsed = yaml.load(e.getValue());
            if (!(parsed instanceof Map<?, ?> reg)) throw new IllegalStateException("rank " + e.getKey() + " registered garbage: " + e.getValue());
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
            if (known != null && ((Number) d.get("mtu")).intValue() < ((Number) known.get("mtu")).intValue()) {
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
