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
 * {@value #READ_TIMEOUT_MS} ms to send its request headers. A client that connects and stalls delays nobody else,
 * and holds one of the slots for at most that long.
 */
public final class MetricsServer implements AutoCloseable {
    static final int READ_TIMEOUT_MS = 2000;
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
            s.setSoTimeout(READ_TIMEOUT_MS);
            String requestLine = readRequestHead(s.getInputStream());
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

    /** Reads up to the blank line that ends the headers; returns the request line, or null if malformed. */
    private static String readRequestHead(InputStream in) throws IOException {
        byte[] buf = new byte[MAX_REQUEST_BYTES];
        int n = 0;
        while (n < buf.length) {
            int b = in.read();
            if (b < 0) return null;
            buf[n++] = (byte) b;
            if (n >= 4 && buf[n - 4] == '\r' && buf[n - 3] == '\n' && buf[n - 2] == '\r' && buf[n - 1] == '\n') {
                String head = new String(buf, 0, n, StandardCharsets.US_ASCII);
                return head.substring(0, head.indexOf("\r\n"));
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
