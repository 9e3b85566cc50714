package io.xaforward.gateway;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Serves the gateway's counters in the Prometheus text exposition format on {@code GET /metrics}.
 * The body is rendered on each scrape from the live per-CPU counters, so a scrape costs one map read.
 *
 * <p>No client can hold the endpoint. One thread serves every connection through a selector, so an idle or slow
 * connection costs a socket and a buffer, never a thread, and a scraper that sends its request is answered as soon
 * as it has, however many others are idle:
 * <ul>
 *   <li>each connection has {@link Limits#requestDeadline()} in all to send its request headers (a deadline for
 *       the whole request, not per read: a client that trickles a byte at a time is dropped as surely as one that
 *       stalls), then {@link Limits#responseDeadline()} in all to read the answer (a client that never reads is
 *       dropped, its answer discarded);</li>
 *   <li>at most {@link Limits#maxConnections()} connections at once, at most {@link Limits#maxPerAddress()} from
 *       one client address. A new connection beyond either limit closes the oldest connection that has not sent
 *       its request yet (of that address for the per-address limit), so idle connections cannot lock a scraper
 *       out, and one address can only push out its own; with every slot busy answering, the new one is closed at
 *       once.</li>
 * </ul>
 */
public final class MetricsServer implements AutoCloseable {
    static final Duration REQUEST_DEADLINE = Duration.ofSeconds(2);
    static final Duration RESPONSE_DEADLINE = Duration.ofSeconds(10);
    static final int MAX_CONNECTIONS = 256;
    static final int MAX_CONNECTIONS_PER_ADDRESS = 32;
    private static final int MAX_REQUEST_BYTES = 8192;
    /** Longest sleep of the selector when no deadline is nearer: closing wakes it anyway. */
    private static final long MAX_SELECT_MS = 1000;

    /**
     * How much a client may take: connections in all and per client address, and the time for the whole request
     * and for the whole answer.
     */
    record Limits(int maxConnections, int maxPerAddress, Duration requestDeadline, Duration responseDeadline) {
        static final Limits DEFAULT = new Limits(MAX_CONNECTIONS, MAX_CONNECTIONS_PER_ADDRESS, REQUEST_DEADLINE,
                RESPONSE_DEADLINE);

        Limits {
            if (maxConnections < 1 || maxPerAddress < 1 || maxPerAddress > maxConnections
                    || !requestDeadline.isPositive() || !responseDeadline.isPositive()) {
                throw new IllegalArgumentException("metrics limits need 1 <= per address <= connections and positive"
                        + " deadlines, were " + maxConnections + ", " + maxPerAddress + ", " + requestDeadline
                        + ", " + responseDeadline);
            }
        }
    }

    private final Limits limits;
    private final ServerSocketChannel server;
    private final Selector selector;
    private final Supplier<String> body;
    private final Thread loop;
    /** Every open connection, oldest first (evictions take the oldest still reading its request). */
    private final LinkedHashSet<Connection> connections = new LinkedHashSet<>();
    private final Map<InetAddress, Integer> perAddress = new HashMap<>();
    private volatile boolean closed;
    /** connections.size(), for {@link #openConnections()} from other threads. */
    private volatile int connectionCount;

    public MetricsServer(String host, int port, Supplier<String> body) {
        this(host, port, body, Limits.DEFAULT);
    }

    MetricsServer(String host, int port, Supplier<String> body, Limits limits) {
        this.body = body;
        this.limits = limits;
        try {
            server = ServerSocketChannel.open();
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(new InetSocketAddress(host, port), 64);
            server.configureBlocking(false);
            selector = Selector.open();
            server.register(selector, SelectionKey.OP_ACCEPT);
        } catch (IOException e) {
            throw new UncheckedIOException("metrics endpoint " + host + ":" + port + ": " + e.getMessage(), e);
        }
        loop = Thread.ofPlatform().daemon(true).name("xaf-metrics").start(this::run);
    }

    /** One client connection: reading its request, then writing its answer. */
    private static final class Connection {
        final SocketChannel channel;
        final InetAddress address;
        final SelectionKey key;
        final ByteBuffer request = ByteBuffer.allocate(MAX_REQUEST_BYTES);
        /** The answer being written; null while the request is read. */
        ByteBuffer response;
        long deadlineNanos;

        Connection(SocketChannel channel, InetAddress address, SelectionKey key, long deadlineNanos) {
            this.channel = channel;
            this.address = address;
            this.key = key;
            this.deadlineNanos = deadlineNanos;
        }

        boolean reading() {
            return response == null;
        }
    }

    private void run() {
        try {
            while (!closed) {
                selector.select(this::onReady, selectTimeoutMs());
                closeExpired();
            }
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                System.err.println("xaf metrics endpoint stopped: " + e);
            }
        } finally {
            for (Connection c : new ArrayList<>(connections)) {
                drop(c);
            }
        }
    }

    private long selectTimeoutMs() {
        long now = System.nanoTime();
        long wait = MAX_SELECT_MS;
        for (Connection c : connections) {
            wait = Math.min(wait, Math.max(1, (c.deadlineNanos - now) / 1_000_000 + 1));
        }
        return wait;
    }

    private void onReady(SelectionKey key) {
        if (!key.isValid()) return;
        if (key.isAcceptable()) {
            acceptAll();
            return;
        }
        Connection c = (Connection) key.attachment();
        try {
            if (key.isReadable() && c.reading()) {
                read(c);
            } else if (key.isWritable() && !c.reading()) {
                write(c);
            }
        } catch (IOException e) {
            drop(c); // the client went away
        }
    }

    private void acceptAll() {
        while (true) {
            SocketChannel ch;
            try {
                ch = server.accept();
            } catch (IOException e) {
                return; // out of descriptors or the like: the next select tries again
            }
            if (ch == null) return;
            InetAddress address;
            try {
                ch.configureBlocking(false);
                address = ((InetSocketAddress) ch.getRemoteAddress()).getAddress();
            } catch (IOException e) {
                closeQuietly(ch);
                continue;
            }
            if (!makeRoom(address)) {
                closeQuietly(ch); // every slot is answering a request: shed load rather than queue without bound
                continue;
            }
            try {
                SelectionKey key = ch.register(selector, SelectionKey.OP_READ);
                Connection c = new Connection(ch, address, key, System.nanoTime() + limits.requestDeadline().toNanos());
                key.attach(c);
                connections.add(c);
                connectionCount = connections.size();
                perAddress.merge(address, 1, Integer::sum);
            } catch (IOException e) {
                closeQuietly(ch);
            }
        }
    }

    /**
     * Makes room for one more connection from {@code address} by closing the oldest connections still reading
     * their request (of that address when it is at its own limit); false when there is none to close.
     */
    private boolean makeRoom(InetAddress address) {
        if (perAddress.getOrDefault(address, 0) >= limits.maxPerAddress() && !evictOldestReading(address)) {
            return false;
        }
        return connections.size() < limits.maxConnections() || evictOldestReading(null);
    }

    private boolean evictOldestReading(InetAddress of) {
        for (Connection c : connections) {
            if (c.reading() && (of == null || of.equals(c.address))) {
                drop(c);
                return true;
            }
        }
        return false;
    }

    private void read(Connection c) throws IOException {
        int from = Math.max(0, c.request.position() - 3);
        if (c.channel.read(c.request) < 0) {
            drop(c);
            return;
        }
        byte[] buf = c.request.array();
        int n = c.request.position();
        for (int i = from; i + 3 < n; i++) {
            if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n') {
                String head = new String(buf, 0, i, StandardCharsets.US_ASCII);
                int end = head.indexOf("\r\n");
                answer(c, end < 0 ? head : head.substring(0, end));
                return;
            }
        }
        if (!c.request.hasRemaining()) {
            answer(c, null); // headers longer than any scraper sends
        }
    }

    /** Renders the answer to {@code requestLine} (null: malformed) and starts writing it. */
    private void answer(Connection c, String requestLine) throws IOException {
        if (requestLine == null) {
            c.response = response(400, "Bad Request", "malformed request\n");
        } else if (!requestLine.startsWith("GET ")) {
            c.response = response(405, "Method Not Allowed", "only GET\n");
        } else if (!requestLine.startsWith("GET /metrics ") && !requestLine.startsWith("GET /metrics?")) {
            c.response = response(404, "Not Found", "try /metrics\n");
        } else {
            c.response = render();
        }
        c.deadlineNanos = System.nanoTime() + limits.responseDeadline().toNanos();
        c.key.interestOps(SelectionKey.OP_WRITE);
        write(c); // most answers fit the socket buffer: done without another select
    }

    /** The scrape's answer. On the selector thread: rendering is one map read, which a second scraper waits for. */
    private ByteBuffer render() {
        String text;
        try {
            text = body.get();
        } catch (RuntimeException e) {
            return response(500, "Internal Server Error", "error: " + e.getMessage() + "\n");
        }
        return response(200, "OK", text);
    }

    private void write(Connection c) throws IOException {
        c.channel.write(c.response);
        if (!c.response.hasRemaining()) {
            drop(c); // Connection: close
        }
    }

    private void closeExpired() {
        long now = System.nanoTime();
        for (Iterator<Connection> it = connections.iterator(); it.hasNext(); ) {
            Connection c = it.next();
            if (now - c.deadlineNanos >= 0) {
                it.remove();
                forget(c); // stalled, trickling or not reading its answer: dropped so it holds nothing
            }
        }
    }

    private void drop(Connection c) {
        if (connections.remove(c)) forget(c);
    }

    private void forget(Connection c) {
        connectionCount = connections.size();
        perAddress.computeIfPresent(c.address, (a, n) -> n > 1 ? n - 1 : null);
        c.key.cancel();
        closeQuietly(c.channel);
    }

    private static ByteBuffer response(int status, String reason, String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        byte[] head = ("HTTP/1.1 " + status + " " + reason + "\r\n"
                + "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                + "Content-Length: " + bytes.length + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
        return ByteBuffer.allocate(head.length + bytes.length).put(head).put(bytes).flip();
    }

    private static void closeQuietly(Closeable s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // already gone
        }
    }

    /** The bound port (useful when 0 was asked for). */
    public int port() {
        return server.socket().getLocalPort();
    }

    /** Open client connections, read racily (tests). */
    int openConnections() {
        return connectionCount;
    }

    @Override
    public void close() {
        closed = true;
        selector.wakeup();
        try {
            loop.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        closeQuietly(server);
        closeQuietly(selector);
    }
}
