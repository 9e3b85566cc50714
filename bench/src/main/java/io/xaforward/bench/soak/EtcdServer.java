package io.xaforward.bench.soak;

import io.xaforward.testbed.Netns;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The soak's etcd: one member in a network namespace, plain http on every address of the namespace, its data in a
 * directory the soak owns. {@link #kill} is the fault (SIGKILL, as a crash or an OOM kill ends it); {@link #start}
 * again on the same directory is the recovery: etcd replays its write-ahead log, so the registrations and their
 * leases come back (etcd gives every lease a fresh TTL when it starts).
 */
final class EtcdServer implements AutoCloseable {
    static final int CLIENT_PORT = 2379;
    private static final int PEER_PORT = 2380;
    private final String namespace;
    private final Path dataDir;
    private Process process;
    private int starts;

    EtcdServer(String namespace, Path dataDir) {
        this.namespace = namespace;
        this.dataDir = dataDir;
    }

    /** Starts etcd and waits (at most 60 s) until it serves clients. */
    synchronized void start() throws IOException, InterruptedException {
        if (process != null && process.isAlive()) throw new IllegalStateException("etcd is already running");
        Files.createDirectories(dataDir);
        Path log = dataDir.resolve("etcd-" + (++starts) + ".log");
        String peer = "http://127.0.0.1:" + PEER_PORT;
        ProcessBuilder pb = Netns.processBuilder(namespace, List.of("etcd", "--name", "xaf-soak",
                "--data-dir", dataDir.resolve("member").toString(),
                "--listen-client-urls", "http://[::]:" + CLIENT_PORT, "--advertise-client-urls", "http://127.0.0.1:" + CLIENT_PORT,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "xaf-soak=" + peer));
        pb.redirectErrorStream(true).redirectOutput(log.toFile());
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new IOException("cannot start etcd (install the Debian package etcd-server): " + e.getMessage(), e);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!Files.readString(log).contains("ready to serve client requests")) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                String text = Files.readString(log);
                kill();
                throw new IOException("etcd did not come up in " + namespace + ": " + tail(text));
            }
            Thread.sleep(100);
        }
    }

    /** SIGKILL, and waits until the process is gone. */
    synchronized void kill() throws InterruptedException {
        if (process == null) return;
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    synchronized boolean isAlive() {
        return process != null && process.isAlive();
    }

    private static String tail(String text) {
        String t = text.strip();
        return t.length() > 2000 ? "..." + t.substring(t.length() - 2000) : t;
    }

    /** Kills etcd; the caller deletes the data directory with the rest of its work directory. */
    @Override
    public void close() throws InterruptedException {
        kill();
    }
}
