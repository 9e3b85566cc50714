package io.xaforward.gateway.registry;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
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
        Path data = Files.createTempDirectory("xaf-etcd-");
        URI url = URI.create("http://" + advertiseHost + ":" + clientPort);
        String peer = "http://127.0.0.1:" + peerPort;
        List<String> cmd = new java.util.ArrayList<>(commandPrefix);
        cmd.addAll(List.of("etcd", "--name", "xaf-local", "--data-dir", data.resolve("member").toString(),
                "--listen-client-urls", "http://" + listenHost + ":" + clientPort, "--advertise-client-urls", url.toString(),
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "xaf-local=" + peer));
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
