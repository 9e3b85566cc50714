package io.xaforward.cli;

import io.xaforward.cluster.WorkerLine;
import io.xaforward.cluster.rendezvous.EtcdRendezvous;
import io.xaforward.dataplane.sys.NetworkNamespace;
import io.xaforward.gateway.GatewayMetrics;
import io.xaforward.common.EtcdClient;
import io.xaforward.common.EtcdSecurity;
import io.xaforward.common.LocalEtcd;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Deployment through etcd, as on real machines: a real etcd server runs on the gateway host (the gateway
 * namespace, reachable from both data centers at the gateway's port addresses), with TLS, client certificates and
 * authentication on (certificates made by the test with openssl); {@code xaf gateway --registry} takes its routes
 * from etcd as a user that may read only its route prefix; {@code xaf worker --etcd} ranks meet at the rendezvous as
 * a user that may use only the job keys. Every worker and the gateway are separate processes that share nothing but
 * the etcd endpoint and its credentials.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class EtcdDeployTest {
    static final String ROUTES = "/xaf/routes/gw/";
    static final int CLIENT_PORT = 2379;
    static DeployFixture machines;
    static LocalEtcd etcd;
    static GatewayProcess gateway;
    static final Yaml YAML = new Yaml(new SafeConstructor(new LoaderOptions()));
    static LocalEtcd.Tls tls;
    static EtcdSecurity operator;

    static Path passwordFile(String name, String password) throws IOException {
        Path f = machines.dir.resolve(name + ".password");
        Files.writeString(f, password + "\n");
        Files.setPosixFilePermissions(f, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        return f;
    }

    /** The --etcd-* options of a process that logs in as {@code user}. */
    static List<String> credentials(String user) {
        return List.of("--etcd-ca", tls.ca().toString(), "--etcd-cert", tls.clientCert().toString(),
                "--etcd-key", tls.clientKey().toString(), "--etcd-user", user,
                "--etcd-password-file", machines.dir.resolve(user + ".password").toString());
    }

    @BeforeAll
    static void up() throws Exception {
        machines = new DeployFixture();
        List<String> names = new ArrayList<>(List.of("127.0.0.1"));
        for (Node p : machines.state.gatewayPorts("gw")) if (p.ip() != null) names.add(p.ip().getHostAddress());
        tls = LocalEtcd.Tls.generate(machines.dir.resolve("pki"), names);
        etcd = LocalEtcd.start(List.of("ip", "netns", "exec", machines.gatewayNamespace()), "[::]", "127.0.0.1",
                CLIENT_PORT, 2380, tls, List.of());
        // The operator's setup: one user per role, each allowed only its own keys; root for the test's own calls.
        EtcdSecurity certOnly = new EtcdSecurity(tls.ca(), tls.clientCert(), tls.clientKey(), null, null);
        String gw = "gw-" + System.nanoTime(), workers = "wk-" + System.nanoTime(), root = "root-" + System.nanoTime();
        String follower = "gwj-" + System.nanoTime();
        passwordFile("xaf-gw", gw);
        passwordFile("xaf-gw-jobs", follower);
        passwordFile("xaf-workers", workers);
        operator = new EtcdSecurity(tls.ca(), tls.clientCert(), tls.clientKey(), "root", passwordFile("root", root));
        NetworkNamespace.call(machines.gatewayNamespace(), () -> {
            etcd.addUser(certOnly, "xaf-gw", gw, List.of(ROUTES));
            etcd.addUser(certOnly, "xaf-workers", workers, List.of("/xaf/jobs/"));
            // a gateway whose routes follow the registrations may only read them
            etcd.addUser(certOnly, "xaf-gw-jobs", follower, List.of("/xaf/jobs/"), "READ");
            etcd.enableAuth(certOnly, root);
            return null;
        });
        // The operator publishes the gateway's routes (here: those of the identifier plan) in the registry.
        for (Map<String, Object> route : planRoutes()) {
            String key = ROUTES + String.format("0x%08x", ((Number) route.get("id")).intValue());
            inGateway(c -> { c.put(key, flow(route), 0); return null; });
        }
        gateway = startGateway("gateway-ports.yaml", false, List.of("--registry-prefix", ROUTES), "xaf-gw");
    }

    /**
     * A gateway that takes its routes from the test's etcd as {@code user}; its config file gives only the ports
     * (each naming its data center when {@code datacenters}) and the hop limit cap.
     */
    static GatewayProcess startGateway(String file, boolean datacenters, List<String> routes, String user) throws Exception {
        Path config = machines.dir.resolve(file);
        // The hop limit cap comes from the file and must survive every route set the registry applies.
        StringBuilder y = new StringBuilder("metrics: 127.0.0.1:9464\nmax-hop-limit: " + HOP_CAP + "\nports:\n");
        for (Node p : machines.state.gatewayPorts("gw")) {
            y.append("  - {interface: ").append(p.iface()).append(", form: ").append(p.form().configName());
            if (datacenters) y.append(", datacenter: ").append(p.datacenter());
            y.append("}\n");
        }
        Files.writeString(config, y.append("routes: []\n").toString());
        List<String> options = new ArrayList<>(List.of("--registry", "https://127.0.0.1:" + CLIENT_PORT));
        options.addAll(routes);
        options.addAll(credentials(user));
        GatewayProcess g = GatewayProcess.start(machines.gatewayNamespace(), config, List.of(), List.of(), options);
        g.awaitReady(60_000);
        return g;
    }

    @AfterAll
    static void down() throws Exception {
        try {
            if (gateway != null) gateway.close();
            if (etcd != null) etcd.close();
        } finally {
            if (machines != null) machines.close();
        }
        assertFalse(etcd != null && etcd.isAlive(), "etcd left running");
        assertTrue(machines == null || Netns.list().stream().noneMatch(n -> n.startsWith(machines.prefix + "-")),
                "namespaces left behind");
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> planRoutes() {
        Map<String, Object> config = YAML.load(machines.plan.gatewayYaml("gw", "off"));
        return (List<Map<String, Object>>) config.get("routes");
    }

    static String flow(Object o) {
        DumperOptions d = new DumperOptions();
        d.setDefaultFlowStyle(DumperOptions.FlowStyle.FLOW);
        d.setWidth(Integer.MAX_VALUE);
        return new Yaml(d).dump(o).strip();
    }

    /** Runs etcd calls from inside the gateway namespace, where the test's etcd listens. */
    static <T> T inGateway(Function<EtcdClient, T> calls) {
        return NetworkNamespace.call(machines.gatewayNamespace(), () -> {
            try (EtcdClient c = new EtcdClient(URI.create("https://127.0.0.1:" + CLIENT_PORT), Duration.ofSeconds(5), operator)) {
                return calls.apply(c);
            }
        });
    }

    /** The keys of the gateway process's BPF "routes" map, read with bpftool through the process's map fds. */
    static Set<Integer> routeMapKeys() throws Exception {
        return routeMapKeys(gateway);
    }

    static Set<Integer> routeMapKeys(GatewayProcess gateway) throws Exception {
        for (Path fdinfo : list(Path.of("/proc", Long.toString(gateway.process.pid()), "fdinfo"))) {
            String info;
            try {
                info = Files.readString(fdinfo);
            } catch (IOException e) {
                continue;
            }
            var m = java.util.regex.Pattern.compile("(?m)^map_id:\\s+(\\d+)").matcher(info);
            if (!m.find()) continue;
            String id = m.group(1);
            Map<?, ?> show = (Map<?, ?>) YAML.load(run("bpftool", "-j", "map", "show", "id", id));
            if (!"routes".equals(show.get("name"))) continue;
            Set<Integer> keys = new HashSet<>();
            for (Object e : (List<?>) YAML.load(run("bpftool", "-j", "map", "dump", "id", id))) {
                List<?> bytes = (List<?>) ((Map<?, ?>) e).get("key");
                int k = 0;
                for (int i = 3; i >= 0; i--) k = k << 8 | Integer.decode(String.valueOf(bytes.get(i)));
                keys.add(k);
            }
            return keys;
        }
        throw new AssertionError("the gateway process holds no 'routes' map");
    }

    static List<Path> list(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.toList();
        }
    }

    static String run(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) throw new AssertionError(String.join(" ", cmd) + ": " + out);
        return out;
    }

    static Set<Integer> awaitRouteKeys(java.util.function.Predicate<Set<Integer>> done) throws Exception {
        return awaitRouteKeys(gateway, done);
    }

    static Set<Integer> awaitRouteKeys(GatewayProcess gateway, java.util.function.Predicate<Set<Integer>> done) throws Exception {
        // Returns as soon as the map is as expected; the bound only matters when it never is. 15 s was too short for
        // the gateway's watch under a loaded machine (a build beside the suite).
        long deadline = System.currentTimeMillis() + 60_000;
        Set<Integer> keys = routeMapKeys(gateway);
        while (!done.test(keys) && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
            keys = routeMapKeys(gateway);
        }
        return keys;
    }

    static Map<String, Long> metrics() {
        return GatewayMetrics.scrape(machines.gatewayNamespace(), "127.0.0.1", 9464);
    }

    @Test
    @Order(1)
    void routesAddedAndRemovedInEtcdReachTheGatewayMap() throws Exception {
        Set<Integer> planIds = new HashSet<>();
        for (Map<String, Object> r : planRoutes()) planIds.add(((Number) r.get("id")).intValue());
        assertEquals(planIds, routeMapKeys(), "the gateway starts with the registry's routes");
        assertEquals(1L, metrics().get("xaf_registry_up"));

        int extraId = (DeployFixture.JOB << 16) | 0x77;
        Map<String, Object> extra = new java.util.LinkedHashMap<>(planRoutes().get(0));
        extra.put("id", extraId);
        inGateway(c -> { c.put(ROUTES + "extra", flow(extra), 0); return null; });
        assertTrue(awaitRouteKeys(k -> k.contains(extraId)).contains(extraId), "added route reached the map");

        // An invalid entry is skipped and counted; the other routes stay.
        inGateway(c -> { c.put(ROUTES + "bad", "{id: 0x00090078, job: 9, token: 1, egress: no-such-port}", 0); return null; });
        long deadline = System.currentTimeMillis() + 10_000;
        while (metrics().getOrDefault("xaf_registry_rejected_total", 0L) == 0 && System.currentTimeMillis() < deadline) Thread.sleep(100);
        assertEquals(1L, metrics().get("xaf_registry_rejected_total"), gateway.output());
        assertTrue(routeMapKeys().contains(extraId));
        assertFalse(routeMapKeys().contains(0x00090078));

        inGateway(c -> { c.delete(ROUTES + "bad"); c.delete(ROUTES + "extra"); return null; });
        assertEquals(planIds, awaitRouteKeys(k -> !k.contains(extraId)), "removed route left the map");
        assertHopCapKept();
    }

    static final int HOP_CAP = 5;

    /** Every port still clamps arriving hop limits to the file's {@code max-hop-limit} (the kernel's ports map). */
    static void assertHopCapKept() {
        Map<String, Long> m = metrics();
        for (Node p : machines.state.gatewayPorts("gw")) {
            assertEquals((long) HOP_CAP, m.get("xaf_port_max_hop_limit{" + p.iface() + "}"), p.iface() + ": " + m);
        }
    }

    /** The registry endpoint of the workers of one data center: etcd on the gateway host, at its port address there. */
    static String etcdUrlFrom(int rank) {
        Node host = machines.plan.host(rank);
        Node port = machines.state.gatewayPort("gw", host.datacenter());
        String ip = port.ip().getHostAddress();
        return "https://" + (ip.contains(":") ? "[" + ip + "]" : ip) + ":" + CLIENT_PORT;
    }

    static List<String> etcdWorkerArgs(int rank, int world, int steps, Path checkpoints) {
        Node host = machines.plan.host(rank);
        List<String> args = new ArrayList<>(List.of("worker"));
        args.addAll(machines.workerArgs(rank, steps, checkpoints));
        args.set(args.indexOf("--world") + 1, Integer.toString(world));
        args.addAll(List.of("--etcd", etcdUrlFrom(rank), "--datacenter", host.datacenter(),
                "--gateway", machines.state.gatewayPort("gw", host.datacenter()).ip().getHostAddress(),
                "--rendezvous-timeout", "60"));
        args.addAll(credentials("xaf-workers"));
        return args;
    }

    @Test
    @Order(2)
    void twoDatacentersTimesTwoWorkersMeetAtTheEtcdRendezvous() throws Exception {
        Map<String, Long> before = metrics();
        long forwardedBefore = before.getOrDefault("xaf_packets_total{forwarded}", 0L);
        Path checkpoints = machines.dir.resolve("ckpt-etcd");
        List<DeployFixture.XafProcess> workers = new ArrayList<>();
        // systemctl reload (kill -HUP) while the gradients cross the gateway: a full re-read of the registry each
        // time, and the gateway neither stops nor drops a frame.
        java.util.concurrent.atomic.AtomicInteger hups = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean training = new java.util.concurrent.atomic.AtomicBoolean(true);
        Thread reloader = Thread.ofPlatform().daemon(true).name("hup").start(() -> {
            try {
                while (training.get() && gateway.isAlive()) {
                    Thread.sleep(300);
                    gateway.signal("HUP");
                    hups.incrementAndGet();
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        try {
            for (int r = 0; r < 4; r++) {
                workers.add(new DeployFixture.XafProcess(machines.plan.host(r).namespace(), etcdWorkerArgs(r, 4, 4, checkpoints),
                        machines.dir.resolve("etcd-worker-" + r + ".log")));
            }
            String checksum = null;
            for (int r = 0; r < 4; r++) {
                DeployFixture.XafProcess w = workers.get(r);
                int rc = w.await(180);
                assertEquals(0, rc, "rank " + r + " exit status; output:\n" + w.output() + "\nlog:\n"
                        + DeployFixture.log(machines.dir.resolve("etcd-worker-" + r + ".log")));
                List<WorkerLine> done = w.protocolLines("done");
                assertEquals(1, done.size(), w.output());
                if (checksum == null) checksum = done.get(0).get("checksum");
                assertEquals(checksum, done.get(0).get("checksum"), "rank " + r + " ends with other weights");
                // the rank's settings, written once it had joined
                Path settings = io.xaforward.cluster.CheckpointNames.rankSettings(checkpoints.resolve("rank" + r), r);
                assertTrue(Files.readString(settings).contains("\"command\": \"xaf worker\""), settings.toString());
            }
        } finally {
            training.set(false);
            reloader.join(5000);
            for (DeployFixture.XafProcess w : workers) w.close();
        }
        assertTrue(gateway.isAlive(), "SIGHUP must not stop a registry gateway: " + gateway.output());
        assertTrue(hups.get() >= 3, "reloads sent during the training: " + hups.get());
        long deadline = System.currentTimeMillis() + 10_000;
        while (metrics().get("xaf_registry_resyncs_total") < before.get("xaf_registry_resyncs_total") + hups.get()
                && System.currentTimeMillis() < deadline) Thread.sleep(100);
        Map<String, Long> after = metrics();
        assertEquals(before.get("xaf_registry_resyncs_total") + hups.get(), after.get("xaf_registry_resyncs_total"),
                "every SIGHUP re-reads the registry: " + gateway.output());
        assertHopCapKept();
        for (var e : after.entrySet()) {
            if (e.getKey().startsWith("xaf_packets_total{drop_")) {
                assertEquals(before.getOrDefault(e.getKey(), 0L), e.getValue(), e.getKey() + " during the reloads");
            }
        }
        assertEquals(1L, after.get("xaf_registry_up"));
        assertTrue(metrics().getOrDefault("xaf_packets_total{forwarded}", 0L) > forwardedBefore + 100, "gradients crossed the gateway");
        assertEquals(List.of(), inGateway(c -> c.range(EtcdRendezvous.jobPrefix(DeployFixture.JOB)).kvs()),
                "finished workers revoke their registrations");
    }

    @Test
    @Order(3)
    void workersClaimingRanksInAShuffledOrderTrainThroughAGatewayWhoseRoutesFollowTheirRegistrations() throws Exception {
        gateway.close(); // the operator's routes make way; the gateway is back for the later tests
        Path checkpoints = machines.dir.resolve("ckpt-assigned");
        List<DeployFixture.XafProcess> workers = new ArrayList<>();
        try (GatewayProcess follower = startGateway("gateway-follow.yaml", true, List.of("--follow-jobs", "/xaf/jobs/"),
                "xaf-gw-jobs")) {
            assertEquals(Set.of(), routeMapKeys(follower), "no job registered: no route");
            // The hosts ask in a shuffled order, each once the one before holds its rank, so rank i lands on host
            // order[i]: never the plan's layout, and the data centers' ranks interleave. A gateway routing by the
            // plan would send every rank's frames to the wrong host; only routes derived from the registrations work.
            long seed = System.nanoTime();
            List<Integer> order = new ArrayList<>(List.of(0, 1, 2, 3));
            java.util.Random random = new java.util.Random(seed);
            while (order.equals(List.of(0, 1, 2, 3))) java.util.Collections.shuffle(order, random);
            System.out.println("hosts in the order they claim ranks: " + order + " (seed " + seed + ")");
            DeployFixture.XafProcess[] onHost = new DeployFixture.XafProcess[4];
            for (int i = 0; i < 4; i++) {
                int h = order.get(i);
                // No --rank: the rendezvous assigns the lowest free one. --flows 2: the routes' span comes from the
                // registrations too.
                List<String> args = etcdWorkerArgs(h, 4, 3, checkpoints);
                args.subList(args.indexOf("--rank"), args.indexOf("--rank") + 2).clear();
                args.addAll(List.of("--flows", "2"));
                Path log = machines.dir.resolve("assigned-worker-" + h + ".log");
                onHost[h] = new DeployFixture.XafProcess(machines.plan.host(h).namespace(), args, log);
                workers.add(onHost[h]);
                long deadline = System.currentTimeMillis() + 120_000;
                while (!(Files.exists(log) && Files.readString(log).contains("the rendezvous assigned rank " + i))
                        && onHost[h].process.isAlive() && System.currentTimeMillis() < deadline) Thread.sleep(100);
                assertTrue(Files.readString(log).contains("the rendezvous assigned rank " + i),
                        "host " + h + " (order " + order + ") should hold rank " + i + ":\n" + DeployFixture.log(log));
            }
            Set<Integer> ids = Set.of(DeployFixture.JOB << 16, DeployFixture.JOB << 16 | 1, DeployFixture.JOB << 16 | 2,
                    DeployFixture.JOB << 16 | 3);
            assertEquals(ids, awaitRouteKeys(follower, ids::equals), "a route per registered rank: " + follower.output());
            String checksum = null;
            Set<String> ranks = new java.util.TreeSet<>();
            for (int h = 0; h < 4; h++) {
                DeployFixture.XafProcess w = onHost[h];
                int rc = w.await(180);
                String log = DeployFixture.log(machines.dir.resolve("assigned-worker-" + h + ".log"));
                assertEquals(0, rc, "worker on host " + h + ": exit status; output:\n" + w.output() + "\nlog:\n" + log);
                List<WorkerLine> done = w.protocolLines("done");
                assertEquals(1, done.size(), w.output());
                if (checksum == null) checksum = done.get(0).get("checksum");
                assertEquals(checksum, done.get(0).get("checksum"), "worker on host " + h + " ends with other weights");
                String rank = done.get(0).get("rank");
                assertTrue(log.contains("xaf worker: the rendezvous assigned rank " + rank), log);
                assertEquals(Integer.toString(order.indexOf(h)), rank, "host " + h + " trained as the rank it claimed");
                ranks.add(rank);
            }
            assertEquals(Set.of("0", "1", "2", "3"), ranks, "the rendezvous gave every rank once");
            assertEquals(Set.of(), awaitRouteKeys(follower, Set::isEmpty), "the routes leave with the registrations");
            Map<String, Long> m = metrics();
            assertTrue(m.getOrDefault("xaf_packets_total{forwarded}", 0L) > 100, "gradients crossed the gateway: " + m);
            assertEquals(0L, m.getOrDefault("xaf_registry_rejected_total", 0L), follower.output());
        } finally {
            for (DeployFixture.XafProcess w : workers) w.close();
            gateway = startGateway("gateway-ports.yaml", false, List.of("--registry-prefix", ROUTES), "xaf-gw");
        }
    }

    @Test
    @Order(4)
    void rendezvousTimesOutNamingTheMissingRank() throws Exception {
        List<String> args = etcdWorkerArgs(0, 2, 2, machines.dir.resolve("ckpt-timeout"));
        args.set(args.indexOf("--rendezvous-timeout") + 1, "3");
        try (DeployFixture.XafProcess w = new DeployFixture.XafProcess(machines.plan.host(0).namespace(), args,
                machines.dir.resolve("timeout.log"))) {
            assertEquals(1, w.await(60), w.output());
            String log = Files.readString(machines.dir.resolve("timeout.log"));
            assertTrue(log.contains("timed out after 3 s: missing rank 1 (registered: 0)"), log);
        }
        assertEquals(List.of(), inGateway(c -> c.range(EtcdRendezvous.jobPrefix(DeployFixture.JOB)).kvs()),
                "the failed worker left its registration behind");
        assertFalse(Files.exists(machines.dir.resolve("ckpt-timeout")), "the failed worker created its checkpoint dir");
    }

    @Test
    @Order(5)
    void etcdUnreachableAtStartIsAClearErrorAndLeavesNothing() throws Exception {
        List<String> args = etcdWorkerArgs(0, 2, 2, machines.dir.resolve("ckpt-unreachable"));
        String dead = etcdUrlFrom(0).replace(":" + CLIENT_PORT, ":2399");
        args.set(args.indexOf("--etcd") + 1, dead);
        try (DeployFixture.XafProcess w = new DeployFixture.XafProcess(machines.plan.host(0).namespace(), args,
                machines.dir.resolve("unreachable.log"))) {
            assertEquals(1, w.await(60), w.output());
            String log = Files.readString(machines.dir.resolve("unreachable.log"));
            assertTrue(log.contains("xaf: etcd at " + dead + " is unreachable (connection refused)"), log);
        }
        assertFalse(Files.exists(machines.dir.resolve("ckpt-unreachable")), "the failed worker created its checkpoint dir");
        assertEquals(List.of(), inGateway(c -> c.range("/xaf/jobs/").kvs()));
    }

    @Test
    @Order(6)
    void registryOutageKeepsTheLastRoutesAndShowsInMetrics() throws Exception {
        Set<Integer> before = routeMapKeys();
        assertFalse(before.isEmpty());
        etcd.close();
        long deadline = System.currentTimeMillis() + 15_000;
        while (metrics().getOrDefault("xaf_registry_up", 1L) != 0 && System.currentTimeMillis() < deadline) Thread.sleep(100);
        Map<String, Long> m = metrics();
        assertEquals(0L, m.get("xaf_registry_up"), gateway.output());
        assertTrue(m.get("xaf_registry_errors_total") >= 1, m.toString());
        assertEquals(before, routeMapKeys(), "an outage must not touch the routes");
        assertTrue(gateway.process.isAlive(), "the gateway keeps running through an outage");
    }
}
