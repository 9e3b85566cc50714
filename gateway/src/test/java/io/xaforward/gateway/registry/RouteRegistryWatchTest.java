package io.xaforward.gateway.registry;

import io.xaforward.common.EtcdClient;

import io.xaforward.gateway.GatewayConfig;
import io.xaforward.protocol.NetworkForm;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The route registry's reading of etcd values and its watch thread, against a scripted etcd (which can send what a
 * real one never would) and a gateway stand-in that records the route sets it is given.
 */
class RouteRegistryWatchTest {
    static final String PREFIX = "/xaf/routes/gw/";
    FakeEtcd etcd;
    Gateway gateway;
    RouteRegistryWatch watch;

    /** Records what the watch applies, as the gateway would run it. */
    static class Gateway implements RouteRegistryWatch.Routes {
        volatile GatewayConfig config = new GatewayConfig(GatewayConfig.AttachMode.NATIVE, Optional.empty(), false,
                List.of(new GatewayConfig.PortConfig("a", NetworkForm.ID, 0)), List.of());
        final List<Supplier<String>> metrics = new CopyOnWriteArrayList<>();

        @Override
        public GatewayConfig config() { return config; }

        @Override
        public void applyRoutes(List<GatewayConfig.RouteConfig> routes) {
            GatewayConfig c = config;
            config = new GatewayConfig(c.attach(), c.metrics(), c.reload(), c.ports(), List.copyOf(routes));
        }

        @Override
        public void addMetrics(Supplier<String> lines) { metrics.add(lines); }

        List<Integer> ids() { return config.routes().stream().map(GatewayConfig.RouteConfig::networkId).sorted().toList(); }

        long metric(String name) {
            String text = metrics.getFirst().get();
            return text.lines().filter(l -> l.startsWith(name + " ")).map(l -> Long.parseLong(l.substring(name.length() + 1)))
                    .findFirst().orElseThrow(() -> new AssertionError(name + " missing: " + text));
        }
    }

    static String route(String id) {
        return "{id: " + id + ", job: 1, token: 1, egress: a, dst-mac: \"02:00:00:00:00:01\"}";
    }

    @BeforeEach
    void up() throws Exception {
        etcd = new FakeEtcd();
        gateway = new Gateway();
    }

    @AfterEach
    void down() {
        if (watch != null) watch.close();
        etcd.close();
    }

    void startWatch() {
        watch = new RouteRegistryWatch(gateway, new EtcdClient(etcd.url(), Duration.ofSeconds(5)), PREFIX).start();
    }

    static void await(BooleanSupplier done, Supplier<String> why) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 10_000;
        while (!done.getAsBoolean() && System.currentTimeMillis() < deadline) Thread.sleep(20);
        assertTrue(done.getAsBoolean(), why);
    }

    @Test
    void valuesAreReadWithoutYaml11CoercionsAndABadEntryIsSkippedNotFatal() {
        etcd.put(PREFIX + "r1", route("0x00010001"));
        etcd.put(PREFIX + "octal", route("010"));                                 // YAML 1.1 would read 8
        etcd.put(PREFIX + "twice", "{id: 0x00010003, id: 0x00010004, job: 1, token: 1, egress: a, dst-mac: \"02:00:00:00:00:01\"}");
        etcd.put(PREFIX + "huge", route("0x1000000001"));                          // wider than 32 bits
        etcd.put(PREFIX + "json", "{\"id\": \"0x00010002\", \"job\": 1, \"token\": 1, \"egress\": \"a\", \"dst-mac\": \"02:00:00:00:00:01\"}");
        etcd.put(PREFIX + "dup", route("0x00010001"));                            // same identifier as r1 (sorts before it)
        startWatch();
        // 'dup' sorts before 'r1' and so owns 0x00010001; r1 is the skipped duplicate.
        assertEquals(List.of(0x00010001, 0x00010002), gateway.ids());
        assertEquals(4, gateway.metric("xaf_registry_rejected_total"), "octal, twice, huge and the duplicate are named and skipped");
        assertEquals(1, gateway.metric("xaf_registry_up"));
    }

    @Test
    void aGoodRouteRewrittenBadKeepsItsLastGoodValue() throws Exception {
        etcd.put(PREFIX + "r1", route("0x00010001"));
        startWatch();
        assertEquals(List.of(0x00010001), gateway.ids());
        etcd.watchLines.add(FakeEtcd.putEvent(PREFIX + "r1", "{id: 0x00010001, job: 1, token: 1, egress: a, dst-mac: 1:30}", etcd.revision() + 1));
        etcd.watchLines.add(FakeEtcd.putEvent(PREFIX + "r2", route("0x00010002"), etcd.revision() + 2));
        await(() -> gateway.ids().size() == 2, () -> "r2 applied: " + gateway.ids());
        assertEquals(List.of(0x00010001, 0x00010002), gateway.ids());
        assertEquals(1, gateway.metric("xaf_registry_rejected_total"));
    }

    @Test
    void anEmptySetIsAppliedOnlyWhenMarked() throws Exception {
        etcd.put(PREFIX + "r1", route("0x00010001"));
        startWatch();
        etcd.delete(PREFIX + "r1"); // etcdctl del --prefix
        watch.resyncNow();
        assertEquals(List.of(0x00010001), gateway.ids(), "an unmarked empty set must not empty the route map");
        assertEquals(1, gateway.metric("xaf_registry_empty_refused_total"));
        etcd.put(PREFIX + RouteRegistryWatch.EMPTY_MARKER, "true");
        watch.resyncNow();
        assertEquals(List.of(), gateway.ids());
    }

    @Test
    void aMalformedWatchAnswerRestartsTheWatchAndUpTellsTheTruth() throws Exception {
        etcd.put(PREFIX + "r1", route("0x00010001"));
        startWatch();
        assertEquals(1, gateway.metric("xaf_registry_up"));
        // An answer of the wrong shape (kv is not an object), while etcd cannot be read for a moment.
        etcd.failRanges(true);
        etcd.watchLines.add("{\"result\":{\"events\":[{\"kv\":\"not an object\"}]}}");
        await(() -> gateway.metric("xaf_registry_up") == 0, () -> "up must drop while the registry is unreadable");
        assertTrue(gateway.metric("xaf_registry_errors_total") >= 1);
        // etcd answers again: the thread re-reads everything and follows later changes.
        etcd.put(PREFIX + "r2", route("0x00010002"));
        etcd.failRanges(false);
        await(() -> gateway.ids().size() == 2, () -> "re-read after the bad answer: " + gateway.ids());
        await(() -> gateway.metric("xaf_registry_up") == 1, () -> "up again");
        await(() -> etcd.watches() >= 2, () -> "a new watch");
        etcd.watchLines.add(FakeEtcd.putEvent(PREFIX + "r3", route("0x00010003"), etcd.revision() + 1));
        await(() -> gateway.ids().size() == 3, () -> "the restarted watch follows changes: " + gateway.ids());
    }

    @Test
    void sighupResyncReadsChangesTheWatchHasNotDelivered() {
        etcd.put(PREFIX + "r1", route("0x00010001"));
        startWatch();
        etcd.put(PREFIX + "r2", route("0x00010002"));
        long before = gateway.metric("xaf_registry_resyncs_total");
        watch.resyncNow();
        assertEquals(List.of(0x00010001, 0x00010002), gateway.ids());
        assertEquals(before + 1, gateway.metric("xaf_registry_resyncs_total"));
    }
}
