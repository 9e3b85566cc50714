package io.xaforward.cluster.rendezvous;

import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.cluster.world.World;
import io.xaforward.common.EtcdClient;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/** The rendezvous reads what ranks registered strictly, and a bad or foreign entry is named and left out. */
class EtcdRendezvousRegistrationTest {
    static final String PREFIX = EtcdRendezvous.jobPrefix(7);

    static EtcdClient.KeyValue kv(String tail, String value) {
        return new EtcdClient.KeyValue(PREFIX + tail, value, 1);
    }

    static String ipv4(String ip, String mtu) {
        return "{datacenter: \"a\", form: ipv4, mtu: " + mtu + ", interface: \"eth1\", ip: \"" + ip + "\", gateway: {ip: \"10.0.1.254\"}}";
    }

    @Test
    void goodRegistrationsMakeTheWorldAndBadOnesAreNamedAndLeftOut() {
        List<String> ignored = new ArrayList<>();
        Map<Integer, Map<String, Object>> ranks = EtcdRendezvous.registrations(List.of(
                kv("0", ipv4("10.0.1.1", "1500")),
                kv("1", ipv4("10.0.1.2", "1500")),
                kv("2", ipv4("10.0.1.3", "1500")),                              // beyond a world of 2
                kv("99999999999999", ipv4("10.0.1.4", "1500")),                 // would overflow an int
                kv("x", ipv4("10.0.1.5", "1500"))), PREFIX, 2, "etcd", ignored::add);
        assertEquals(List.of(0, 1), List.copyOf(ranks.keySet()));
        assertEquals(3, ignored.size(), ignored.toString());
        assertTrue(ignored.get(0).contains(PREFIX + "2: rank 2 is outside the world of 2"), ignored.toString());
        World w = ClusterFile.parse(EtcdRendezvous.clusterYaml(7, ranks), "etcd");
        assertEquals(2, w.worldSize());
    }

    @Test
    void theTokenAndTheMacOfAnIpRankAreReadForGatewaysAndLeftOutOfTheWorld() {
        String reg = "{datacenter: \"a\", form: ipv4, mtu: 1500, interface: \"eth1\", token: 0x5eed0007,"
                + " mac: \"02:00:00:00:01:01\", ip: \"10.0.1.1\", gateway: {ip: \"10.0.1.254\"}}";
        Map<String, Object> read = EtcdRendezvous.registration(reg, "k");
        assertEquals(0x5eed0007L, read.get("token"));
        assertEquals("02:00:00:00:01:01", read.get("mac"));
        String yaml = EtcdRendezvous.clusterYaml(7, Map.of(0, read));
        assertFalse(yaml.contains("02:00:00:00:01:01") || yaml.contains("token"), yaml);
        assertEquals(1, ClusterFile.parse(yaml, "etcd").worldSize());
    }

    @Test
    void aRankRegistersTheWorldSizeThatBoundsAFollowingGatewaysRoutes() {
        EtcdRendezvous r = new EtcdRendezvous(java.net.URI.create("http://127.0.0.1:1"), new EtcdRendezvous.Site("a", "10.0.1.254", 0),
                java.time.Duration.ofSeconds(1), System.out);
        String written = r.registration(io.xaforward.protocol.NetworkForm.IPV4, "eth1", 0x5eed0007, 3, 1,
                new LocalAddress(java.util.Optional.of(java.net.InetAddress.ofLiteral("10.0.1.1")), "02:00:00:00:01:01", 1500));
        assertEquals(3, EtcdRendezvous.registration(written, "k").get("world"), written);
        // a gateway following the jobs reads it as the job's quota: rank 2 gets a route, rank 3 none
        var ports = io.xaforward.gateway.GatewayConfigParser.parse("ports:\n  - {interface: gw-a, form: ipv4, datacenter: a}\nroutes: []\n",
                "ports.yaml").ports();
        io.xaforward.gateway.registry.JobRoutes routes = new io.xaforward.gateway.registry.JobRoutes(
                new io.xaforward.gateway.registry.JobRoutes.PortAddresses() {
                    @Override public List<java.net.InetAddress> ips(String iface) { return List.of(java.net.InetAddress.ofLiteral("10.0.1.254")); }
                    @Override public byte[] mac(String iface) { return null; }
                });
        Map<String, io.xaforward.gateway.GatewayConfig.RouteConfig> derived = new java.util.LinkedHashMap<>();
        for (int rank : new int[] {2, 3}) {
            String key = EtcdRendezvous.jobPrefix(7) + rank;
            derived.put(key, routes.route(key, written, "etcd " + key, ports).orElseThrow());
        }
        assertEquals(List.of(EtcdRendezvous.jobPrefix(7) + 2), List.copyOf(routes.admit(derived).keySet()));
        assertFalse(written.contains("flows"), "one flow is not written, so older gateways read the registration: " + written);
        assertEquals(1, derived.get(EtcdRendezvous.jobPrefix(7) + 2).srcPortSpan());

        // --flows 4: the route to the rank spreads over four source ports, as the identifier plan's would
        String four = r.registration(io.xaforward.protocol.NetworkForm.IPV4, "eth1", 0x5eed0007, 3, 4,
                new LocalAddress(java.util.Optional.of(java.net.InetAddress.ofLiteral("10.0.1.1")), "02:00:00:00:01:01", 1500));
        String key = EtcdRendezvous.jobPrefix(7) + 0;
        assertEquals(4, routes.route(key, four, "etcd " + key, ports).orElseThrow().srcPortSpan(), four);
        r.close();
    }

    @Test
    void valuesAreNotCoercedAndDuplicateKeysAreRefused() {
        assertEquals(1500, EtcdRendezvous.registration(ipv4("10.0.1.1", "1500"), "k").get("mtu"));
        for (var bad : Map.of(
                ipv4("10.0.1.1", "01500"), "mtu: '01500' is not a decimal or 0x number",       // YAML 1.1: octal 832
                ipv4("10.0.1.1", "1_500"), "mtu: '1_500' is not a decimal or 0x number",       // YAML 1.1: 1500
                ipv4("10.0.1.1", "big"), "mtu: 'big' is not a decimal or 0x number",           // was a ClassCastException
                ipv4("10.0.1.1", "70000"), "mtu must be 68..65535, got 70000",
                "{datacenter: a, datacenter: b, form: ipv4, mtu: 1500}", "key 'datacenter' appears twice",
                "{datacenter: a, form: ipv4, mtu: 1500, role: admin}", "unknown key 'role'",
                "{datacenter: a, form: ipx, mtu: 1500}", "form:").entrySet()) {
            var e = assertThrows(IllegalArgumentException.class, () -> EtcdRendezvous.registration(bad.getKey(), "etcd /k"), bad.getKey());
            assertTrue(e.getMessage().startsWith("etcd /k: ") && e.getMessage().contains(bad.getValue()), e.getMessage());
        }
    }
}
