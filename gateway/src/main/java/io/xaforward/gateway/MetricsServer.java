package io.xaforward.gateway;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.function.Supplier;

/**
 * Serves the gateway's counters in the Prometheus text exposition format on {@code GET /metrics}.
 * The body is rendered on each scrape from the live per-CPU counters, so a scrape costs one map read.
 *
 * <p>A scraper cannot hold the endpoint: each connection is served on its own virtual thread, at most
 * {@value #MAX_CONNECTIONS} at once (a connection beyond that is closed at once), and each has
 * {@value #REQUEST_DEADLINE_MS} ms in all to send its request headers: a deadline for the whole request, not per
 * read, so a client that trickles a byte at a time is dropped as surely as one that stalls. A slow client delays
 * nobody else, and holds one of the slots for at most that long.
 */
public final class MetricsServer implements AutoCloseable {
    static final int REQUEST_DEADLINE_MS = 2000;
    static final int MAX_CONNECTIONS = 64;
    private static final int MAX_REQUEST_BYTES = 8192;

    private final ServerSocket server;
    private final Semaphore slots = new Semaphore(MAX_CONNECTIONS);
    private final ExecutorService workers = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("xaf-metrics-", 0).factory());
    private final Thread acceptor;
    private final Supplier<String> body;
    private volatile boolean closed;

    public MetricsServer(String host, int port, Supplier<String> body) {
        this.body = body;
        try {
            server = new ServerSocket();
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(host, port), 64);
        } catch (IOException e) {
            throw new UncheckedIOException("metrics endpoint " + host + ":" + port + ": " + e.getMessage(), e);
        }
        acceptor = Thread.ofPlatform().daemon(true).name("xaf-metrics-accept").start(this::acceptLoop);
    }

    private void acceptLoop() {
        while (!closed) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException e) {
                if (closed) return;
                continue;
            }
            if (!slots.tryAcquire()) {
                closeQuietly(s); // every slot taken: shed load rather than queue without bound
                continue;
            }
            try {
                workers.execute(() -> {
                    try {
                        serve(s);
                    } finally {
                        slots.release();
                    }
                });
            } catch (RejectedExecutionException e) {
                slots.release();
                closeQuietly(s); // closing
            }
        }
    }

    private void serve(Socket s) {
        try (s) {
            String requestLine = readRequestHead(s, System.nanoTime() + REQUEST_DEADLINE_MS * 1_000_000L);
            OutputStream out = s.getOutputStream();
            if (requestLine == null) {
                respond(out, 400, "Bad Request", "malformed request\n");
            } else if (!requestLine.startsWith("GET ")) {
                respond(out, 405, "Method Not Allowed", "only GET\n");
            } else if (!requestLine.startsWith("GET /metrics ") && !requestLine.startsWith("GET /metrics?")) {
                respond(out, 404, "Not Found", "try /metrics\n");
            } else {
                String text;
                try {
                    text = body.get();
                } catch (RuntimeException e) {
                    respond(out, 500, "Internal Server Error", "error: " + e.getMessage() + "\n");
                    return;
                }
                respond(out, 200, "OK", text);
            }
        } catch (SocketTimeoutException e) {
            // the client stalled: dropped so that the worker serves others
        } catch (IOException e) {
            // the client went away
        }
    }

    /**
     * Reads up to the blank line that ends the headers, all of it before {@code deadlineNanos} (each read waits only
     * for what is left of it); returns the request line, or null if malformed. Throws SocketTimeoutException late.
     */
    private static String readRequestHead(Socket s, long deadlineNanos) throws IOException {
        InputStream in = s.getInputStream();
        byte[] buf = new byte[MAX_REQUEST_BYTES];
        int n = 0;
        while (n < buf.length) {
            long leftMs = (deadlineNanos - System.nanoTime()) / 1_000_000L;
            if (leftMs <= 0) throw new SocketTimeoutException("request not complete within " + REQUEST_DEADLINE_MS + " ms");
            s.setSoTimeout((int) leftMs);
            int got = in.read(buf, n, buf.length - n);
            if (got < 0) return null;
            int from = Math.max(0, n - 3);
            n += got;
            for (int i = from; i + 3 < n; i++) {
                if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n') {
                    String head = new String(buf, 0, i + 4, StandardCharsets.US_ASCII);
                    return head.substring(0, head.indexOf("\r\n"));
                }
            }
        }
        return null;
    }

    private static void respond(OutputStream out, int status, String reason, String text) throws IOException {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        String head = "HTTP/1.1 " + status + " " + reason + "\r\n"
                + "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                + "Content-Length: " + bytes.length + "\r\nConnection: close\r\n\r\n";
        out.write(head.getBytes(StandardCharsets.US_ASCII));
        out.write(bytes);
        out.flush();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // already gone
        }
    }

    /** The bound port (useful when 0 was asked for). */
    public int port() {
        return server.getLocalPort();
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // closing
        }
        workers.shutdownNow();
    }
}
