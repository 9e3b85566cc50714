package io.xaforward.common;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonParseException;
import com.google.gson.ToNumberPolicy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import java.util.function.Consumer;
import javax.net.ssl.SSLException;

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
 * and the call repeated. A user and password over plain {@code http://} are refused: the password and the token
 * would cross the network in clear text.
 *
 * <p>Answers are bounded, so that whoever can write to etcd (or stands between it and us) cannot make a gateway or
 * worker hold an unbounded answer in memory: a call's answer and a watch stream's line are read up to
 * {@link Limits#maxAnswerBytes} and refused beyond it, and a range asks etcd for at most {@link Limits#maxRangeKeys}
 * keys and is refused when more exist. Errors never quote an answer (they carry job tokens, addresses and the auth
 * token): only etcd's own error text, shortened, or the answer's size.
 */
public final class EtcdClient implements AutoCloseable {
    /** etcd's answers: whole numbers stay longs (revisions, lease ids), text stays text. */
    private static final Gson GSON = new GsonBuilder().setObjectToNumberStrategy(ToNumberPolicy.LONG_OR_DOUBLE)
            .disableHtmlEscaping().create();

    /** One key with its value and the revision of its last change. */
    public record KeyValue(String key, String value, long modRevision) {
        /** The key and the value's length only: values carry job tokens and addresses, and strings end up in logs. */
        @Override
        public String toString() {
            return "KeyValue[" + key + ", " + value.length() + " chars, rev " + modRevision + "]";
        }
    }

    /** The keys under a prefix, and the store revision they were read at (watch from {@code revision + 1}). */
    public record Range(List<KeyValue> kvs, long revision) {}

    /** One change: a put (value set) or a delete (value null), at store revision {@code modRevision}. */
    public record Event(String key, String value, long modRevision) {
        public boolean deleted() { return value == null; }

        /** As {@link KeyValue#toString}: never the value. */
        @Override
        public String toString() {
            return "Event[" + key + ", " + (value == null ? "deleted" : value.length() + " chars") + ", rev " + modRevision + "]";
        }
    }

    /**
     * How much of etcd's answers a client accepts.
     *
     * @param maxAnswerBytes the largest answer of one call, and the longest line (one batch of events) of a watch
     * @param maxRangeKeys   the most keys one range may return; more under the prefix is an error, not a truncation
     */
    public record Limits(int maxAnswerBytes, int maxRangeKeys) {
        /**
         * 32 MiB and 65,536 keys: room for a registration of every rank of the largest world (ranks are 16 bits) at
         * about 500 bytes per key as the JSON gateway encodes it, and far less than a JVM's heap.
         */
        public static final Limits DEFAULT = new Limits(32 << 20, 65_536);

        public Limits {
            if (maxAnswerBytes < 1024 || maxRangeKeys < 1) {
                throw new IllegalArgumentException("etcd answer limits must be at least 1 KiB and 1 key, were "
                        + maxAnswerBytes + " bytes and " + maxRangeKeys + " keys");
            }
        }
    }

    /** The most characters of etcd's own error text an exception quotes. */
    private static final int MAX_ERROR_CHARS = 200;

    private final URI endpoint;
    private final Duration timeout;
    private final HttpClient http;
    private final EtcdSecurity security;
    private final Limits limits;
    private volatile String token;

    /** @param endpoint e.g. http://127.0.0.1:2379 */
    public EtcdClient(URI endpoint, Duration timeout) {
        this(endpoint, timeout, EtcdSecurity.NONE);
    }

    /** @param endpoint e.g. https://10.0.0.5:2379 (https whenever {@code security} has TLS files) */
    public EtcdClient(URI endpoint, Duration timeout, EtcdSecurity security) {
        this(endpoint, timeout, security, Limits.DEFAULT);
    }

    /** As above, with other answer limits than {@link Limits#DEFAULT}. */
    public EtcdClient(URI endpoint, Duration timeout, EtcdSecurity security, Limits limits) {
        String scheme = endpoint.getScheme();
        if (scheme == null || !(scheme.equals("http") || scheme.equals("https")) || endpoint.getHost() == null) {
            throw new IllegalArgumentException("etcd endpoint must look like http://HOST:PORT or https://HOST:PORT, was " + endpoint);
        }
        if (security.tls() && !scheme.equals("https")) {
            throw new IllegalArgumentException("etcd TLS options (CA, client certificate) need an https:// endpoint, was " + endpoint);
        }
        if (security.user() != null && !scheme.equals("https")) {
            throw new IllegalArgumentException("etcd user '" + security.user() + "' with a password over plain http ("
                    + endpoint + ") would send the password and the auth token in clear text: use an https:// endpoint"
                    + " (--etcd-ca) or client certificates (--etcd-cert, --etcd-key) instead");
        }
        this.endpoint = endpoint;
        this.timeout = timeout;
        this.security = security;
        this.limits = limits;
        HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(timeout).version(HttpClient.Version.HTTP_1_1);
        if (scheme.equals("https")) b.sslContext(security.sslContext());
        this.http = b.build();
    }

    public URI endpoint() { return endpoint; }

    /**
     * One page of a keys-only listing: keys from {@code fromKey} on (inclusive) that start with {@code prefix}, in
     * key order, at most {@code limit} of them; {@code more} says whether keys remain after the last one.
     */
    public record KeyPage(List<String> keys, long revision, boolean more) {}

    /**
     * Everything under {@code prefix}; more than {@link Limits#maxRangeKeys} keys there is an
     * {@link EtcdException.AnswerRefused} (etcd is asked for that many and says whether there are more).
     */
    public Range range(String prefix) {
        return range(prefix, 0);
    }

    /** As {@link #range(String)}, at store revision {@code revision} (0: the newest). */
    public Range range(String prefix, long revision) {
        Map<?, ?> r = rangeCall(prefix.getBytes(StandardCharsets.UTF_8), prefixEnd(prefix), revision,
                limits.maxRangeKeys(), "", prefix);
        List<KeyValue> kvs = new ArrayList<>();
        try {
            if (r.get("kvs") instanceof List<?> list) {
                if (list.size() > limits.maxRangeKeys()) throw tooManyKeys(prefix);
                for (Object o : list) kvs.add(keyValue((Map<?, ?>) o));
            }
            if (Boolean.TRUE.equals(r.get("more"))) throw tooManyKeys(prefix);
            return new Range(kvs, revision(r));
        } catch (ClassCastException | NullPointerException | IllegalArgumentException e) {
            throw malformed("range", prefix);
        }
    }

    /**
     * How many keys start with {@code prefix} at {@code revision} (0: the newest), without reading them: etcd
     * counts in its index, so a prefix far beyond the limits costs one small answer.
     */
    public long count(String prefix, long revision) {
        Map<?, ?> r = rangeCall(prefix.getBytes(StandardCharsets.UTF_8), prefixEnd(prefix), revision, 0, "count_only", prefix);
        try {
            return r.get("count") == null ? 0 : Long.parseLong(String.valueOf(r.get("count")));
        } catch (NumberFormatException e) {
            throw malformed("count", prefix);
        }
    }

    /**
     * Keys only, from {@code fromKey} (inclusive) to the end of {@code prefix}, at most {@code limit} (at most
     * {@link Limits#maxRangeKeys}): the way to walk a prefix too large for one {@link #range} page by page, from the
     * last key seen (or further, to skip what follows it).
     */
    public KeyPage keys(String fromKey, String prefix, long revision, int limit) {
        if (limit < 1 || limit > limits.maxRangeKeys()) {
            throw new IllegalArgumentException("a key page holds 1.." + limits.maxRangeKeys() + " keys, was " + limit);
        }
        if (!fromKey.startsWith(prefix)) throw new IllegalArgumentException(fromKey + " is not under " + prefix);
        Map<?, ?> r = rangeCall(fromKey.getBytes(StandardCharsets.UTF_8), prefixEnd(prefix), revision, limit, "keys_only", prefix);
        List<String> keys = new ArrayList<>();
        try {
            if (r.get("kvs") instanceof List<?> list) {
                if (list.size() > limit) throw malformed("key listing", prefix);
                for (Object o : list) keys.add(unb64(((Map<?, ?>) o).get("key")));
            }
            return new KeyPage(keys, revision(r), Boolean.TRUE.equals(r.get("more")));
        } catch (ClassCastException | NullPointerException | IllegalArgumentException e) {
            throw malformed("key listing", prefix);
        }
    }

    /** A range call; {@code flag} ("keys_only", "count_only" or "") is set to true when given. */
    private Map<?, ?> rangeCall(byte[] key, byte[] end, long revision, long limit, String flag, String prefix) {
        Map<String, Object> request = new LinkedHashMap<>();
        request.put("key", b64(key));
        request.put("range_end", b64(end));
        if (limit > 0) request.put("limit", String.valueOf(limit));
        if (revision > 0) request.put("revision", String.valueOf(revision));
        if (!flag.isEmpty()) request.put(flag, true);
        return call("/v3/kv/range", GSON.toJson(request));
    }

    private EtcdException malformed(String what, String prefix) {
        return new EtcdException.AnswerRefused("etcd at " + endpoint + " sent a malformed " + what + " answer for '" + prefix + "'");
    }

    private EtcdException tooManyKeys(String prefix) {
        return new EtcdException.AnswerRefused("etcd at " + endpoint + " holds more than " + limits.maxRangeKeys()
                + " keys under '" + prefix + "'; refused (this client reads at most that many: a registry that large is a"
                + " mistake or an attack; remove the stale keys)");
    }

    /** The answer limits of this client. */
    public Limits limits() {
        return limits;
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
        if (id == null) throw new EtcdException("etcd at " + endpoint + " granted no lease (its answer had no ID)");
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
        HttpResponse<InputStream> response;
        try {
            HttpRequest request = authorized(HttpRequest.newBuilder(endpoint.resolve("/v3/watch")))
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build();
            response = http.send(request, HttpResponse.BodyHandlers.ofInputStream());
        } catch (IOException e) {
            throw unreachable(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        try (InputStream in = response.body()) {
            if (response.statusCode() != 200) {
                throw new EtcdException("etcd at " + endpoint + " refused the watch: HTTP " + response.statusCode());
            }
            BoundedLines lines = new BoundedLines(in, limits.maxAnswerBytes());
            String line;
            while ((line = lines.next()) != null) {
                if (line.isBlank()) continue;
                List<Event> batch = watchEvents(line);
                if (!batch.isEmpty()) onEvents.accept(batch);
            }
        } catch (AnswerTooLarge e) {
            throw new EtcdException("etcd at " + endpoint + " sent a watch answer for '" + prefix + "' larger than "
                    + limits.maxAnswerBytes() + " bytes; refused (not read further)");
        } catch (IOException e) {
            throw unreachable(e);
        }
        throw new EtcdException("etcd at " + endpoint + " closed the watch stream");
    }

    /** An answer (or a watch line) longer than {@link Limits#maxAnswerBytes}. */
    static final class AnswerTooLarge extends IOException {
        AnswerTooLarge(long limit) {
            super("answer larger than " + limit + " bytes");
        }
    }

    /** The lines of a watch stream, each at most {@code max} bytes; a longer one stops the reading with {@link AnswerTooLarge}. */
    private static final class BoundedLines {
        private final InputStream in;
        private final int max;
        private final byte[] chunk = new byte[8192];
        private int pos, end;
        private final ByteArrayOutputStream line = new ByteArrayOutputStream();

        BoundedLines(InputStream in, int max) {
            this.in = in;
            this.max = max;
        }

        /** The next line without its end, or null at the end of the stream. */
        String next() throws IOException {
            line.reset();
            while (true) {
                if (pos == end) {
                    end = in.read(chunk);
                    pos = 0;
                    if (end < 0) {
                        end = 0;
                        return line.size() == 0 ? null : line.toString(StandardCharsets.UTF_8);
                    }
                }
                int start = pos;
                while (pos < end && chunk[pos] != '\n') pos++;
                if (line.size() + (pos - start) > max) throw new AnswerTooLarge(max);
                line.write(chunk, start, pos - start);
                if (pos < end) {
                    pos++; // the newline
                    return line.toString(StandardCharsets.UTF_8);
                }
            }
        }
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
            throw new EtcdException("etcd at " + endpoint + " sent a malformed watch answer (" + line.length()
                    + " chars, not shown: answers carry tokens and addresses)");
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
            return http.send(request, responseInfo -> new CappedBody(limits.maxAnswerBytes()));
        } catch (IOException e) {
            if (causedByTooLarge(e)) {
                throw new EtcdException.AnswerRefused("etcd at " + endpoint + " sent an answer to " + path + " larger than "
                        + limits.maxAnswerBytes() + " bytes; refused (not read further)");
            }
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
        HttpResponse<String> response = http.send(request, responseInfo -> new CappedBody(limits.maxAnswerBytes()));
        Object t = response.statusCode() == 200 ? parse(response.body()).get("token") : null;
        if (t == null) {
            throw new EtcdException("etcd at " + endpoint + " refused user '" + security.user() + "': "
                    + errorText(response.body()));
        }
        return String.valueOf(t);
    }

    private static boolean authExpired(String body) {
        String b = body.toLowerCase(Locale.ROOT);
        return b.contains("invalid auth token") || b.contains("auth token is expired") || b.contains("revision of auth store is old");
    }

    /**
     * etcd's error message of an error answer (shortened to {@value #MAX_ERROR_CHARS} characters), or only the
     * answer's size: an answer may carry tokens and addresses, and this text ends up in exceptions and logs.
     */
    static String errorText(String body) {
        try {
            Object o = GSON.fromJson(body, Object.class);
            if (o instanceof Map<?, ?> m && m.get("error") != null) {
                String e = String.valueOf(m.get("error")).replaceAll("\\p{Cntrl}", " ");
                return e.length() <= MAX_ERROR_CHARS ? e : e.substring(0, MAX_ERROR_CHARS) + "...";
            }
        } catch (JsonParseException ignored) {
            // not JSON: described below
        }
        return "an answer of " + body.length() + " chars without an error text (not shown)";
    }

    private static boolean causedByTooLarge(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) if (t instanceof AnswerTooLarge) return true;
        return false;
    }

    /**
     * The body of an answer as text, at most {@code max} bytes: beyond that the subscription is cancelled (the
     * connection is dropped) and the answer fails with {@link AnswerTooLarge}, so nothing larger is ever held.
     */
    private static final class CappedBody implements HttpResponse.BodySubscriber<String> {
        private final HttpResponse.BodySubscriber<byte[]> bytes = HttpResponse.BodySubscribers.ofByteArray();
        private final long max;
        private long seen;
        private boolean overflowed;
        private Flow.Subscription subscription;

        CappedBody(long max) {
            this.max = max;
        }

        @Override
        public CompletionStage<String> getBody() {
            return bytes.getBody().thenApply(b -> new String(b, StandardCharsets.UTF_8));
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            bytes.onSubscribe(s);
        }

        @Override
        public void onNext(List<ByteBuffer> items) {
            if (overflowed) return;
            for (ByteBuffer b : items) seen += b.remaining();
            if (seen > max) {
                overflowed = true;
                subscription.cancel();
                bytes.onError(new AnswerTooLarge(max));
                return;
            }
            bytes.onNext(items);
        }

        @Override
        public void onError(Throwable t) {
            if (!overflowed) bytes.onError(t);
        }

        @Override
        public void onComplete() {
            if (!overflowed) bytes.onComplete();
        }
    }

    private EtcdException unreachable(Throwable e) {
        String why = e instanceof ConnectException ? "connection refused"
                : e instanceof HttpTimeoutException ? "no answer within " + timeout.toMillis() + " ms"
                : e instanceof SSLException ? "TLS handshake failed: " + e.getMessage()
                : String.valueOf(e.getMessage() != null ? e.getMessage() : e);
        return new EtcdException("etcd at " + endpoint + " is unreachable (" + why + ")");
    }

    private static Map<?, ?> parse(String json) {
        Object o;
        try {
            o = GSON.fromJson(json, Object.class);
        } catch (JsonParseException e) {
            throw new EtcdException.AnswerRefused("unexpected answer from etcd: not JSON (" + json.length() + " chars, not shown)");
        }
        if (!(o instanceof Map<?, ?> m)) {
            throw new EtcdException.AnswerRefused("unexpected answer from etcd: not a JSON object (" + json.length() + " chars, not shown)");
        }
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
                return Arrays.copyOf(b, i + 1);
            }
        }
        return new byte[]{0};
    }

    @Override
    public void close() {
        http.shutdownNow(); // close() would wait for a watch stream that never ends
    }
}
