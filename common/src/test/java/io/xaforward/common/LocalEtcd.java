package io.xaforward.common;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.Map;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A single-member etcd server on loopback, as a child process with its own temporary data directory and free
 * ports: for tests and single-host trials. {@link #close()} stops it (SIGTERM, then SIGKILL) and deletes the data.
 * Needs the {@code etcd} binary (Debian package etcd-server).
 */
public final class LocalEtcd implements AutoCloseable {
    private final Process process;
    private final Path dataDir;
    private final URI clientUrl;

    private LocalEtcd(Process process, Path dataDir, URI clientUrl) {
        this.process = process;
        this.dataDir = dataDir;
        this.clientUrl = clientUrl;
    }

    /** Starts etcd on 127.0.0.1 (free ports) and waits until it serves clients (at most 30 s). */
    public static LocalEtcd start() throws IOException, InterruptedException {
        int client = freePort(), peer = freePort();
        return start(List.of(), "127.0.0.1", "127.0.0.1", client, peer);
    }

    /**
     * Starts etcd through {@code commandPrefix} (e.g. {@code ip netns exec NS}), listening for clients on
     * {@code listenHost} (e.g. {@code [::]} for every address) and advertising {@code advertiseHost}, and waits
     * until it serves clients (at most 30 s).
     */
    public static LocalEtcd start(List<String> commandPrefix, String listenHost, String advertiseHost, int clientPort,
                                  int peerPort) throws IOException, InterruptedException {
        return start(commandPrefix, listenHost, advertiseHost, clientPort, peerPort, null, List.of());
    }

    /**
     * As above; with {@code tls} clients must speak TLS (https) and present a certificate signed by its CA (etcd's
     * {@code --client-cert-auth}); {@code extraArgs} go to etcd as they are (e.g. {@code --auth-token-ttl 2}).
     */
    public static LocalEtcd start(List<String> commandPrefix, String listenHost, String advertiseHost, int clientPort,
                                  int peerPort, Tls tls, List<String> extraArgs) throws IOException, InterruptedException {
        Path data = Files.createTempDirectory("xaf-etcd-");
        String scheme = tls == null ? "http://" : "https://";
        URI url = URI.create(scheme + advertiseHost + ":" + clientPort);
        String peer = "http://127.0.0.1:" + peerPort;
        List<String> cmd = new java.util.ArrayList<>(commandPrefix);
        cmd.addAll(List.of("etcd", "--name", "xaf-local", "--data-dir", data.resolve("member").toString(),
                "--listen-client-urls", scheme + listenHost + ":" + clientPort, "--advertise-client-urls", url.toString(),
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "xaf-local=" + peer));
        if (tls != null) {
            cmd.addAll(List.of("--cert-file", tls.serverCert().toString(), "--key-file", tls.serverKey().toString(),
                    "--trusted-ca-file", tls.ca().toString(), "--client-cert-auth"));
        }
        cmd.addAll(extraArgs);
        Path log = data.resolve("etcd.log");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            deleteTree(data);
            throw new IOException("cannot start etcd (install the Debian package etcd-server): " + e.getMessage(), e);
        }
        LocalEtcd etcd = new LocalEtcd(p, data, url);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.readString(log).contains("ready to serve client requests")) {
            if (!p.isAlive() || System.nanoTime() > deadline) {
                String text = Files.readString(log);
                etcd.close();
                throw new IOException("etcd did not come up on " + url + ": " + text.strip());
            }
            Thread.sleep(100);
        }
        return etcd;
    }

    public URI clientUrl() { return clientUrl; }

    /**
     * Adds {@code user} with {@code password}, allowed to read and write only the keys under {@code prefixes}; call it
     * before {@link #enableAuth}. {@code access} reaches this etcd (its client certificate, when etcd runs with TLS).
     */
    public void addUser(EtcdSecurity access, String user, String password, List<String> prefixes) {
        addUser(access, user, password, prefixes, "READWRITE");
    }

    /** As above, with {@code permType} READ, WRITE or READWRITE on the prefixes. */
    public void addUser(EtcdSecurity access, String user, String password, List<String> prefixes, String permType) {
        try (EtcdClient c = new EtcdClient(clientUrl, Duration.ofSeconds(5), access)) {
            c.admin("/v3/auth/role/add", Map.of("name", user));
            for (String prefix : prefixes) {
                c.admin("/v3/auth/role/grant", Map.of("name", user, "perm", Map.of("permType", permType,
                        "key", EtcdClient.b64(prefix), "range_end", Base64.getEncoder().encodeToString(EtcdClient.prefixEnd(prefix)))));
            }
            c.admin("/v3/auth/user/add", Map.of("name", user, "password", password));
            c.admin("/v3/auth/user/grant", Map.of("user", user, "role", user));
        }
    }

    /**
     * Writes {@code keys} in transactions of 128 puts each (etcd's default {@code --max-txn-ops}; 128 short keys stay far
     * below its default 1.5 MiB request limit): tens of thousands of keys in seconds, where one put per request
     * takes minutes. Returns the number of transactions.
     */
    public int putAll(EtcdSecurity access, Map<String, String> keys) {
        final int maxTxnOps = 128;
        int txns = 0;
        try (EtcdClient c = new EtcdClient(clientUrl, Duration.ofSeconds(30), access)) {
            List<Map<String, ?>> puts = new ArrayList<>();
            for (var e : keys.entrySet()) {
                puts.add(Map.of("request_put", Map.of("key", EtcdClient.b64(e.getKey()), "value", EtcdClient.b64(e.getValue()))));
                if (puts.size() == maxTxnOps) {
                    c.admin("/v3/kv/txn", Map.of("success", puts));
                    txns++;
                    puts = new ArrayList<>();
                }
            }
            if (!puts.isEmpty()) {
                c.admin("/v3/kv/txn", Map.of("success", puts));
                txns++;
            }
        }
        return txns;
    }

    /** Deletes every key under {@code prefix} in one request (one revision: a watch sees it as one batch of deletes). */
    public void deletePrefix(EtcdSecurity access, String prefix) {
        try (EtcdClient c = new EtcdClient(clientUrl, Duration.ofSeconds(30), access)) {
            c.admin("/v3/kv/deleterange", Map.of("key", EtcdClient.b64(prefix),
                    "range_end", Base64.getEncoder().encodeToString(EtcdClient.prefixEnd(prefix))));
        }
    }

    /** Turns on etcd's authentication, with a {@code root} user (all rights) whose password is {@code rootPassword}. */
    public void enableAuth(EtcdSecurity access, String rootPassword) {
        try (EtcdClient c = new EtcdClient(clientUrl, Duration.ofSeconds(5), access)) {
            c.admin("/v3/auth/user/add", Map.of("name", "root", "password", rootPassword));
            c.admin("/v3/auth/user/grant", Map.of("user", "root", "role", "root"));
            c.admin("/v3/auth/enable", Map.of());
        }
    }

    /**
     * Certificates for a TLS etcd, made with openssl in a directory: a CA, a server certificate for the given host
     * names and addresses, and a client certificate without a common name (EC P-256, valid two days, keys mode 600).
     */
    public record Tls(Path ca, Path serverCert, Path serverKey, Path clientCert, Path clientKey) {
        public static Tls generate(Path dir, List<String> hosts) throws IOException, InterruptedException {
            Files.createDirectories(dir);
            String sans = String.join(",", hosts.stream()
                    .map(h -> (h.matches("[0-9.]+") || h.contains(":") ? "IP:" : "DNS:") + h).toList());
            Tls t = new Tls(dir.resolve("ca.crt"), dir.resolve("server.crt"), dir.resolve("server.key"),
                    dir.resolve("client.crt"), dir.resolve("client.key"));
            openssl(dir, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=xaf test CA");
            sign(dir, "server", "/CN=etcd", "subjectAltName=" + sans + "\nextendedKeyUsage=serverAuth,clientAuth\n");
            // No common name: etcd's JSON gateway refuses a client certificate with one once auth is on (etcd would
            // take the CN for a user name); the user is given by name and password instead.
            sign(dir, "client", "/O=xaforward/OU=xaf-client", "extendedKeyUsage=clientAuth\n");
            for (Path key : List.of(dir.resolve("ca.key"), t.serverKey(), t.clientKey())) {
                Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
            }
            return t;
        }

        private static void sign(Path dir, String name, String subject, String extensions) throws IOException, InterruptedException {
            openssl(dir, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", name + ".key", "-out", name + ".csr", "-subj", subject);
            Files.writeString(dir.resolve(name + ".ext"), extensions);
            openssl(dir, "x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                    "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext");
        }

        private static void openssl(Path dir, String... args) throws IOException, InterruptedException {
            List<String> cmd = new ArrayList<>(List.of("openssl"));
            cmd.addAll(List.of(args));
            Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            if (p.waitFor() != 0) throw new IOException(String.join(" ", cmd) + " failed: " + out.strip());
        }
    }

    public long pid() { return process.pid(); }

    public boolean isAlive() { return process.isAlive(); }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException ignored) {
            // best effort: a temp dir
        }
    }

    /** Stops etcd (SIGTERM, SIGKILL after 10 s) and deletes its data directory. */
    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
        deleteTree(dataDir);
    }
}
