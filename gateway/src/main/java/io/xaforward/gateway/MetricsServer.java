package io.xaforward.gateway;

import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;

/**
 * Serves the gateway's counters in the Prometheus text exposition format on {@code GET /metrics}.
 * The body is rendered on each scrape from the live per-CPU counters, so a scrape costs one map read.
 */
public final class MetricsServer implements AutoCloseable {
    private final HttpServer server;

    public MetricsServer(String host, int port, Supplier<String> body) {
        try {
            server = HttpServer.create(new InetSocketAddress(host, port), 16);
        } catch (IOException e) {
            throw new UncheckedIOException("metrics endpoint " + host + ":" + port + ": " + e.getMessage(), e);
        }
        server.createContext("/metrics", exchange -> {
            byte[] bytes;
            int status = 200;
            try {
                bytes = body.get().getBytes(StandardCharsets.UTF_8);
            } catch (RuntimeException e) {
                status = 500;
                bytes = ("error: " + e.getMessage() + "\n").getBytes(StandardCharsets.UTF_8);
            }
            exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(status, bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        });
        server.start();
    }

    /** The bound port (useful when 0 was asked for). */
    public int port() {
        return server.getAddress().getPort();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
