package io.xaforward.gateway.registry;

import io.xaforward.common.LocalEtcd;

import io.xaforward.common.EtcdSecurity;

import io.xaforward.common.EtcdException;

import io.xaforward.common.EtcdClient;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.*;

/**
 * What an etcd (or whoever answers in its place) can make the client hold and print: answers are bounded in bytes
 * and keys, a password never crosses plain http, and no answer is quoted in an error or a log line. Against a real
 * etcd started on loopback by the test (and stopped after), and the scripted {@link FakeEtcd} for answers a real
 * one never sends.
 */
class EtcdAnswerLimitsTest {
    static final String SECRET = "5eedc0de-SECRET-10.77.7.7";
    static LocalEtcd etcd;

    @BeforeAll
    static void start() throws Exception {
        etcd = LocalEtcd.start();
    }

    @AfterAll
    static void stop() throws Exception {
        if (etcd != null) {
            etcd.close();
            assertFalse(etcd.isAlive(), "etcd left running");
        }
    }

    @Test
    void aUserAndPasswordOverPlainHttpAreRefusedBeforeAnythingIsSent() {
        EtcdSecurity user = new EtcdSecurity(null, null, null, "xaf", Path.of("/nonexistent/password"));
        var e = assertThrows(IllegalArgumentException.class,
                () -> new EtcdClient(etcd.clientUrl(), Duration.ofSeconds(5), user));
        assertEquals("etcd user 'xaf' with a password over plain http (" + etcd.clientUrl() + ") would send the password"
                + " and the auth token in clear text: use an https:// endpoint (--etcd-ca) or client certificates"
                + " (--etcd-cert, --etcd-key) instead", e.getMessage());
    }

    @Test
    void aRangeOfMoreKeysThanTheLimitIsRefusedNotTruncated() {
        try (EtcdClient c = new EtcdClient(etcd.clientUrl(), Duration.ofSeconds(5), EtcdSecurity.NONE,
                new EtcdClient.Limits(64 << 10, 5))) {
            for (int i = 0; i < 5; i++) c.put("/lim-keys/a/" + i, "v", 0);
            assertEquals(5, c.range("/lim-keys/a/").kvs().size(), "exactly the limit is fine");
            for (int i = 0; i < 6; i++) c.put("/lim-keys/b/" + i, "v", 0);
            var e = assertThrows(EtcdException.class, () -> c.range("/lim-keys/b/"));
            assertTrue(e.getMessage().startsWith("etcd at " + etcd.clientUrl() + " holds more than 5 keys under '/lim-keys/b/'; refused"),
                    e.getMessage());
        }
    }

    @Test
    void anAnswerLargerThanTheLimitIsRefusedAndTheClientStillWorks() {
        try (EtcdClient c = new EtcdClient(etcd.clientUrl(), Duration.ofSeconds(5), EtcdSecurity.NONE,
                new EtcdClient.Limits(8 << 10, 100))) {
            c.put("/lim-bytes/big", "x".repeat(9 << 10) + SECRET, 0);
            var e = assertThrows(EtcdException.class, () -> c.range("/lim-bytes/"));
            assertEquals("etcd at " + etcd.clientUrl() + " sent an answer to /v3/kv/range larger than 8192 bytes;"
                    + " refused (not read further)", e.getMessage());
            c.put("/lim-bytes-small/a", "small", 0);
            assertEquals("small", c.range("/lim-bytes-small/").kvs().getFirst().value());
        }
    }

    @Test
    void aWatchLineLargerThanTheLimitEndsTheWatchWithAClearError() throws Exception {
        try (EtcdClient c = new EtcdClient(etcd.clientUrl(), Duration.ofSeconds(5), EtcdSecurity.NONE,
                new EtcdClient.Limits(8 << 10, 100))) {
            long from = c.range("/lim-watch/").revision() + 1;
            List<EtcdClient.Event> seen = new CopyOnWriteArrayList<>();
            List<Throwable> ended = new CopyOnWriteArrayList<>();
            Thread t = Thread.ofPlatform().daemon(true).start(() -> {
                try {
                    c.watch("/lim-watch/", from, seen::addAll);
                } catch (RuntimeException e) {
                    ended.add(e);
                }
            });
            c.put("/lim-watch/small", "ok", 0);
            // The big value only once the small one arrived: events etcd catches up on come in one answer.
            long deadline = System.currentTimeMillis() + 10_000;
            while (seen.isEmpty() && System.currentTimeMillis() < deadline) Thread.sleep(20);
            c.put("/lim-watch/big", "y".repeat(9 << 10), 0);
            t.join(20_000);
            assertFalse(t.isAlive(), "the watch must end at the oversized line");
            assertEquals(List.of("/lim-watch/small"), seen.stream().map(EtcdClient.Event::key).toList());
            assertEquals(1, ended.size());
            assertEquals("etcd at " + etcd.clientUrl() + " sent a watch answer for '/lim-watch/' larger than 8192 bytes;"
                    + " refused (not read further)", ended.getFirst().getMessage());
        }
    }

    /**
     * A registry whose answers carry a token and an address: a malformed watch answer and a registration that is
     * not valid YAML. What the gateway prints about them (exceptions and its log, captured from the SLF4J backend's
     * standard error) names the problem and never the answer.
     */
    @Test
    void neitherErrorsNorLogLinesQuoteAnAnswer() throws Exception {
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try (FakeEtcd fake = new FakeEtcd()) {
            System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
            RouteRegistryWatchTest.Gateway gateway = new RouteRegistryWatchTest.Gateway();
            fake.put("/xaf/jobs/7/ranks/1", "datacenter: a\nform: id\nmtu: 1500\ntoken: " + SECRET + "\n");
            fake.put("/xaf/jobs/7/ranks/2", "{datacenter: a, token: 0x1, mac: [" + SECRET + "");
            try (EtcdClient client = new EtcdClient(fake.url(), Duration.ofSeconds(5))) {
                RouteRegistryWatch watch = new RouteRegistryWatch(gateway, client, "/xaf/jobs/", JobRoutesTest.ROUTES).start();
                try {
                    fake.watchLines.add("{\"result\":{\"events\":[{\"kv\":\"token " + SECRET + "\"}]}}");
                    RouteRegistryWatchTest.await(() -> gateway.metric("xaf_registry_errors_total") >= 1,
                            () -> "the malformed answer was seen");
                } finally {
                    watch.close();
                }
                // An operator's route entry that is not valid YAML: the parser's message would show its line.
                fake.put("/xaf/routes/gw/r1", "{id: 0x00010001, job: 1, token: " + SECRET + ", egress: [a");
                RouteRegistryWatchTest.Gateway routes = new RouteRegistryWatchTest.Gateway();
                // a client of its own: closing the first watch closed the first client
                RouteRegistryWatch operator = new RouteRegistryWatch(routes, new EtcdClient(fake.url(), Duration.ofSeconds(5)),
                        "/xaf/routes/gw/").start();
                try {
                    RouteRegistryWatchTest.await(() -> routes.metric("xaf_registry_rejected_total") >= 1,
                            () -> "the bad route entry was seen");
                } finally {
                    operator.close();
                }
            }
        } finally {
            System.setErr(err);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        assertTrue(log.contains("/xaf/jobs/7/ranks/2"), "the bad registration is reported, by key:\n" + log);
        assertTrue(log.contains("malformed watch answer"), "the malformed answer is reported:\n" + log);
        assertTrue(log.contains("/xaf/routes/gw/r1: not valid YAML ("), "the bad route entry is reported, by key:\n" + log);
        assertFalse(log.contains("SECRET"), "an answer was quoted in the log:\n" + log);
    }
}
