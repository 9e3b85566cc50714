package io.xaforward.protocol;

import io.xaforward.common.YamlTree;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * What a worker registers at the etcd rendezvous under {@code /xaf/jobs/JOB/ranks/RANK}: one YAML flow mapping with
 * its data center, network form, MTU, interface, MAC, IP (IP forms) or identity (id form), the job token, the job's
 * world size (optional: workers before it did not write one), the UDP flows it sends from (optional, written only
 * when more than one, so gateways older than the key still read the registrations of single-flow ranks), and the
 * data center's gateway next hop. The workers build their world from it; a gateway that follows the jobs
 * ({@code xaf gateway --follow-jobs}, the gateway's {@code JobRoutes}) derives its routes from it. It lives here, with
 * the other formats that cross between XAForward's parts, because both ends read it: the rendezvous (cluster) and the
 * gateway, neither of which depends on the other.
 */
public final class RankRegistration {
    private RankRegistration() {}

    /**
     * The most UDP flows a rank may register: the largest {@code src-port-span} a gateway route carries (the gateway's
     * {@code GatewayConfig.MAX_SRC_PORT_SPAN} is this value, so a registration a gateway reads always fits a route).
     */
    public static final int MAX_FLOWS = 4096;

    /**
     * One registration, read with no YAML 1.1 coercions and duplicate keys refused ({@link YamlTree}), every key
     * known and every value checked, typed: {@code mtu} an Integer, {@code identity} and {@code token} Longs, the
     * gateway a map with {@code ip} or {@code mac}, {@code world} (1..65536) and {@code flows} (1..4096, a route's
     * largest {@code src-port-span}) Integers, the rest Strings.
     */
    public static Map<String, Object> read(String text, String source) {
        Function<String, RuntimeException> fail = why -> new IllegalArgumentException(source + ": " + why);
        // A registration carries the job token and addresses: errors say what is wrong, never quote the text (the
        // YAML parser's own message would show the offending line).
        Function<String, RuntimeException> yamlFail = why -> fail.apply(why.startsWith("not valid YAML")
                ? "not valid YAML (" + text.length() + " chars, not shown)" : why);
        if (!(YamlTree.read(text, yamlFail) instanceof Map<?, ?> reg)) {
            throw fail.apply("not a mapping (" + text.length() + " chars, not shown)");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (var e : reg.entrySet()) {
            String key = String.valueOf(e.getKey());
            Object v = e.getValue();
            if (key.equals("gateway")) {
                if (!(v instanceof Map<?, ?> g) || g.size() != 1 || !(g.get("ip") instanceof String || g.get("mac") instanceof String)) {
                    throw fail.apply("gateway must be {ip: ADDRESS} or {mac: ADDRESS}");
                }
                out.put(key, new LinkedHashMap<>(g));
                continue;
            }
            if (!(v instanceof String s)) throw fail.apply(key + " must be a single value");
            switch (key) {
                case "datacenter", "interface", "ip", "mac" -> out.put(key, s);
                case "form" -> {
                    try {
                        out.put(key, NetworkForm.fromName(s).configName());
                    } catch (IllegalArgumentException ex) {
                        throw fail.apply("form: " + ex.getMessage());
                    }
                }
                case "mtu" -> out.put(key, (int) number(s, 68, 65535, key, fail));
                case "world" -> out.put(key, (int) number(s, 1, 65536, key, fail));
                case "flows" -> out.put(key, (int) number(s, 1, MAX_FLOWS, key, fail));
                case "identity", "token" -> out.put(key, number(s, 0, 0xFFFF_FFFFL, key, fail));
                default -> throw fail.apply("unknown key '" + key + "'");
            }
        }
        for (String k : List.of("datacenter", "form", "mtu")) if (!out.containsKey(k)) throw fail.apply("'" + k + "' is required");
        return out;
    }

    /** Decimal without a leading zero, or 0x hexadecimal, within [min, max]. */
    private static long number(String s, long min, long max, String key, Function<String, RuntimeException> fail) {
        long n;
        try {
            if (s.matches("0|[1-9][0-9]{0,18}")) n = Long.parseLong(s);
            else if (s.matches("0[xX][0-9a-fA-F]{1,15}")) n = Long.parseLong(s.substring(2), 16);
            else throw fail.apply(key + ": " + shown(key, s) + " is not a decimal or 0x number");
        } catch (NumberFormatException e) {
            throw fail.apply(key + ": " + shown(key, s) + " is out of range");
        }
        if (n < min || n > max) throw fail.apply(key + " must be " + min + ".." + max + ", got " + (key.equals("token") ? shown(key, s) : s));
        return n;
    }

    /** A value for an error message: quoted, except the job token's, which is never shown. */
    private static String shown(String key, String value) {
        return key.equals("token") ? "the value (" + value.length() + " chars, not shown)" : "'" + value + "'";
    }

}
