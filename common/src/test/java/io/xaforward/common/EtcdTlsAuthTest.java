package io.xaforward.common;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The etcd client against a real etcd that wants TLS with client certificates and has authentication on
 * (certificates made by the test with openssl): it works with the CA, the client certificate and a user, and every
 * missing or wrong part is refused with a clear error. Tokens live 2 s here, so renewal is exercised too.
 */
class EtcdTlsAuthTest {
    static final String USER = "xaf-gw1";
    @TempDir
    static Path dir;
    static LocalEtcd etcd;
    static LocalEtcd.Tls tls;
    static Path password;

    @BeforeAll
    static void start() throws Exception {
        tls = LocalEtcd.Tls.generate(dir.resolve("pki"), List.of("127.0.0.1", "localhost"));
        etcd = LocalEtcd.start(List.of(), "127.0.0.1", "127.0.0.1", freePort(), freePort(), tls,
                List.of("--auth-token-ttl", "2"));
        etcd.addUser(certOnly(), USER, "s3cret pass", List.of("/xaf/routes/gw1/"));
        etcd.enableAuth(certOnly(), "root-pw-" + System.nanoTime());
        password = privateFile("password", "s3cret pass\n");
    }

    @AfterAll
    static void stop() throws Exception {
        if (etcd != null) {
            etcd.close();
            assertFalse(etcd.isAlive(), "etcd left running");
        }
    }

    static EtcdSecurity certOnly() {
        return new EtcdSecurity(tls.ca(), tls.clientCert(), tls.clientKey(), null, null);
    }

    static EtcdSecurity full(Path passwordFile) {
        return new EtcdSecurity(tls.ca(), tls.clientCert(), tls.clientKey(), USER, passwordFile);
    }

    static Path privateFile(String name, String text) throws IOException {
        Path f = dir.resolve(name);
        Files.writeString(f, text);
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        return f;
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Test
    void tlsWithAClientCertificateAndAUserReadsWritesAndWatches() throws Exception {
        assertTrue(etcd.clientUrl().toString().startsWith("https://"));
        try (EtcdClient c = new EtcdClient(etcd.clientUrl(), Duration.ofSeconds(5), full(password))) {
            c.put("/xaf/routes/gw1/r1", "one", 0);
            long from = c.range("/xaf/routes/gw1/").revision() + 1;
            List<EtcdClient.Event> seen = new CopyOnWriteArrayList<>();
            Thread w = Thread.ofPlatform().daemon(true).start(() -> {
                try {
                    c.watch("/xaf/routes/gw1/", from, seen::addAll);
                } catch (EtcdException ignored) {
                    // ends with the client
                }
            });
            c.put("/xaf/routes/gw1/r2", "two", 0);
            long deadline = System.currentTimeMillis() + 10_000;
            while (seen.isEmpty() && System.currentTimeMillis() < deadline) Thread.sleep(50);
            assertEquals("/xaf/routes/gw1/r2=two", seen.getFirst().key() + "=" + seen.getFirst().value());
            Thread.sleep(3000); // the 2 s token expires: the next call authenticates again
            assertEquals(List.of("one", "two"), c.range("/xaf/routes/gw1/").kvs().stream().map(EtcdClient.KeyValue::value).toList());
            w.interrupt();
        }
    }

    @Test
    void everyMissingOrWrongCredentialIsRefusedClearly() throws Exception {
        URI url = etcd.clientUrl();
        // No credentials: etcd's auth refuses the read.
        try (EtcdClient c = new EtcdClient(url, Duration.ofSeconds(5), certOnly())) {
            EtcdException e = assertThrows(EtcdException.class, () -> c.range("/xaf/routes/gw1/"));
            assertEquals("etcd at " + url + " refused /v3/kv/range (HTTP 403): etcdserver: permission denied", e.getMessage());
        }
        // A wrong password.
        try (EtcdClient c = new EtcdClient(url, Duration.ofSeconds(5), full(privateFile("wrong", "guess\n")))) {
            EtcdException e = assertThrows(EtcdException.class, () -> c.range("/xaf/routes/gw1/"));
            assertTrue(e.getMessage().contains("refused user '" + USER + "'") && e.getMessage().contains("authentication failed"),
                    e.getMessage());
        }
        // The right user, outside its prefix: another gateway's routes, the rendezvous.
        try (EtcdClient c = new EtcdClient(url, Duration.ofSeconds(5), full(password))) {
            EtcdException e = assertThrows(EtcdException.class, () -> c.put("/xaf/routes/gw2/r1", "hijack", 0));
            assertTrue(e.getMessage().contains("permission denied"), e.getMessage());
        }
        // No client certificate: the TLS handshake fails (etcd runs with --client-cert-auth).
        try (EtcdClient c = new EtcdClient(url, Duration.ofSeconds(5), new EtcdSecurity(tls.ca(), null, null, USER, password))) {
            EtcdException e = assertThrows(EtcdException.class, () -> c.range("/xaf/routes/gw1/"));
            assertTrue(e.getMessage().startsWith("etcd at " + url + " is unreachable"), e.getMessage());
        }
        // Another CA: etcd's certificate is not trusted.
        LocalEtcd.Tls other = LocalEtcd.Tls.generate(dir.resolve("other-pki"), List.of("127.0.0.1"));
        try (EtcdClient c = new EtcdClient(url, Duration.ofSeconds(5), new EtcdSecurity(other.ca(), tls.clientCert(), tls.clientKey(), USER, password))) {
            EtcdException e = assertThrows(EtcdException.class, () -> c.range("/xaf/routes/gw1/"));
            assertTrue(e.getMessage().contains("is unreachable"), e.getMessage());
        }
        // Plain http to a TLS etcd with TLS options is a usage error, before anything is sent.
        IllegalArgumentException usage = assertThrows(IllegalArgumentException.class,
                () -> new EtcdClient(URI.create("http://127.0.0.1:2379"), Duration.ofSeconds(1), full(password)));
        assertTrue(usage.getMessage().contains("need an https:// endpoint"), usage.getMessage());
        // A password file others can read is refused as a secret file is.
        Path open = dir.resolve("open-password");
        Files.writeString(open, "s3cret pass\n");
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rw-r--r--"));
        try (EtcdClient c = new EtcdClient(url, Duration.ofSeconds(5), full(open))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.range("/xaf/routes/gw1/"));
            assertTrue(e.getMessage().contains("etcd password file " + open + " is accessible by group or others"), e.getMessage());
        }
    }
}
