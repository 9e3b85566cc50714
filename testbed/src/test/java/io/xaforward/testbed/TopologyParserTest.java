package io.xaforward.testbed;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

class TopologyParserTest {
    static final Path TOPOLOGIES = Path.of("..", "topologies");

    private static final String BASE = """
            name: t
            datacenters:
              - {name: a, form: ipv4, hosts: 2}
              - {name: b, form: ipv6, hosts: 1}
              - {name: c, form: id, hosts: [x, y]}
            gateways:
              - {name: gw, joins: [a, b, c]}
            """;

    @Test
    void defaultsAreFilledIn() {
        Topology t = Topology.parse(BASE, "base.yaml");
        assertEquals("t", t.name());
        assertTrue(t.prefix().matches("t[0-9a-f]{3}"), t.prefix());
        Datacenter a = t.datacenter("a"), b = t.datacenter("b"), c = t.datacenter("c");
        assertEquals("10.77.0.0/24", a.subnet().toString());
        assertEquals("fd77:0:1::/64", b.subnet().toString());
        assertNull(c.subnet());
        assertEquals(1500, a.mtu());
        assertEquals(List.of("h0", "h1"), a.hosts());
        assertEquals(List.of("x", "y"), c.hosts());
        assertEquals(List.of("a", "b", "c"), t.gateway("gw").joins());
        assertTrue(t.links().isEmpty());
    }

    @Test
    void layoutAddressesMacsAndIdentities() {
        Layout l = Layout.of(Topology.parse(BASE, "base.yaml").withPrefix("zz"));
        Node a0 = l.hosts().get(0), a1 = l.hosts().get(1), b0 = l.hosts().get(2), cx = l.hosts().get(3);
        assertEquals("10.77.0.1", a0.ipText());
        assertEquals("10.77.0.2", a1.ipText());
        assertEquals("fd77:0:1::1", b0.ipText());
        assertNull(cx.ip());
        assertEquals("zz-a-h0", a0.namespace());
        assertEquals("zz-a-h0-s", a0.peerIface());
        assertEquals("zz-a-sw", a0.peerNamespace());
        assertEquals(0x00010001, a0.identity());
        assertEquals(0x00030001, cx.identity());
        Node gwA = l.gatewayPorts().get(0), gwB = l.gatewayPorts().get(1);
        assertEquals("10.77.0.254", gwA.ipText());
        assertEquals("fd77:0:1::fe", gwB.ipText());
        assertEquals("zz-gw", gwA.namespace());
        assertEquals("zz-gw-a", gwA.iface());
        assertEquals(Node.gatewayIdentity(0), gwA.identity());
        // DC b has one host and one gateway: a direct veth, no bridge namespace
        assertEquals("zz-gw", b0.peerNamespace());
        assertEquals("zz-gw-b", b0.peerIface());
        assertEquals(List.of("zz-gw", "zz-a-h0", "zz-a-h1", "zz-a-sw", "zz-b-h0", "zz-c-x", "zz-c-y", "zz-c-sw"), l.namespaces());
        // MACs: locally administered unicast, all distinct
        var macs = l.veths().stream().flatMap(v -> java.util.stream.Stream.of(v.macA(), v.macB())).toList();
        assertEquals(macs.size(), new java.util.HashSet<>(macs).size());
        for (String mac : macs) assertEquals(0x02, java.util.HexFormat.fromHexDigits(mac.substring(0, 2)) & 0x03, mac);
        for (var v : l.veths()) assertTrue(v.devA().length() <= 15 && v.devB().length() <= 15);
    }

    @Test
    void exampleTopologiesLoad() throws Exception {
        List<Path> shipped;
        try (var files = java.nio.file.Files.list(TOPOLOGIES)) {
            shipped = files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
        }
        assertTrue(shipped.size() >= 8, shipped.toString());
        for (Path f : shipped) {
            Topology t = Topology.load(f);
            // the smallest: two one-host data centers and their gateway (two-dc-edge.yaml)
            assertTrue(Layout.of(t).namespaces().size() >= 3, f.toString());
        }
        Topology rl = Topology.load(TOPOLOGIES.resolve("two-dc-ratelimited.yaml"));
        assertEquals(2, rl.links().size());
        assertEquals(100_000_000L, rl.limit("gw", "a").orElseThrow().bitsPerSecond());
        assertEquals(LinkLimit.Qdisc.HTB, rl.limit("gw", "b").orElseThrow().qdisc());
        Topology min = Topology.load(TOPOLOGIES.resolve("three-dc-min.yaml"));
        assertTrue(Layout.of(min).bridges().isEmpty(), "one host per DC: direct veths");
        assertNotEquals(Topology.load(TOPOLOGIES.resolve("three-dc.yaml")).prefix(), min.prefix());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "100mbit|100000000", "1gbit|1000000000", "500kbit|500000", "10mbps|80000000", "1.5gbit|1500000000", "64000bit|64000"})
    void ratesParse(String text, long bits) {
        assertEquals(bits, LinkLimit.parseRate(text));
    }

    @Test
    void ipPrefixArithmetic() {
        IpPrefix p = IpPrefix.parse("10.1.2.77/24");
        assertEquals("10.1.2.0/24", p.toString());
        assertEquals("10.1.2.254", p.offset(254).getHostAddress());
        assertThrows(IllegalArgumentException.class, () -> p.offset(256));
        assertTrue(p.overlaps(IpPrefix.parse("10.1.0.0/16")));
        assertFalse(p.overlaps(IpPrefix.parse("10.1.3.0/24")));
        assertThrows(IllegalArgumentException.class, () -> IpPrefix.parse("example.com/24"));
        assertEquals("fd77::/64", IpPrefix.parse("fd77:0:0:0:0:0:0:0/64").toString());
        assertEquals("1:0:0:2::3/128", IpPrefix.parse("1:0:0:2:0:0:0:3/128").toString());
        assertEquals("::1/128", IpPrefix.parse("::1/128").toString());
    }

    /** Each bad config: the YAML, the field the error must name, and a fragment of the message. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            unknown form          | datacenters[0].form     | unknown network form 'ipv5' | name: t\\ndatacenters:\\n  - {name: a, form: ipv5, hosts: 1}
            duplicate dc          | datacenters             | duplicate datacenter name 'a' | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\n  - {name: a, form: ipv6, hosts: 1}
            duplicate gateway     | gateways                | duplicate gateway name 'g' | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\n  - {name: g, joins: [a]}
            unknown joined dc     | gateways[0].joins[1]    | unknown datacenter 'z' | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a, z]}
            name too long         | datacenters[0].name     | name too long        | name: t\\ndatacenters:\\n  - {name: abcdefghi, form: ipv4, hosts: 1}
            interface too long    | datacenters[0].hosts[0] | name too long: interface name | name: t\\nprefix: abcdef\\ndatacenters:\\n  - {name: abcdefgh, form: ipv4, hosts: [h1]}\\n  - {name: b, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [abcdefgh, b]}
            prefix too long       | prefix                  | must be 1-6 characters | name: t\\nprefix: abcdefg\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}
            bad rate              | links[0].rate           | is not a rate        | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nlinks:\\n  - {gateway: g, dc: a, rate: fast}
            zero rate             | links[0].rate           | outside the supported range | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nlinks:\\n  - {gateway: g, dc: a, rate: 0mbit}
            bad qdisc             | links[0].qdisc          | unknown qdisc 'fq'   | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nlinks:\\n  - {gateway: g, dc: a, rate: 1mbit, qdisc: fq}
            link unknown gateway  | links[0].gateway        | unknown gateway 'x'  | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\nlinks:\\n  - {gateway: x, dc: a, rate: 1mbit}
            link dc not joined    | links[0].dc             | does not join datacenter 'b' | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\n  - {name: b, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nlinks:\\n  - {gateway: g, dc: b, rate: 1mbit}
            subnet on id dc       | datacenters[0].subnet   | has no IP subnet     | name: t\\ndatacenters:\\n  - {name: a, form: id, hosts: 1, subnet: 10.0.0.0/24}
            wrong family subnet   | datacenters[0].subnet   | must be an IPv6 prefix | name: t\\ndatacenters:\\n  - {name: a, form: ipv6, hosts: 1, subnet: 10.0.0.0/24}
            overlapping subnets   | datacenters[1].subnet   | overlaps             | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\n  - {name: b, form: ipv4, hosts: 1, subnet: 10.77.0.128/25}
            too many hosts        | datacenters[0].hosts    | do not fit           | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 3, subnet: 10.9.0.0/30}\\ngateways:\\n  - {name: g, joins: [a]}
            zero hosts            | datacenters[0].hosts    | hosts must be 1..250, got 0 | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 0}
            duplicate host        | datacenters[0].hosts    | duplicate host name 'x' | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: [x, x]}
            bad mtu               | datacenters[0].mtu      | mtu must be 1280..9000, got 1000 | name: t\\ndatacenters:\\n  - {name: a, form: ipv6, hosts: 1, mtu: 1000}
            missing form          | datacenters[0].form     | 'form' is required   | name: t\\ndatacenters:\\n  - {name: a, hosts: 1}
            missing name          | name                    | 'name' is required   | datacenters:\\n  - {name: a, form: ipv4, hosts: 1}
            no datacenters        | datacenters             | at least one         | name: t\\ndatacenters: []
            unknown field         | datacenters[0].hots     | unknown key 'hots' (allowed: form, hosts, mtu, name, subnet) | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hots: 1}
            dash in name          | datacenters[0].name     | no dashes            | name: t\\ndatacenters:\\n  - {name: a-b, form: ipv4, hosts: 1}
            gateway named like dc | gateways[0].name        | also a datacenter    | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: a, joins: [a]}
            not yaml              | (yaml)                  | not valid YAML       | name: [t\\n
            not a mapping         | (top level)             | expected a mapping   | - just a list
            wan bad rate          | wan.rate                | is not a rate        | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: fast}
            wan dc not joined     | wan.dc                  | does not join datacenter 'b' | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\n  - {name: b, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: b, rate: 1mbit}
            wan bad queue         | wan.queue               | queue must be 2..100000, got 1 | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, queue: 1}
            wan mtu too big       | wan.mtu                 | mtu must be 576..9000, got 9001 | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, mtu: 9001}
            wan mtu under ipv6's  | wan.mtu                 | mtu must be 1280..9000, got 1279 | name: t\\ndatacenters:\\n  - {name: a, form: ipv6, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, mtu: 1279}
            wan mtu not a number  | wan.mtu                 | mtu: 'jumbo' is not a number | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, mtu: jumbo}
            wan unknown field     | wan.duplicate           | unknown key 'duplicate' | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, duplicate: 1%}
            key given twice       | (yaml)                  | key 'name' appears twice | name: t\\nname: u\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}
            octal mtu             | datacenters[0].mtu      | has a leading zero   | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1, mtu: 01500}
            float hosts           | datacenters[0].hosts    | is not an integer    | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1.5}
            host list of mappings | datacenters[0].hosts[0] | must be a name       | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: [{x: 1}]}
            wan delay no unit     | wan.delay               | is not a duration (e.g. 20ms | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, delay: 20}
            wan delay too long    | wan.delay               | delay must be at most 1s, got 2s | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, delay: 2s}
            wan jitter over delay | wan.jitter              | must not exceed delay | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, delay: 1ms, jitter: 2ms}
            wan loss no percent   | wan.loss                | '0.01' is not a percentage | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, loss: 0.01}
            wan loss over 100     | wan.loss                | loss must be 0%..100%, got 101% | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, loss: 101%}
            wan loss and burst    | wan.loss-burst          | either loss (independent) or loss-burst | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, loss: 1%, loss-burst: {p: 1%, r: 10%}}
            wan burst without r   | wan.loss-burst.r        | 'r' is required | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, loss-burst: {p: 1%}}
            wan burst unknown key | wan.loss-burst.q        | unknown key 'q' | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, loss-burst: {p: 1%, r: 1%, q: 1%}}
            wan burst never ends  | wan.loss-burst.r        | r must be above 0% | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, loss-burst: {p: 1%, r: 0%}}
            wan burst not a map   | wan.loss-burst          | expected a mapping | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, loss-burst: 5%}
            wan reorder no delay  | wan.reorder             | reorder needs a delay | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nwan: {gateway: g, dc: a, rate: 1mbit, reorder: 1%}
            wan and link limit    | wan                     | either links or wan  | name: t\\ndatacenters:\\n  - {name: a, form: ipv4, hosts: 1}\\ngateways:\\n  - {name: g, joins: [a]}\\nlinks:\\n  - {gateway: g, dc: a, rate: 1mbit}\\nwan: {gateway: g, dc: a, rate: 1mbit}
            """)
    void badConfigIsRejectedWithFileAndField(String what, String field, String fragment, String yaml) {
        TopologyException e = assertThrows(TopologyException.class,
                () -> Topology.parse(yaml.replace("\\n", "\n"), "bad.yaml"), what);
        assertEquals(field, e.field(), e.getMessage());
        assertEquals("bad.yaml", e.source());
        assertTrue(e.getMessage().startsWith("bad.yaml: " + field + ": "), e.getMessage());
        assertTrue(e.getMessage().contains(fragment), e.getMessage());
    }

    @Test
    void wanImpairmentFieldsAreParsed() {
        String dcs = "name: t\ndatacenters:\n  - {name: a, form: ipv4, hosts: 1}\ngateways:\n  - {name: g, joins: [a]}\n";
        WanImpairment full = Topology.parse(dcs + "wan: {gateway: g, dc: a, rate: 1mbit, delay: 20ms, jitter: 500us, loss: 0.1%, reorder: 2.5%}",
                "w.yaml").wan().orElseThrow().impairment();
        assertEquals(new WanImpairment(20_000_000L, 500_000L, 0.001, null, 0.025), full);
        assertTrue(full.any());
        WanImpairment burst = Topology.parse(dcs + "wan: {gateway: g, dc: a, rate: 1mbit, delay: 0.1s, loss-burst: {p: 1%, r: 25%}}",
                "w.yaml").wan().orElseThrow().impairment();
        assertEquals(new WanImpairment(100_000_000L, 0, 0, new WanImpairment.BurstLoss(0.01, 0.25, 0, 1), 0), burst);
        assertEquals(0.01 / 0.26, burst.burst().meanLoss(), 1e-12, "simple Gilbert: the share of time in bursts");
        assertEquals(WanImpairment.NONE, Topology.parse(dcs + "wan: {gateway: g, dc: a, rate: 1mbit}", "w.yaml").wan().orElseThrow().impairment());
        assertFalse(WanImpairment.NONE.any(), "no field: no delay line, the bridge as before");
    }

    @Test
    void wanLinkPutsANamespaceBetweenGatewayAndDatacenter() {
        Topology t = Topology.load(TOPOLOGIES.resolve("two-dc-wan.yaml")).withPrefix("zz");
        WanLink wan = t.wan().orElseThrow();
        assertEquals(new WanLink("gw", "b", "200mbit", 200_000_000L, 1000, 1500), wan);
        Layout l = Layout.of(t);
        Layout.WanSegment seg = l.wan().orElseThrow();
        assertEquals("zz-gw-b-w", seg.namespace());
        Node port = l.gatewayPorts().stream().filter(p -> p.datacenter().equals("b")).findFirst().orElseThrow();
        assertEquals("zz-gw-b-w", port.peerNamespace(), "the gateway's port into b leads into the WAN");
        assertEquals(seg.gatewaySide(), port.peerIface());
        assertTrue(l.veths().stream().anyMatch(v -> v.nsA().equals(seg.namespace()) && v.devA().equals(seg.dcSide())
                && v.nsB().equals("zz-b-sw") && v.devB().equals("zz-gw-b-s")), "the WAN's other side leads to b's switch");
        Node portA = l.gatewayPorts().stream().filter(p -> p.datacenter().equals("a")).findFirst().orElseThrow();
        assertEquals("zz-a-sw", portA.peerNamespace(), "DC a is local to the gateway");
        assertTrue(l.namespaces().contains("zz-gw-b-w"));
        assertTrue(Topology.parse(BASE, "base.yaml").wan().isEmpty());
    }

    /**
     * Jumbo frames in one DC, a smaller MTU on the WAN: every link gets its MTU, and {@link Topology#pathMtu} names the
     * smallest MTU between two DCs (what a sender sizes its frames for).
     */
    @Test
    void mtuPerDatacenterAndForTheWan() {
        Topology t = Topology.parse("""
                name: jumbo
                datacenters:
                  - {name: a, form: ipv4, hosts: 2, mtu: 9000}
                  - {name: b, form: ipv6, hosts: 2, mtu: 9000}
                  - {name: c, form: id, hosts: 1}
                gateways:
                  - {name: gw, joins: [a, b, c]}
                wan: {gateway: gw, dc: b, rate: 1gbit, mtu: 4000}
                """, "jumbo.yaml").withPrefix("zz");
        assertEquals(4000, t.wan().orElseThrow().mtu());
        assertEquals(9000, t.linkMtu("gw", "a"));
        assertEquals(4000, t.linkMtu("gw", "b"), "the gateway's port into b is the WAN's");
        assertEquals(1500, t.linkMtu("gw", "c"));
        assertEquals(9000, t.pathMtu("a", "a"));
        assertEquals(4000, t.pathMtu("a", "b"));
        assertEquals(4000, t.pathMtu("b", "a"));
        assertEquals(1500, t.pathMtu("a", "c"));
        assertEquals(1500, t.smallestMtu());
        Layout l = Layout.of(t);
        for (Node p : l.gatewayPorts()) assertEquals(t.linkMtu("gw", p.datacenter()), p.mtu(), p.iface());
        for (Layout.VethPair v : l.veths()) {
            boolean wanLink = v.nsA().equals("zz-gw-b-w") || v.nsB().equals("zz-gw-b-w");
            assertEquals(wanLink ? 4000 : v.form() == io.xaforward.protocol.NetworkForm.ID ? 1500 : 9000, v.mtu(), v.toString());
        }
        assertEquals(9000, Topology.parse("""
                name: j
                datacenters: [{name: a, form: ipv4, hosts: 1, mtu: 9000}]
                gateways: [{name: g, joins: [a]}]
                wan: {gateway: g, dc: a, rate: 1mbit}
                """, "j.yaml").wan().orElseThrow().mtu(), "without mtu the WAN takes the DC's");
        Topology thinWan = Topology.parse("""
                name: thin
                datacenters:
                  - {name: a, form: ipv4, hosts: 2, mtu: 9000}
                  - {name: b, form: ipv6, hosts: 2, mtu: 9000}
                gateways: [{name: gw, joins: [a, b]}]
                wan: {gateway: gw, dc: b, rate: 1gbit, mtu: 1500}
                """, "thin.yaml");
        assertEquals(1500, thinWan.pathMtu("a", "b"), "jumbo DCs behind a 1500-byte WAN");
        assertEquals(9000, thinWan.pathMtu("b", "b"), "inside b the hosts keep their jumbo frames");
        assertEquals(1500, thinWan.smallestMtu());
    }

    @Test
    void missingFileNamesTheFile() {
        TopologyException e = assertThrows(TopologyException.class, () -> Topology.load(Path.of("/nonexistent/x.yaml")));
        assertTrue(e.getMessage().startsWith("/nonexistent/x.yaml"), e.getMessage());
    }

    @Test
    void withPrefixRevalidates() {
        Topology t = Topology.parse(BASE, "base.yaml");
        assertThrows(TopologyException.class, () -> t.withPrefix("Bad"));
        assertEquals("abc", t.withPrefix("abc").prefix());
    }
}
