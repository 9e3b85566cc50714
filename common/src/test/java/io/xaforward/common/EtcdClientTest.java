package io.xaforward.common;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.*;

/** The JSON-gateway etcd client against a real etcd (started on loopback by the test, stopped after). */
class EtcdClientTest {
    static LocalEtcd etcd;
    static EtcdClient client;

    @BeforeAll
    static void start() throws Exception {
        etcd = LocalEtcd.start();
        client = new EtcdClient(etcd.clientUrl(), Duration.ofSeconds(5));
    }

    @AfterAll
    static void stop() throws Exception {
        if (client != null) client.close();
        if (etcd != null) {
            etcd.close();
            assertFalse(etcd.isAlive(), "etcd left running");
        }
    }

    @Test
    void putRangeCreateDeleteUnderAPrefix() {
        client.put("/t1/a", "1", 0);
        client.put("/t1/b", "två", 0);
        client.put("/t10", "outside the prefix /t1/", 0);
        EtcdClient.Range r = client.range("/t1/");
        assertEquals(List.of("/t1/a", "/t1/b"), r.kvs().stream().map(EtcdClient.KeyValue::key).toList());
        assertEquals("två", r.kvs().get(1).value());
        assertTrue(r.revision() >= r.kvs().get(1).modRevision());
        assertFalse(client.create("/t1/a", "again", 0), "create of an existing key must fail");
        assertTrue(client.create("/t1/c", "3", 0));
        client.delete("/t1/a");
        assertEquals(List.of("/t1/b", "/t1/c"), client.range("/t1/").kvs().stream().map(EtcdClient.KeyValue::key).toList());
    }

    @Test
    void keysOfARevokedLeaseVanish() {
        long lease = client.grantLease(30);
        client.put("/t2/x", "v", lease);
        client.keepAlive(lease);
        assertEquals(1, client.range("/t2/").kvs().size());
        client.revoke(lease);
        assertEquals(0, client.range("/t2/").kvs().size());
        assertThrows(EtcdException.class, () -> client.keepAlive(lease));
    }

    @Test
    void watchDeliversPutsAndDeletesFromARevision() throws Exception {
        long from = client.range("/t3/").revision() + 1;
        List<EtcdClient.Event> seen = new CopyOnWriteArrayList<>();
        Thread t = Thread.ofPlatform().daemon(true).start(() -> {
            try {
                client.watch("/t3/", from, seen::addAll);
            } catch (EtcdException ignored) {
                // the test ends the watch by closing nothing: the daemon thread dies with the JVM
            }
        });
        client.put("/t3/r1", "route", 0);
        client.delete("/t3/r1");
        long deadline = System.currentTimeMillis() + 10_000;
        while (seen.size() < 2 && System.currentTimeMillis() < deadline) Thread.sleep(50);
        assertEquals(List.of("/t3/r1=route", "/t3/r1=null"), seen.stream().map(e -> e.key() + "=" + e.value()).toList());
        t.interrupt();
    }

    @Test
    void unreachableEndpointIsAClearError() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        try (EtcdClient dead = new EtcdClient(URI.create("http://127.0.0.1:" + port), Duration.ofSeconds(2))) {
            var e = assertThrows(EtcdException.class, () -> dead.range("/"));
            assertTrue(e.getMessage().contains("etcd at http://127.0.0.1:" + port + " is unreachable"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> new EtcdClient(URI.create("127.0.0.1:2379"), Duration.ofSeconds(1)));
    }

    /** A token and an address as a registration carries them: what must never reach a string that may be logged. */
    static final String CARRIED_SECRET = "5eedc0de-SECRET-10.77.7.7";

    @Test
    void valuesNeverAppearInToStrings() {
        var kv = new EtcdClient.KeyValue("/xaf/jobs/7/ranks/1", "{token: " + CARRIED_SECRET + "}", 3);
        assertFalse(kv.toString().contains(CARRIED_SECRET), kv.toString());
        assertFalse(new EtcdClient.Range(List.of(kv), 3).toString().contains(CARRIED_SECRET));
        assertFalse(new EtcdClient.Event("/k", CARRIED_SECRET, 4).toString().contains(CARRIED_SECRET));
        assertFalse(EtcdClient.errorText("<html>" + CARRIED_SECRET + "</html>").contains(CARRIED_SECRET));
        assertEquals("etcdserver: permission denied", EtcdClient.errorText("{\"error\":\"etcdserver: permission denied\",\"code\":7}"));
    }
}
