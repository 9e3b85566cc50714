package io.xaforward.gateway.registry;

import com.google.gson.Gson;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingDeque;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.TimeUnit;

/**
 * etcd's JSON gateway as far as a route registry uses it (range, with limit, keys_only and count_only, and watch;
 * no history: every read is of the newest keys), scripted by the test: the keys a range answers, and the lines each
 * watch stream sends, including answers a real etcd would never send.
 */
final class FakeEtcd implements AutoCloseable {
    private final HttpServer server;
    private final TreeMap<String, String> keys = new TreeMap<>();
    private volatile long revision = 5;
    private volatile int rangeStatus = 200;
    /** The lines the newest watch stream sends (an older stream, whose client has gone, sends nothing more). */
    final BlockingDeque<String> watchLines = new LinkedBlockingDeque<>();
    private final AtomicInteger watches = new AtomicInteger();

    FakeEtcd() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/v3/kv/range", this::range);
        server.createContext("/v3/watch", this::watch);
        server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool(r -> Thread.ofPlatform().daemon(true).unstarted(r)));
        server.start();
    }

    URI url() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    synchronized void put(String key, String value) {
        keys.put(key, value);
        revision++;
    }

    synchronized void delete(String key) {
        keys.remove(key);
        revision++;
    }

    long revision() { return revision; }

    /** How many watch streams were opened. */
    int watches() { return watches.get(); }

    void failRanges(boolean fail) {
        rangeStatus = fail ? 503 : 200;
    }

    /** A watch answer line with one put event at {@code rev}. */
    static String putEvent(String key, String value, long rev) {
        return "{\"result\":{\"events\":[{\"kv\":{\"key\":\"" + b64(key) + "\",\"value\":\"" + b64(value)
                + "\",\"mod_revision\":\"" + rev + "\"}}]}}";
    }

    /** A watch answer line with one delete event at {@code rev}. */
    static String deleteEvent(String key, long rev) {
        return "{\"result\":{\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":\"" + b64(key) + "\",\"mod_revision\":\""
                + rev + "\"}}]}}";
    }

    /** A range as etcd answers it: the keys in [key, range_end), at most limit, keys only or only their count. */
    private void range(HttpExchange x) throws IOException {
        Map<?, ?> request = new Gson().fromJson(new String(x.getRequestBody().readAllBytes(), StandardCharsets.UTF_8), Map.class);
        String from = unb64((String) request.get("key"));
        String end = request.get("range_end") == null ? from + "\0" : unb64((String) request.get("range_end"));
        long limit = request.get("limit") == null ? Long.MAX_VALUE : Long.parseLong(String.valueOf(request.get("limit")));
        boolean keysOnly = Boolean.TRUE.equals(request.get("keys_only")), countOnly = Boolean.TRUE.equals(request.get("count_only"));
        StringBuilder b = new StringBuilder("{\"header\":{\"revision\":\"" + revision + "\"}");
        synchronized (this) {
            // range_end "\0" (all keys from key on) does not occur here: the registry always asks for a prefix
            Map<String, String> range = keys.subMap(from, end);
            b.append(",\"count\":\"").append(range.size()).append("\"");
            if (!countOnly) {
                b.append(",\"kvs\":[");
                String sep = "";
                long n = 0;
                for (var e : range.entrySet()) {
                    if (n++ == limit) break;
                    b.append(sep).append("{\"key\":\"").append(b64(e.getKey())).append("\"");
                    if (!keysOnly) b.append(",\"value\":\"").append(b64(e.getValue())).append("\"");
                    b.append(",\"mod_revision\":\"").append(revision).append("\"}");
                    sep = ",";
                }
                b.append("]");
                if (range.size() > limit) b.append(",\"more\":true");
            }
        }
        send(x, rangeStatus, b.append("}").toString());
    }

    private static String unb64(String s) {
        return new String(Base64.getDecoder().decode(s), StandardCharsets.UTF_8);
    }

    private void watch(HttpExchange x) throws IOException {
        x.getRequestBody().readAllBytes();
        int mine = watches.incrementAndGet();
        x.sendResponseHeaders(200, 0);
        try (OutputStream out = x.getResponseBody()) {
            out.write("{\"result\":{\"created\":true}}\n".getBytes(StandardCharsets.UTF_8));
            out.flush();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (System.nanoTime() < end) {
                String line = watchLines.poll(100, TimeUnit.MILLISECONDS);
                if (watches.get() != mine) {
                    if (line != null) watchLines.offerFirst(line); // for the newer stream
                    return;
                }
                if (line == null) continue;
                out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
                out.flush();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void send(HttpExchange x, int status, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        x.sendResponseHeaders(status, b.length);
        try (OutputStream out = x.getResponseBody()) {
            out.write(b);
        }
    }

    private static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
