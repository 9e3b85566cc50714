package io.xaforward.gateway;

import io.xaforward.common.YamlFields;

import io.xaforward.common.YamlTree;

import io.xaforward.protocol.NetworkForm;
import io.xaforward.common.PrivateFiles;
import io.xaforward.protocol.XafHeader;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Reads a gateway YAML file into a {@link GatewayConfig}. Every error names the file and the offending entry, so
 * that a bad config fails before anything is attached.
 */
public final class GatewayConfigParser {
    /** Entries of the XDP program's route map (XAF_MAX_ROUTES in xaf_shared.h). */
    public static final int MAX_ROUTES = 65536;
    private final String source;
    private final int maxRoutes;
    /** The strict key and value checks, errors as "SOURCE: ENTRY: PROBLEM". */
    private final YamlFields fields = YamlFields.prefixed(this::fail);

    private GatewayConfigParser(String source, int maxRoutes) {
        this.source = source;
        this.maxRoutes = maxRoutes;
    }

    public static GatewayConfig parse(Path file) {
        return parse(file, MAX_ROUTES);
    }

    /** Parses a file, allowing at most {@code maxRoutes} routes (the size of the route map it will be written to). */
    public static GatewayConfig parse(Path file, int maxRoutes) {
        return parse(readFile(file), file.toString(), maxRoutes);
    }

    /**
     * The text of a gateway config file, checked as a file that decides what a privileged process does
     * ({@link PrivateFiles#readTrusted}: owned by root or the user the gateway runs as, writable by its owner only,
     * not a symbolic link, in directories nobody else may write; the checks are made on the opened file, so they hold
     * for the text returned). A config others can write would let them choose the routes and job tokens. A refused file is an {@link UnsafeConfigFile}.
     */
    public static String readFile(Path file) {
        try {
            return PrivateFiles.readTrusted(file, "gateway config file");
        } catch (PrivateFiles.UnsafeFileException e) {
            throw new UnsafeConfigFile(e.getMessage());
        } catch (IOException e) {
            if (e.getMessage() != null && e.getMessage().endsWith(" not found")) throw new ConfigException(file + ": file not found");
            throw new ConfigException(file + ": cannot read: " + e.getMessage());
        }
    }

    public static GatewayConfig parse(String yaml, String source) {
        return parse(yaml, source, MAX_ROUTES);
    }

    public static GatewayConfig parse(String yaml, String source, int maxRoutes) {
        return new GatewayConfigParser(source, maxRoutes).parseText(yaml);
    }

    /**
     * One route entry on its own (a route registry's value: YAML or JSON), read as strictly as a route of the file and
     * checked against {@code ports}; errors name {@code source}.
     */
    public static GatewayConfig.RouteConfig parseRoute(String text, String source, List<GatewayConfig.PortConfig> ports) {
        GatewayConfigParser p = new GatewayConfigParser(source, MAX_ROUTES);
        return p.parseRoute(p.fields.map(YamlTree.read(text, p::fail), "route"), "route", ports);
    }

    private GatewayConfig parseText(String yaml) {
        Object root = YamlTree.read(yaml, this::fail);
        if (!(root instanceof Map<?, ?> top)) throw fail("expected a mapping with 'ports' and 'routes'");
        fields.allowOnly(top, "top level", Set.of("attach", "metrics", "reload", "max-hop-limit", "ports", "routes"));

        GatewayConfig.AttachMode attach;
        try {
            attach = GatewayConfig.AttachMode.fromName(fields.string(top, "attach", "native", "top level"));
        } catch (IllegalArgumentException e) {
            throw fail("attach: " + e.getMessage());
        }
        Optional<GatewayConfig.MetricsEndpoint> metrics = parseMetrics(fields.string(top, "metrics", "127.0.0.1:9464", "top level"));
        boolean reload = fields.bool(top, "reload", true, "top level");
        int maxHopLimit = (int) fields.integer(top, "max-hop-limit", GatewayConfig.DEFAULT_MAX_HOP_LIMIT, 2, 255, "top level");

        List<GatewayConfig.PortConfig> ports = new ArrayList<>();
        Set<String> names = new HashSet<>();
        List<?> portList = fields.list(top, "ports", "top level");
        if (portList.isEmpty()) throw fail("ports: at least one interface is needed");
        for (int i = 0; i < portList.size(); i++) {
            String where = "ports[" + i + "]";
            Map<?, ?> p = fields.map(portList.get(i), where);
            fields.allowOnly(p, where, Set.of("interface", "form", "slot", "datacenter"));
            String iface = fields.required(p, "interface", where);
            if (!names.add(iface)) throw fail(where + ": interface '" + iface + "' listed twice");
            int slot = (int) fields.integer(p, "slot", i, 0, 63, where);
            if (ports.stream().anyMatch(q -> q.slot() == slot)) throw fail(where + ": slot " + slot + " used twice");
            Optional<String> dc = p.containsKey("datacenter") ? Optional.of(fields.required(p, "datacenter", where)) : Optional.empty();
            if (dc.isPresent() && ports.stream().anyMatch(q -> q.datacenter().equals(dc))) {
                throw fail(where + ": data center '" + dc.get() + "' faces two ports");
            }
            ports.add(new GatewayConfig.PortConfig(iface, form(fields.required(p, "form", where), where), slot, dc));
        }

        List<GatewayConfig.RouteConfig> routes = new ArrayList<>();
        Set<Integer> ids = new HashSet<>();
        // Required, even when empty (routes: []): a file cut short after its ports must not read as "no routes".
        List<?> routeList = fields.list(top, "routes", "top level");
        if (routeList.size() > maxRoutes) {
            throw fail("routes: " + routeList.size() + " routes, more than the " + maxRoutes + " the gateway's route map holds");
        }
        for (int i = 0; i < routeList.size(); i++) {
            String where = "routes[" + i + "]";
            GatewayConfig.RouteConfig r = parseRoute(fields.map(routeList.get(i), where), where, ports);
            if (!ids.add(r.networkId())) {
                throw fail(where + ": identifier " + hex(r.networkId()) + " has more than one route");
            }
            routes.add(r);
        }
        return new GatewayConfig(attach, metrics, reload, List.copyOf(ports), List.copyOf(routes), maxHopLimit);
    }

    private GatewayConfig.RouteConfig parseRoute(Map<?, ?> r, String entry, List<GatewayConfig.PortConfig> ports) {
        int id = (int) fields.unsigned32(r, "id", null, entry);
        String where = entry + " (id " + hex(id) + ")";
        fields.allowOnly(r, where, Set.of("id", "job", "token", "action", "egress", "form", "ingress", "src-mac", "dst-mac",
                "src-ip", "dst-ip", "src-port", "src-port-span", "dst-port", "src-id"));
        int job = (int) fields.unsigned32(r, "job", null, where);
        int token = (int) fields.unsigned32(r, "token", null, where);
        GatewayConfig.Action action = switch (fields.string(r, "action", "forward", where)) {
            case "forward" -> GatewayConfig.Action.FORWARD;
            case "local" -> throw fail(where + ": action: local is not supported by the gateway (it has no local"
                    + " receiver: frames would be dropped); use action: forward");
            default -> throw fail(where + ": action must be forward");
        };
        List<String> ingress = new ArrayList<>();
        if (r.containsKey("ingress")) {
            for (Object o : fields.list(r, "ingress", where)) {
                if (!(o instanceof String name)) throw fail(where + ": ingress entries must be interface names");
                if (ports.stream().noneMatch(p -> p.iface().equals(name))) {
                    throw fail(where + ": ingress '" + name + "' is not one of the ports");
                }
                ingress.add(name);
            }
        }
        Optional<String> egress = r.get("egress") == null ? Optional.empty() : Optional.of(fields.string(r, "egress", null, where));
        Optional<NetworkForm> form = Optional.empty();
        Optional<byte[]> srcMac = Optional.empty(), dstMac = Optional.empty(), srcIp = Optional.empty(), dstIp = Optional.empty();
        if (action == GatewayConfig.Action.FORWARD) {
            String eg = egress.orElseThrow(() -> fail(where + ": a forward route needs 'egress' (a port interface)"));
            GatewayConfig.PortConfig port = ports.stream().filter(p -> p.iface().equals(eg)).findFirst()
                    .orElseThrow(() -> fail(where + ": egress '" + eg + "' is not one of the ports"));
            NetworkForm f = r.containsKey("form") ? form(fields.string(r, "form", null, where), where) : port.form();
            form = Optional.of(f);
            dstMac = Optional.of(mac(fields.required(r, "dst-mac", where), where + ": dst-mac"));
            if (r.containsKey("src-mac")) srcMac = Optional.of(mac(fields.string(r, "src-mac", null, where), where + ": src-mac"));
            if (f == NetworkForm.IPV4 || f == NetworkForm.IPV6) {
                srcIp = Optional.of(ip(fields.required(r, "src-ip", where), f, where + ": src-ip"));
                dstIp = Optional.of(ip(fields.required(r, "dst-ip", where), f, where + ": dst-ip"));
            }
        }
        int srcPort = port(r, "src-port", where);
        int srcPortSpan = (int) fields.integer(r, "src-port-span", 1, 1, GatewayConfig.MAX_SRC_PORT_SPAN, where);
        if (srcPort + srcPortSpan - 1 > 65535) {
            throw fail(where + ": src-port-span " + srcPortSpan + " from src-port " + srcPort + " would need source ports up to "
                    + (srcPort + srcPortSpan - 1) + "; the last is 65535");
        }
        int dstPort = port(r, "dst-port", where);
        int srcId = (int) fields.unsigned32(r, "src-id", 0L, where);
        return new GatewayConfig.RouteConfig(id, job, token, action, egress, form, List.copyOf(ingress),
                srcMac, dstMac, srcIp, dstIp, srcPort, srcPortSpan, dstPort, srcId);
    }


    private Optional<GatewayConfig.MetricsEndpoint> parseMetrics(String v) {
        if (v.equals("off") || v.equals("none") || v.equals("false")) return Optional.empty();
        int colon = v.lastIndexOf(':');
        if (colon <= 0) throw fail("metrics: expected HOST:PORT or off, got '" + v + "'");
        try {
            int port = Integer.parseInt(v.substring(colon + 1));
            if (port < 0 || port > 65535) throw new NumberFormatException();
            String host = v.substring(0, colon);
            if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
            return Optional.of(new GatewayConfig.MetricsEndpoint(host, port));
        } catch (NumberFormatException e) {
            throw fail("metrics: bad port in '" + v + "'");
        }
    }

    private NetworkForm form(String name, String where) {
        try {
            return NetworkForm.fromName(name);
        } catch (IllegalArgumentException e) {
            throw fail(where + ": " + e.getMessage());
        }
    }

    private int port(Map<?, ?> m, String key, String where) {
        return (int) fields.integer(m, key, XafHeader.UDP_PORT, 1, 65535, where);
    }

    public static byte[] parseMac(String s) {
        String[] parts = s.split(":");
        if (parts.length != 6) throw new IllegalArgumentException("'" + s + "' is not a MAC address (aa:bb:cc:dd:ee:ff)");
        byte[] b = new byte[6];
        for (int i = 0; i < 6; i++) {
            if (parts[i].length() != 2) throw new IllegalArgumentException("'" + s + "' is not a MAC address");
            b[i] = (byte) Integer.parseInt(parts[i], 16);
        }
        return b;
    }

    private byte[] mac(String s, String where) {
        try {
            return parseMac(s);
        } catch (IllegalArgumentException e) {
            throw fail(where + ": " + e.getMessage());
        }
    }

    private byte[] ip(String s, NetworkForm f, String where) {
        boolean v6 = s.contains(":");
        if ((f == NetworkForm.IPV6) != v6) throw fail(where + ": '" + s + "' is not an " + f.name() + " address");
        try {
            InetAddress a = InetAddress.ofLiteral(s);
            if (f == NetworkForm.IPV4 && !(a instanceof Inet4Address)) throw fail(where + ": '" + s + "' is not IPv4");
            if (f == NetworkForm.IPV6 && !(a instanceof Inet6Address)) throw fail(where + ": '" + s + "' is not IPv6");
            return a.getAddress();
        } catch (IllegalArgumentException e) {
            throw fail(where + ": '" + s + "' is not an IP address");
        }
    }

    ConfigException fail(String msg) {
        return new ConfigException(source + ": " + msg);
    }

    static String hex(int id) {
        return String.format("0x%08x", id);
    }

    /** A gateway config that cannot be used; the message names the file and the entry. */
    public static class ConfigException extends RuntimeException {
        public ConfigException(String message) {
            super(message);
        }
    }

    /** A config file refused for its owner, mode or type (a symbolic link), not for its content. */
    public static final class UnsafeConfigFile extends ConfigException {
        public UnsafeConfigFile(String message) {
            super(message);
        }
    }
}
