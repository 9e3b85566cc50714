package io.xaforward.gateway.registry;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonParseException;
import com.google.gson.ToNumberPolicy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * A small etcd v3 client over etcd's JSON gateway (HTTP POST to {@code /v3/kv/range}, {@code /v3/kv/txn},
 * {@code /v3/lease/grant}, {@code /v3/watch}, ...), with the JDK's HTTP client: the calls a rendezvous and a route
 * registry need, with Gson for the JSON and no gRPC stack (jetcd would bring grpc, netty and vert.x: dozens of jars
 * for a handful of calls). Keys and values are UTF-8 strings (base64 on the wire, as the JSON gateway wants). Every
 * failure is an {@link EtcdException} that names the endpoint.
 *
 * <p>With an {@code https://} endpoint it speaks TLS, verifying etcd's certificate (and its host name) against the
 * CA of {@link EtcdSecurity}, and presents a client certificate if one is given. With a user it authenticates
 * ({@code /v3/auth/authenticate}) and sends the token with every call; an expired or revoked token is renewed once
 * and the call repeated.
 */
public final class EtcdClient implements AutoCloseable {
    /** etcd's answers: whole numbers stay longs (revisions, lease ids), text stays text. */
    private static final Gson GSON = new GsonBuilder().setObjectToNumberStrategy(ToNumberPolicy.LONG_OR_DOUBLE)
            .disableHtmlEscaping().create();

    /** One key with its value and the revision of its last change. */
    public record KeyValue(String key, String value, long modRevision) {}

    /** The keys under a prefix, and the store revision they were read at (watch from {@code revision + 1}). */
    public record Range(List<KeyValue> kvs, long revision) {}

    /** One change: a put (value set) or a delete (value null), at store revision {@code modRevision}. */
    public record Event(String key, String value, long modRevision) {
        public boolean deleted() { return value == null; }
    }

    private final URI endpoint;
    private final Duration timeout;
    private final HttpClient http;
    private final EtcdSecurity security;
    private volatile String token;

    /** @param endpoint e.g. http://127.0.0.1:2379 */
    public EtcdClient(URI endpoint, Duration timeout) {
        this(endpoint, timeout, EtcdSecurity.NONE);
    }

    /** @param endpoint e.g. https://10.0.0.5:2379 (https whenever {@code security} has TLS files) */
    public EtcdClient(URI endpoint, Duration timeout, EtcdSecurity security) {
        String scheme = endpoint.getScheme();
        if (scheme == null || !(scheme.equals("http") || scheme.equals("https")) || endpoint.getHost() == null) {
            throw new IllegalArgumentException("etcd endpoint must look like http://HOST:PORT or https://HOST:PORT, was " + endpoint);
        }
        if (security.tls() && !scheme.equals("https")) {
            throw new IllegalArgumentException("etcd TLS options (CA, client certificate) need an https:// endpoint, was " + endpoint);
        }
        this.endpoint = endpoint;
        this.timeout = timeout;
        this.security = security;
        HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(timeout).version(HttpClient.Version.HTTP_1_1);
        if (scheme.equals("https")) b.sslContext(security.sslContext());
        this.http = b.build();
    }

    public URI endpoint() { return endpoint; }

    /** Everything under {@code prefix}. */
    public Range range(String prefix) {
        Map<?, ?> r = call("/v3/kv/range", json("key", b64(prefix), "range_end", b64(prefixEnd(prefix))));
        List<KeyValue> kvs = new ArrayList<>();
        try {
            if (r.get("kvs") instanceof List<?> list) {
                for (Object o : list) kvs.add(keyValue((Map<?, ?>) o));
            }
            return new Range(kvs, revision(r));
        } catch (ClassCastException | NullPointerException | IllegalArgumentException e) {
            throw new EtcdException("etcd at " + endpoint + " sent a malformed range answer: " + r);
        }
    }

    /** Sets {@code key} (attached to {@code lease} unless 0). */
    public void put(String key, String value, long lease) {
        call("/v3/kv/put", GSON.toJson(putRequest(key, value, lease)));
    }

    /** Sets {@code key} only if it does not exist; returns false when it does. */
    public boolean create(String key, String value, long lease) {
        Map<String, Object> txn = new LinkedHashMap<>();
        txn.put("compare", List.of(Map.of("key", b64(key), "target", "CREATE", "result", "EQUAL", "create_revision", "0")));
        txn.put("success", List.of(Map.of("request_put", putRequest(key, value, lease))));
        Map<?, ?> r = call("/v3/kv/txn", GSON.toJson(txn));
        return Boolean.TRUE.equals(r.get("succeeded"));
    }

    public void delete(String key) {
        call("/v3/kv/deleterange", json("key", b64(key)));
    }

    /** A lease that expires {@code ttlSeconds} after its last keep-alive; keys put with it vanish then. */
    public long grantLease(long ttlSeconds) {
        Map<?, ?> r = call("/v3/lease/grant", json("TTL", String.valueOf(ttlSeconds)));
        Object id = r.get("ID");
        if (id == null) throw new EtcdException("etcd at " + endpoint + " granted no lease: " + r);
        return Long.parseLong(String.valueOf(id));
    }

    public void keepAlive(long lease) {
        call("/v3/lease/keepalive", json("ID", String.valueOf(lease)));
    }

    public void revoke(long lease) {
        call("/v3/lease/revoke", json("ID", String.valueOf(lease)));
    }

    /**
     * Watches {@code prefix} from {@code fromRevision}, calling {@code onEvents} with each batch of changes, until
     * the stream ends or fails (then it throws) or the calling thread is interrupted. Blocks: run it on its own thread.
     */
    public void watch(String prefix, long fromRevision, Consumer<List<Event>> onEvents) {
        String body = GSON.toJson(Map.of("create_request", Map.of("key", b64(prefix), "range_end", b64(prefixEnd(prefix)),
                "start_revision", String.valueOf(fromRevision))));
        HttpResponse<Stream<String>> response;
        try {
            HttpRequest request = authorized(HttpRequest.newBuilder(endpoint.resolve("/v3/watch")))
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build();
            response = http.send(request, HttpResponse.BodyHandlers.ofLines());
        } catch (IOException e) {
            throw unreachable(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        if (response.statusCode() != 200) {
            throw new EtcdException("etcd at " + endpoint + " refused the watch: HTTP " + response.statusCode());
        }
        try (Stream<String> lines = response.body()) {
            Iterator<String> it = lines.iterator();
            while (it.hasNext()) {
                String line = it.next();
                if (line.isBlank()) continue;
                List<Event> batch = watchEvents(line);
                if (!batch.isEmpty()) onEvents.accept(batch);
            }
        } catch (UncheckedIOException e) {
            throw unreachable(e.getCause());
        }
        throw new EtcdException("etcd at " + endpoint + " closed the watch stream");
    }

    /** The changes of one line of a watch stream; an answer of the wrong shape is an {@link EtcdException}. */
    private List<Event> watchEvents(String line) {
        Map<?, ?> msg = parse(line);
        if (msg.get("error") != null) throw new EtcdException("etcd at " + endpoint + " ended the watch: " + msg.get("error"));
        Map<?, ?> result = msg.get("result") instanceof Map<?, ?> m ? m : Map.of();
        if (Boolean.TRUE.equals(result.get("canceled"))) {
            throw new EtcdException("etcd at " + endpoint + " cancelled the watch: " + result.get("cancel_reason"));
        }
        List<Event> batch = new ArrayList<>();
        try {
            if (result.get("events") instanceof List<?> events) {
                for (Object o : events) {
                    Map<?, ?> e = (Map<?, ?>) o;
                    KeyValue kv = keyValue((Map<?, ?>) e.get("kv"));
                    batch.add(new Event(kv.key(), "DELETE".equals(e.get("type")) ? null : kv.value(), kv.modRevision()));
                }
            }
        } catch (ClassCastException | NullPointerException | IllegalArgumentException e) {
            throw new EtcdException("etcd at " + endpoint + " sent a malformed watch answer: " + line);
        }
        return batch;
    }

    private Map<?, ?> call(String path, String json) {
        HttpResponse<String> response = post(path, json);
        if (security.user() != null && authExpired(response.body())) {
            token = null; // expired or revoked (etcd restarted, simple tokens time out): once more with a new one
            response = post(path, json);
        }
        if (response.statusCode() != 200) {
            throw new EtcdException("etcd at " + endpoint + " refused " + path + " (HTTP " + response.statusCode() + "): "
                    + errorText(response.body()));
        }
        // keepalive streams: the first line is the answer
        String first = response.body().lines().filter(l -> !l.isBlank()).findFirst().orElse("{}");
        Map<?, ?> m = parse(first);
        if (m.get("error") != null) {
            throw new EtcdException("etcd at " + endpoint + " refused " + path + ": " + errorText(first));
        }
        if (m.get("result") instanceof Map<?, ?> result && path.endsWith("keepalive")) {
            if (result.get("TTL") == null || "0".equals(String.valueOf(result.get("TTL")))) {
                throw new EtcdException("etcd at " + endpoint + ": the lease expired");
            }
        }
        return m;
    }

    /** An administrative call (users, roles, auth enable) with a JSON body (the tests' local etcd sets up users and roles with it). */
    void admin(String path, Map<String, ?> body) {
        call(path, GSON.toJson(body));
    }

    private HttpResponse<String> post(String path, String json) {
        try {
            HttpRequest request = authorized(HttpRequest.newBuilder(endpoint.resolve(path))).timeout(timeout)
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(json)).build();
            return http.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw unreachable(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new EtcdException("interrupted while calling etcd at " + endpoint);
        }
    }

    /** The request with the auth token, authenticating first when there is a user and no token yet. */
    private HttpRequest.Builder authorized(HttpRequest.Builder request) throws IOException, InterruptedException {
        if (security.user() == null) return request;
        String t = token;
        if (t == null) t = token = authenticate();
        return request.header("Authorization", t);
    }

    private String authenticate() throws IOException, InterruptedException {
        String body = json("name", security.user(), "password", security.password());
        HttpRequest request = HttpRequest.newBuilder(endpoint.resolve("/v3/auth/authenticate")).timeout(timeout)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
        HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        Object t = response.statusCode() == 200 ? parse(response.body()).get("token") : null;
        if (t == null) {
            throw new EtcdException("etcd at " + endpoint + " refused user '" + security.user() + "': "
                    + errorText(response.body()));
        }
        return String.valueOf(t);
    }

    private static boolean authExpired(String body) {
        String b = body.toLowerCase(java.util.Locale.ROOT);
        return b.contains("invalid auth token") || b.contains("auth token is expired") || b.contains("revision of auth store is old");
    }

    /** etcd's error message of an error answer, or the answer itself. */
    private static String errorText(String body) {
        try {
            Object o = GSON.fromJson(body, Object.class);
            if (o instanceof Map<?, ?> m && m.get("error") != null) return String.valueOf(m.get("error"));
        } catch (JsonParseException ignored) {
            // not JSON: the raw text below
        }
        return body.strip();
    }

    private EtcdException unreachable(Throwable e) {
        String why = e instanceof ConnectException ? "connection refused"
                : e instanceof HttpTimeoutException ? "no answer within " + timeout.toMillis() + " ms"
                : e instanceof javax.net.ssl.SSLException ? "TLS handshake failed: " + e.getMessage()
                : String.valueOf(e.getMessage() != null ? e.getMessage() : e);
        return new EtcdException("etcd at " + endpoint + " is unreachable (" + why + ")");
    }

    private static Map<?, ?> parse(String json) {
        Object o;
        try {
            o = GSON.fromJson(json, Object.class);
        } catch (JsonParseException e) {
            throw new EtcdException("unexpected answer from etcd: " + json);
        }
        if (!(o instanceof Map<?, ?> m)) throw new EtcdException("unexpected answer from etcd: " + json);
        return m;
    }

    /** A JSON object of string fields, in order (etcd's JSON gateway takes 64-bit numbers as strings). */
    private static String json(String... keysAndValues) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) m.put(keysAndValues[i], keysAndValues[i + 1]);
        return GSON.toJson(m);
    }

    private static Map<String, String> putRequest(String key, String value, long lease) {
        Map<String, String> put = new LinkedHashMap<>();
        put.put("key", b64(key));
        put.put("value", b64(value));
        if (lease != 0) put.put("lease", String.valueOf(lease));
        return put;
    }

    private static KeyValue keyValue(Map<?, ?> kv) {
        String key = unb64(kv.get("key"));
        String value = kv.get("value") == null ? "" : unb64(kv.get("value"));
        long rev = kv.get("mod_revision") == null ? 0 : Long.parseLong(String.valueOf(kv.get("mod_revision")));
        return new KeyValue(key, value, rev);
    }

    private static long revision(Map<?, ?> r) {
        if (r.get("header") instanceof Map<?, ?> h && h.get("revision") != null) {
            return Long.parseLong(String.valueOf(h.get("revision")));
        }
        return 0;
    }

    static String b64(String s) {
        return b64(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String b64(byte[] b) {
        return Base64.getEncoder().encodeToString(b);
    }

    private static String unb64(Object o) {
        return new String(Base64.getDecoder().decode(String.valueOf(o)), StandardCharsets.UTF_8);
    }

    /** The range end that makes a range cover every key starting with {@code prefix}. */
    static byte[] prefixEnd(String prefix) {
        byte[] b = prefix.getBytes(StandardCharsets.UTF_8);
        for (int i = b.length - 1; i >= 0; i--) {
            if (b[i] != (byte) 0xff) {
                b[i]++;
                return java.util.Arrays.copyOf(b, i + 1);
            }
        }
        return new byte[]{0};
    }

    @Override
    public void close() {
        http.shutdownNow(); // close() would wait for a watch stream that never ends
    }
}
