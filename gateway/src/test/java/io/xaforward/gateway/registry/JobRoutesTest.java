package io.xaforward.gateway.registry;

import io.xaforward.protocol.RankRegistration;

import io.xaforward.common.LocalEtcd;

import io.xaforward.common.EtcdClient;

import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.GatewayConfigParser;
import io.xaforward.protocol.NetworkForm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A gateway that follows the jobs derives a route from each rank registration of a data center it faces, and the
 * routes come and go with the registrations (the last test against a real etcd, Debian package etcd-server).
 */
class JobRoutesTest {
    /** Port a faces data center a (ipv4, gateway address 10.0.1.254), b faces b (id), c names no data center. */
    static final List<GatewayConfig.PortConfig> PORTS = GatewayConfigParser.parse("""
            ports:
              - {interface: gw-a, form: ipv4, datacenter: a}
              - {interface: gw-b, form: id, datacenter: b}
              - {interface: gw-c, form: ipv6}
            routes: []
            """, "ports.yaml").ports();
    static final byte[] GW_B_MAC = HexFormat.ofDelimiter(":").parseHex("02:00:00:00:0b:fe");

    static final JobRoutes.PortAddresses ADDRESSES = new JobRoutes.PortAddresses() {
        @Override
        public List<InetAddress> ips(String iface) {
            return iface.equals("gw-a") ? List.of(InetAddress.ofLiteral("10.0.1.254")) : List.of();
        }

        @Override
        public byte[] mac(String iface) {
            return iface.equals("gw-b") ? GW_B_MAC.clone() : null;
        }
    };

    static final JobRoutes ROUTES = new JobRoutes(ADDRESSES);

    static String ipv4(int host, String gateway) {
        return "{datacenter: \"a\", form: ipv4, mtu: 1500, interface: \"eth1\", token: 0x5eed0007, mac: \"02:00:00:00:01:0"
                + host + "\", ip: \"10.0.1." + host + "\", gateway: {ip: \"" + gateway + "\"}}";
    }

    static String id(String gateway) {
        return "{datacenter: \"b\", form: id, mtu: 1500, interface: \"eth1\", token: 0x5eed0007, mac: \"02:00:00:00:0b:01\","
                + " identity: 7, gateway: {mac: \"" + gateway + "\"}}";
    }

    static Optional<GatewayConfig.RouteConfig> route(String key, String value) {
        return ROUTES.route(key, value, "registry " + key, PORTS);
    }

    @Test
    void aRegistrationOfAFacedDataCenterBecomesTheRouteToItsRank() {
        GatewayConfig.RouteConfig r = route("/xaf/jobs/7/ranks/2", ipv4(2, "10.0.1.254")).orElseThrow();
        assertEquals(0x00070002, r.networkId());
        assertEquals(7, r.jobId());
        assertEquals(0x5eed0007, r.jobToken());
        assertEquals(Optional.of("gw-a"), r.egress());
        assertEquals(List.of("gw-b", "gw-c"), r.ingress(), "admitted from every other port");
        assertEquals("02:00:00:00:01:02", HexFormat.ofDelimiter(":").formatHex(r.dstMac().orElseThrow()));
        assertArrayEquals(new byte[] {10, 0, 1, 2}, r.dstIp().orElseThrow());
        assertArrayEquals(new byte[] {10, 0, 1, (byte) 254}, r.srcIp().orElseThrow(), "the port's own address");
        assertTrue(r.srcMac().isEmpty(), "the egress interface's own MAC");

        // the largest rank, through a gateway that allows every rank of a job (--max-ranks-per-job 65536)
        GatewayConfig.RouteConfig b = new JobRoutes(ADDRESSES, 0x10000).route("/xaf/jobs/7/ranks/65535", id("02:00:00:00:0B:FE"),
                "registry /xaf/jobs/7/ranks/65535", PORTS).orElseThrow();
        assertEquals(0x0007ffff, b.networkId());
        assertEquals(Optional.of("gw-b"), b.egress());
        assertEquals(Optional.of(NetworkForm.ID), b.form());
        assertTrue(b.srcIp().isEmpty() && b.dstIp().isEmpty());
    }

    @Test
    void aRankRestartedOnAHostOfTheOtherDataCenterTakesItsRouteAlong() {
        String key = "/xaf/jobs/7/ranks/3";
        GatewayConfig.RouteConfig before = route(key, ipv4(3, "10.0.1.254")).orElseThrow();
        assertEquals(Optional.of("gw-a"), before.egress());
        // the same rank, registered again by a host of data center b (its first lease expired)
        GatewayConfig.RouteConfig after = route(key, id("02:00:00:00:0b:fe")).orElseThrow();
        assertEquals(before.networkId(), after.networkId());
        assertEquals(Optional.of("gw-b"), after.egress());
        assertEquals(Optional.of(NetworkForm.ID), after.form());
        assertEquals("02:00:00:00:0b:01", HexFormat.ofDelimiter(":").formatHex(after.dstMac().orElseThrow()));
        assertEquals(List.of("gw-a", "gw-c"), after.ingress());
    }

    @Test
    void theFlowsARankRegistersBecomeItsRoutesSourcePortSpan() {
        assertEquals(1, route("/xaf/jobs/7/ranks/1", ipv4(1, "10.0.1.254")).orElseThrow().srcPortSpan(), "none registered: one");
        String four = ipv4(1, "10.0.1.254").replace(", token:", ", flows: 4, token:");
        assertEquals(4, route("/xaf/jobs/7/ranks/1", four).orElseThrow().srcPortSpan());
        assertEquals(1, route("/xaf/jobs/7/ranks/1", id("02:00:00:00:0b:fe").replace(", token:", ", flows: 4, token:"))
                .orElseThrow().srcPortSpan(), "the id form has no UDP ports");
        for (String bad : List.of("0", "4097", "02")) {
            var e = assertThrows(GatewayConfigParser.ConfigException.class, () -> route("/xaf/jobs/7/ranks/1",
                    ipv4(1, "10.0.1.254").replace(", token:", ", flows: " + bad + ", token:")), bad);
            assertTrue(e.getMessage().contains("flows"), e.getMessage());
        }
    }

    @Test
    void otherKeysAndDataCentersNoPortFacesGiveNoRoute() {
        assertTrue(route("/xaf/jobs/7/training", "{preset: tiny}").isEmpty());
        assertTrue(route("/xaf/jobs/7/ranks/x", ipv4(1, "10.0.1.254")).isEmpty());
        assertTrue(route("/xaf/jobs/07/ranks/1", ipv4(1, "10.0.1.254")).isEmpty(), "not a job number");
        assertTrue(route("/xaf/jobs/7/ranks/1", ipv4(1, "10.0.1.254").replace("\"a\"", "\"z\"")).isEmpty());
    }

    @Test
    void aRegistrationThatContradictsItsPortIsNamed() {
        for (var bad : Map.of(
                ipv4(1, "10.0.9.254"), "registered gateway 10.0.9.254, which is not an address of the port (10.0.1.254)",
                ipv4(1, "10.0.1.254").replace("form: ipv4", "form: ipv6"), "registered form ipv6, the port is ipv4",
                ipv4(1, "10.0.1.254").replace(" token: 0x5eed0007,", ""), "no job token registered",
                ipv4(1, "10.0.1.254").replace("mac: \"02:00:00:00:01:01\", ", ""), "no MAC registered",
                ipv4(1, "fd00::1"), "gateway: 'fd00::1' is not an ipv4 address",
                ipv4(1, "10.0.1.254").replace("token: 0x5eed0007", "token: 010"), "token: the value (3 chars, not shown) is not a decimal or 0x number",
                id("02:00:00:00:0b:99"), "registered gateway 02:00:00:00:0b:99, which is not the port's MAC (02:00:00:00:0b:fe)")
                .entrySet()) {
            var e = assertThrows(GatewayConfigParser.ConfigException.class,
                    () -> route("/xaf/jobs/7/ranks/1", bad.getKey()), bad.getKey());
            assertTrue(e.getMessage().startsWith("registry /xaf/jobs/7/ranks/1") && e.getMessage().contains(bad.getValue()),
                    e.getMessage());
        }
        var e = assertThrows(GatewayConfigParser.ConfigException.class, () -> route("/xaf/jobs/70000/ranks/1", ipv4(1, "10.0.1.254")));
        assertTrue(e.getMessage().contains("job 70000 is outside 1..65535"), e.getMessage());
        e = assertThrows(GatewayConfigParser.ConfigException.class, () -> route("/xaf/jobs/7/ranks/65536", ipv4(1, "10.0.1.254")));
        assertTrue(e.getMessage().contains("rank 65536 is outside 0..65535"), e.getMessage());
    }

    @Test
    void portAddressesAreReadAgainOnlyWhenOlderThanAllowed() throws Exception {
        java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();
        JobRoutes.PortAddresses counting = new JobRoutes.PortAddresses() {
            @Override
            public List<InetAddress> ips(String iface) {
                reads.incrementAndGet();
                return ADDRESSES.ips(iface);
            }

            @Override
            public byte[] mac(String iface) {
                return ADDRESSES.mac(iface);
            }
        };
        JobRoutes.PortAddresses cached = JobRoutes.cached(counting, 200_000_000L);
        for (int i = 0; i < 100; i++) assertEquals(List.of(InetAddress.ofLiteral("10.0.1.254")), cached.ips("gw-a"));
        assertEquals(1, reads.get());
        Thread.sleep(250);
        cached.ips("gw-a");
        assertEquals(2, reads.get(), "read again once older than allowed");
    }

    @Test
    void theWorldSizeARankRegistersIsReadAndChecked() {
        String reg = ipv4(1, "10.0.1.254").replace(", token:", ", world: 4, token:");
        assertEquals(4, RankRegistration.read(reg, "k").get("world"));
        assertFalse(RankRegistration.read(ipv4(1, "10.0.1.254"), "k").containsKey("world"), "optional: older workers wrote none");
        for (String bad : List.of("0", "65537", "-1", "04")) {
            assertThrows(IllegalArgumentException.class,
                    () -> RankRegistration.read(ipv4(1, "10.0.1.254").replace(", token:", ", world: " + bad + ", token:"), "k"), bad);
        }
    }

    @Test
    void thePrefixIsWhereWorkersRegister() {
        assertEquals("/xaf/jobs/", JobRoutes.checkPrefix("/xaf/jobs"));
        assertEquals("/xaf/jobs/7/", JobRoutes.checkPrefix("/xaf/jobs/7/"));
        for (String bad : List.of("/xaf/routes/gw1/", "/xaf/jobs/07/", "/xaf/jobs/7/ranks/", "/")) {
            assertThrows(IllegalArgumentException.class, () -> JobRoutes.checkPrefix(bad), bad);
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void routesComeAndGoWithTheRegistrationsInARealEtcd() throws Exception {
        RouteRegistryWatchTest.Gateway gateway = new RouteRegistryWatchTest.Gateway();
        gateway.config = new GatewayConfig(GatewayConfig.AttachMode.NATIVE, Optional.empty(), false, PORTS, List.of());
        try (LocalEtcd etcd = LocalEtcd.start();
             EtcdClient workers = new EtcdClient(etcd.clientUrl(), Duration.ofSeconds(5))) {
            long first = workers.grantLease(10), second = workers.grantLease(10);
            workers.put("/xaf/jobs/7/ranks/0", ipv4(1, "10.0.1.254"), first);
            workers.put("/xaf/jobs/7/training", "{preset: tiny}", 0);
            try (RouteRegistryWatch watch = new RouteRegistryWatch(gateway, new EtcdClient(etcd.clientUrl(),
                    Duration.ofSeconds(5)), "/xaf/jobs/", ROUTES).start()) {
                assertEquals(List.of(0x00070000), gateway.ids(), "read before the gateway is ready");
                workers.put("/xaf/jobs/7/ranks/1", id("02:00:00:00:0b:fe"), second);
                workers.put("/xaf/jobs/9/ranks/0", ipv4(3, "10.0.1.254").replace("\"a\"", "\"elsewhere\""), second);
                RouteRegistryWatchTest.await(() -> gateway.ids().equals(List.of(0x00070000, 0x00070001)), () -> "" + gateway.ids());
                workers.put("/xaf/jobs/7/ranks/2", ipv4(2, "10.9.9.9"), second);
                RouteRegistryWatchTest.await(() -> gateway.metric("xaf_registry_rejected_total") == 1, () -> "" + gateway.ids());
                assertEquals(List.of(0x00070000, 0x00070001), gateway.ids(), "a bad registration adds no route");

                workers.revoke(first); // rank 0's worker ends
                RouteRegistryWatchTest.await(() -> gateway.ids().equals(List.of(0x00070001)), () -> "" + gateway.ids());
                workers.revoke(second);
                RouteRegistryWatchTest.await(() -> gateway.ids().isEmpty(), () -> "every job ended: " + gateway.ids());
                assertEquals(0, gateway.metric("xaf_registry_empty_refused_total"));
                assertTrue(watch.up());
            }
        }
    }
}
