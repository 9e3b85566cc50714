package io.xaforward.gateway;

import io.xaforward.dataplane.sys.NetworkNamespace;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads a gateway's Prometheus endpoint from inside its network namespace. */
public final class GatewayMetrics {
    private static final Pattern SAMPLE = Pattern.compile("(?m)^([a-z_]+)(?:\\{(?:outcome|port)=\"([A-Za-z0-9_.:@-]+)\"\\})? (\\d+)$");

    private GatewayMetrics() {}

    /** Every sample as "name", "name{outcome}" or "name{port interface}" -> value. */
    public static Map<String, Long> scrape(String namespace, String host, int port) {
        return parse(NetworkNamespace.call(namespace, () -> fetch(host, port)));
    }

    /** The samples of a Prometheus text answer, keyed as {@link #scrape} does. */
    static Map<String, Long> parse(String text) {
        Map<String, Long> values = new LinkedHashMap<>();
        Matcher m = SAMPLE.matcher(text);
        while (m.find()) {
            values.put(m.group(2) == null ? m.group(1) : m.group(1) + "{" + m.group(2) + "}", Long.parseLong(m.group(3)));
        }
        return values;
    }

    private static String fetch(String host, int port) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 5000);
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            out.write(("GET /metrics HTTP/1.0\r\nHost: " + host + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String response = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!response.startsWith("HTTP/1.1 200") && !response.startsWith("HTTP/1.0 200")) {
                throw new IOException("metrics endpoint " + host + ":" + port + " answered: " + response.lines().findFirst().orElse(""));
            }
            return response;
        }
    }
}
