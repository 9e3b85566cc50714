package io.xaforward.cluster.rendezvous;

import io.xaforward.cluster.TrainJobCodec;
import io.xaforward.cluster.deploy.JoinSpec;
import io.xaforward.cluster.deploy.WorldSource;
import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.cluster.world.World;
import io.xaforward.common.EtcdClient;
import io.xaforward.common.EtcdException;
import io.xaforward.common.EtcdSecurity;
import io.xaforward.protocol.RankRegistration;
import io.xaforward.protocol.NetworkForm;

import java.io.PrintStream;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.HashSet;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import io.xaforward.common.YamlTree;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

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
                return TrainJobCodec.readSection(YamlTree.read(kv.value(), fail), "training", fail);
            }
            return Map.of();
        }
    }

    /** The key this worker holds after {@link #claimRank}; {@link #join} then registers nothing more. */
    private String claimedKey;

    /** Grants the lease the registration hangs on and keeps it alive, once. */
    private void startLease() {
        if (lease != 0) return;
        lease = etcd.grantLease(LEASE_TTL_SECONDS);
        keepAlive = Thread.ofPlatform().daemon(true).name("xaf-rendezvous-lease").start(this::keepAlive);
    }

    /**
     * For a worker started without a rank: registers it under the lowest rank of the job's world that no live worker
     * holds and returns that rank; {@link #join} with it then waits for the others. Creating the key is etcd's atomic
     * create-if-absent, so two workers never get the same rank. The ranks in {@code ranBefore} (those whose settings
     * this host's checkpoint directory holds) are tried first, for a while as long as a lease lives, so that a
     * restarted worker gets its rank, and its checkpoints, back.
     */
    public int claimRank(int job, int world, int token, String iface, NetworkForm form, int flows,
                         Collection<Integer> ranBefore) throws InterruptedException {
        return claimRank(job, world, registration(form, iface, token, world, flows, LocalAddress.of(iface, form)), ranBefore,
                Duration.ofSeconds(LEASE_TTL_SECONDS + 2));
    }

    int claimRank(int job, int world, String registration, Collection<Integer> ranBefore, Duration waitForOwn)
            throws InterruptedException {
        String prefix = jobPrefix(job);
        long now = System.nanoTime();
        long deadline = now + timeout.toNanos();
        long ownUntil = Math.min(deadline, now + waitForOwn.toNanos());
        startLease();
        List<Integer> own = ranBefore.stream().filter(r -> r >= 0 && r < world).sorted().distinct().toList();
        while (!own.isEmpty()) {
            for (int r : own) if (etcd.create(prefix + r, registration, lease)) return claimed(prefix, r);
            if (System.nanoTime() > ownUntil) break;
            Thread.sleep(POLL_MS);
        }
        while (true) {
            Set<Integer> taken = new HashSet<>();
            for (EtcdClient.KeyValue kv : etcd.range(prefix).kvs()) {
                String tail = kv.key().substring(prefix.length());
                if (tail.matches("0|[1-9][0-9]{0,8}")) taken.add(Integer.parseInt(tail));
            }
            for (int r = 0; r < world; r++) {
                if (!taken.contains(r) && etcd.create(prefix + r, registration, lease)) return claimed(prefix, r);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("rendezvous of job " + job + " at " + etcd.endpoint() + ": all " + world
                        + " ranks are held by other workers, none became free in " + timeout.toSeconds() + " s (is --world "
                        + world + " right, or is another worker of this job running twice?)");
            }
            Thread.sleep(POLL_MS);
        }
    }

    /** The rank {@link #claimRank} got, -1 before. */
    int claimedRank() {
        return claimedKey == null ? -1 : Integer.parseInt(claimedKey.substring(claimedKey.lastIndexOf('/') + 1));
    }

    private int claimed(String prefix, int rank) {
        claimedKey = prefix + rank;
        log.println("xaf worker: the rendezvous assigned rank " + rank);
        return rank;
    }

    @Override
    public World join(JoinSpec o) throws InterruptedException {
        LocalAddress self = LocalAddress.of(o.iface(), o.form());
        String registration = registration(o.form(), o.iface(), o.token(), o.worldSize(), o.flows(), self);
        String prefix = jobPrefix(o.jobId());
        String key = prefix + o.rank();
        long deadline = System.nanoTime() + timeout.toNanos();

        startLease();
        // A restarted rank may find its previous incarnation's key until that lease expires: wait for it.
        while (!key.equals(claimedKey) && !etcd.create(key, registration, lease)) {
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

    /**
     * What this rank registers. The MAC (on every form) and the job token are there for gateways that derive their
     * routes from the registrations ({@code xaf gateway --follow-jobs}); the token filters frames and travels in
     * every one of them, it is no secret. The job secret is never written to etcd. The world size bounds the ranks
     * such a gateway installs routes for (a job's ranks beyond it get none). The UDP flows, written only when more
     * than one (gateways that predate the key read single-flow registrations as before), become the routes'
     * src-port-span.
     */
    String registration(NetworkForm form, String iface, int token, int world, int flows, LocalAddress self) {
        StringBuilder y = new StringBuilder("{datacenter: \"").append(site.datacenter()).append("\", form: ")
                .append(form.configName()).append(", mtu: ").append(self.mtu()).append(", interface: \"")
                .append(iface).append("\", token: ").append(String.format("0x%08x", token))
                .append(", world: ").append(world)
                .append(flows > 1 && form != NetworkForm.ID ? ", flows: " + flows : "")
                .append(", mac: \"").append(self.mac()).append('"');
        if (form == NetworkForm.ID) {
            y.append(", identity: ").append(Integer.toUnsignedString(site.identity()));
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

    /** One registration, read strictly ({@link RankRegistration#read}). */
    static Map<String, Object> registration(String text, String source) {
        return RankRegistration.read(text, source);
    }

    /** The registrations as a cluster file, so that the rendezvous and the file share one parser and its checks. */
    static String clusterYaml(int job, Map<Integer, Map<String, Object>> registrations) {
        Yaml yaml = new Yaml(new SafeConstructor(
                new LoaderOptions()));
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
            // The MAC of a rank on an IP form is there for gateways only: the world is what a cluster file gives.
            List<String> keys = "id".equals(reg.get("form")) ? List.of("mac", "identity", "interface") : List.of("ip", "interface");
            for (String k : keys) if (reg.get(k) != null) r.put(k, reg.get(k));
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
                lease = 0;
            } catch (EtcdException e) {
                log.println("xaf worker: could not revoke the rendezvous lease (it expires in " + LEASE_TTL_SECONDS + " s): " + e.getMessage());
            }
        }
        etcd.close();
    }

}
