package io.xaforward.gateway;

import io.xaforward.protocol.NetworkForm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

class GatewayConfigParserTest {
    static final String GOOD = """
            attach: native-or-generic
            metrics: "[::1]:0"
            ports:
              - {interface: gw-a, form: ipv4}
              - {interface: gw-b, form: ipv6, slot: 5}
              - {interface: gw-c, form: id}
            routes:
              - id: 0x00020001
                job: 7
                token: 0xdeadbeef
                egress: gw-b
                ingress: [gw-a, gw-c]
                dst-mac: 02:58:02:01:00:00
                src-ip: fd77:0:2::fe
                dst-ip: fd77:0:2::1
                src-port-span: 4
              - id: 0x00030001
                job: 7
                token: 0xdeadbeef
                egress: gw-c
                dst-mac: 02:58:03:01:00:00
                src-mac: 02:58:03:fe:00:00
                src-id: 0x00030000
            """;

    @Test
    void parsesAFullConfig() {
        GatewayConfig c = GatewayConfigParser.parse(GOOD, "gw.yaml");
        assertEquals(GatewayConfig.AttachMode.NATIVE_OR_GENERIC, c.attach());
        assertEquals("::1", c.metrics().orElseThrow().host());
        assertTrue(c.reload());
        assertEquals(3, c.ports().size());
        assertEquals(5, c.port("gw-b").orElseThrow().slot());
        assertEquals(2, c.port("gw-c").orElseThrow().slot());
        GatewayConfig.RouteConfig r0 = c.routes().get(0);
        assertEquals(0x00020001, r0.networkId());
        assertEquals(0xdeadbeef, r0.jobToken());
        assertEquals(NetworkForm.IPV6, r0.form().orElseThrow(), "form defaults to the egress port's");
        assertEquals(16, r0.dstIp().orElseThrow().length);
        assertEquals(java.util.List.of("gw-a", "gw-c"), r0.ingress());
        assertTrue(r0.srcMac().isEmpty());
        assertEquals(9450, r0.dstPort());
        assertEquals(9450, r0.srcPort());
        assertEquals(4, r0.srcPortSpan());
        GatewayConfig.RouteConfig r1 = c.routes().get(1);
        assertEquals(1, r1.srcPortSpan(), "src-port-span defaults to 1");
        assertEquals(NetworkForm.ID, r1.form().orElseThrow());
        assertEquals(0x00030000, r1.srcId());
        assertEquals((byte) 0xfe, r1.srcMac().orElseThrow()[3]);
        assertEquals(2, c.routes().size());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "bad form          | form: ipx                          | unknown network form 'ipx'; expected one of ipv4, ipv6, id",
            "unknown key       | colour: red                        | unknown key 'colour'",
            "missing egress    | egress: ~                          | a forward route needs 'egress'",
            "unknown egress    | egress: gw-z                       | egress 'gw-z' is not one of the ports",
            "bad mac           | dst-mac: 02:58                     | dst-mac: '02:58' is not a MAC address",
            "v4 on v6 port     | dst-ip: 10.0.0.1                   | dst-ip: '10.0.0.1' is not an IPV6 address",
            "bad port          | dst-port: 70000                    | dst-port must be 1..65535",
            "unknown ingress   | ingress: [gw-q]                    | ingress 'gw-q' is not one of the ports",
            "removed key       | drop-one-in: 10                    | unknown key 'drop-one-in'",
            "octal token       | token: 0123                        | token: '0123' has a leading zero",
            "base-60 job       | job: 1:30                          | job: '1:30' is not a number (base-60",
            "float job         | job: 1.9                           | job: '1.9' is not an integer",
            "wrapping token    | token: 18446744073709551621        | token must fit in 32 bits unsigned, got 18446744073709551621",
            "over 32 bits      | src-id: 0x100000000                | src-id must fit in 32 bits unsigned",
            "duplicate key     | token: 3                           | key 'token' appears twice (line 12)",
            "local action      | action: local                      | action: local is not supported",
            "word for number   | dst-port: nine                     | dst-port: 'nine' is not a number",
            "zero span         | src-port-span: 0                   | src-port-span must be 1..4096, got 0",
            "span too large    | src-port-span: 4097                | src-port-span must be 1..4096, got 4097",
            "span as word      | src-port-span: four                | src-port-span: 'four' is not a number",
    })
    void badRouteFieldsNameTheEntry(String name, String override, String expected) {
        String key = override.substring(0, override.indexOf(':'));
        String yaml = """
                ports:
                  - {interface: gw-a, form: ipv4}
                  - {interface: gw-b, form: ipv6}
                routes:
                  - id: 0x10
                    job: 1
                    token: 2
                    egress: gw-b
                    dst-mac: 02:00:00:00:00:01
                    src-ip: fd00::1
                    dst-ip: fd00::2
                """;
        if (!name.startsWith("duplicate")) {
            yaml = yaml.lines().filter(l -> !l.trim().startsWith(key + ":")).reduce("", (a, b) -> a + b + "\n");
        }
        yaml += "    " + override + "\n";
        String y = yaml;
        var e = assertThrows(GatewayConfigParser.ConfigException.class, () -> GatewayConfigParser.parse(y, "gw.yaml"));
        assertTrue(e.getMessage().startsWith(name.startsWith("duplicate") ? "gw.yaml: routes[0]" : "gw.yaml: routes[0] (id 0x00000010)"),
                e.getMessage());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    @Test
    void duplicateIdentifiersAndPortsAreRejected() {
        var dupId = assertThrows(GatewayConfigParser.ConfigException.class, () -> GatewayConfigParser.parse("""
                ports: [{interface: a, form: id}]
                routes:
                  - {id: 1, job: 1, token: 1, egress: a, dst-mac: 02:00:00:00:00:01}
                  - {id: 1, job: 1, token: 1, egress: a, dst-mac: 02:00:00:00:00:02}
                """, "g"));
        assertTrue(dupId.getMessage().contains("identifier 0x00000001 has more than one route"), dupId.getMessage());
        var dupPort = assertThrows(GatewayConfigParser.ConfigException.class, () -> GatewayConfigParser.parse("""
                ports: [{interface: a, form: id}, {interface: a, form: ipv4}]
                routes: []
                """, "g"));
        assertTrue(dupPort.getMessage().contains("interface 'a' listed twice"), dupPort.getMessage());
        var dupDc = assertThrows(GatewayConfigParser.ConfigException.class, () -> GatewayConfigParser.parse("""
                ports: [{interface: a, form: id, datacenter: x}, {interface: b, form: ipv4, datacenter: x}]
                routes: []
                """, "g"));
        assertTrue(dupDc.getMessage().contains("ports[1]: data center 'x' faces two ports"), dupDc.getMessage());
        var ports = GatewayConfigParser.parse("ports: [{interface: a, form: id, datacenter: x}, {interface: b, form: ipv4}]\nroutes: []", "g").ports();
        assertEquals(java.util.Optional.of("x"), ports.get(0).datacenter());
        assertEquals(java.util.Optional.empty(), ports.get(1).datacenter());
        var noPorts = assertThrows(GatewayConfigParser.ConfigException.class, () -> GatewayConfigParser.parse("ports: []\nroutes: []", "g"));
        assertTrue(noPorts.getMessage().contains("at least one interface"), noPorts.getMessage());
    }

    @Test
    void aSourcePortSpanEndsAt65535AtTheLatest() {
        String route = "ports: [{interface: a, form: ipv4}]\nroutes:\n  - {id: 1, job: 1, token: 1, egress: a, dst-mac: 02:00:00:00:00:01,"
                + " src-ip: 10.0.0.1, dst-ip: 10.0.0.2, ";
        GatewayConfig.RouteConfig top = GatewayConfigParser.parse(route + "src-port: 65532, src-port-span: 4}\n", "g").routes().get(0);
        assertEquals(65532, top.srcPort());
        assertEquals(4, top.srcPortSpan());
        assertEquals(4096, GatewayConfigParser.parse(route + "src-port-span: 4096}\n", "g").routes().get(0).srcPortSpan());
        var e = assertThrows(GatewayConfigParser.ConfigException.class,
                () -> GatewayConfigParser.parse(route + "src-port: 65533, src-port-span: 4}\n", "g.yaml"));
        assertEquals("g.yaml: routes[0] (id 0x00000001): src-port-span 4 from src-port 65533 would need source ports up to 65536;"
                + " the last is 65535", e.getMessage());
    }

    @Test
    void maxHopLimitDefaultsTo16AndIsBounded() {
        String rest = "ports: [{interface: a, form: id}]\nroutes: []\n";
        assertEquals(16, GatewayConfigParser.parse(rest, "g").maxHopLimit());
        assertEquals(4, GatewayConfigParser.parse("max-hop-limit: 4\n" + rest, "g").maxHopLimit());
        assertEquals(255, GatewayConfigParser.parse("max-hop-limit: 255\n" + rest, "g").maxHopLimit());
        for (String bad : new String[] {"1", "0", "256", "-3", "sixteen"}) {
            var e = assertThrows(GatewayConfigParser.ConfigException.class,
                    () -> GatewayConfigParser.parse("max-hop-limit: " + bad + "\n" + rest, "g.yaml"), bad);
            assertTrue(e.getMessage().startsWith("g.yaml: top level: max-hop-limit"), e.getMessage());
        }
    }

    @Test
    void metricsCanBeTurnedOff() {
        assertTrue(GatewayConfigParser.parse("metrics: off\nports: [{interface: a, form: id}]\nroutes: []", "g").metrics().isEmpty());
        assertTrue(GatewayConfigParser.parse("metrics: \"off\"\nports: [{interface: a, form: id}]\nroutes: []", "g").metrics().isEmpty());
        assertEquals(9464, GatewayConfigParser.parse("ports: [{interface: a, form: id}]\nroutes: []", "g").metrics().orElseThrow().port());
    }

    @Test
    void missingFileIsAClearError() {
        var e = assertThrows(GatewayConfigParser.ConfigException.class,
                () -> GatewayConfigParser.parse(Path.of("/nonexistent/gw.yaml")));
        assertEquals("/nonexistent/gw.yaml: file not found", e.getMessage());
    }

    /**
     * The config file decides routes and job tokens: one that others could have written, or a link that could be
     * pointed at such a file, is refused at start (parse) and at every reload (the settling reader), whatever it holds.
     */
    @Test
    void aConfigFileOthersCanWriteOrALinkIsRefusedAtStartAndAtReload(@org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        Path file = dir.resolve("gw.yaml");
        java.nio.file.Files.writeString(file, GOOD);
        java.nio.file.Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        assertEquals(GatewayConfigParser.parse(GOOD, "x").routes().stream().map(GatewayConfig.RouteConfig::networkId).toList(),
                GatewayConfigParser.parse(file).routes().stream().map(GatewayConfig.RouteConfig::networkId).toList(),
                "owner-writable, readable by all: accepted");
        StableFileReader reader = new StableFileReader(file, 5, 5, 1000);
        assertEquals(GOOD, reader.read());

        java.nio.file.Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-r--"));
        var atStart = assertThrows(GatewayConfigParser.UnsafeConfigFile.class, () -> GatewayConfigParser.parse(file));
        assertEquals("gateway config file " + file + " is writable by group or others (permissions rw-rw-r--); only its"
                + " owner may change it: chmod go-w " + file, atStart.getMessage());
        assertThrows(GatewayConfigParser.UnsafeConfigFile.class, reader::read, "at reload");
        java.nio.file.Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r---w-"));
        assertThrows(GatewayConfigParser.UnsafeConfigFile.class, reader::read, "other-writable");

        java.nio.file.Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        Path link = java.nio.file.Files.createSymbolicLink(dir.resolve("link.yaml"), file);
        var viaLink = assertThrows(GatewayConfigParser.UnsafeConfigFile.class, () -> GatewayConfigParser.parse(link));
        assertTrue(viaLink.getMessage().startsWith("gateway config file " + link + " is a symbolic link"), viaLink.getMessage());
        assertThrows(GatewayConfigParser.UnsafeConfigFile.class, new StableFileReader(link, 5, 5, 1000)::read);
    }

    @Test
    void invalidYamlIsAClearError() {
        var e = assertThrows(GatewayConfigParser.ConfigException.class, () -> GatewayConfigParser.parse("ports: [", "g"));
        assertTrue(e.getMessage().startsWith("g: not valid YAML"), e.getMessage());
    }

    @Test
    void unquotedMacsAndAddressesAreReadAsWritten() {
        // YAML 1.1 reads 12:34:56:10:20:30 (digits and colons only) as a base-60 integer.
        GatewayConfig c = GatewayConfigParser.parse("""
                ports: [{interface: a, form: id}]
                routes:
                  - {id: 1, job: 1, token: 1, egress: a, dst-mac: 12:34:56:10:20:30, src-mac: 02:58:02:01:00:00}
                """, "g");
        assertArrayEquals(new byte[]{0x12, 0x34, 0x56, 0x10, 0x20, 0x30}, c.routes().get(0).dstMac().orElseThrow());
        assertArrayEquals(new byte[]{0x02, 0x58, 0x02, 0x01, 0x00, 0x00}, c.routes().get(0).srcMac().orElseThrow());
    }

    @Test
    void aFileCutShortBeforeItsRoutesIsRejected() {
        // What a reader sees while an editor rewrites the file in place: the ports are there, the routes not yet.
        var e = assertThrows(GatewayConfigParser.ConfigException.class,
                () -> GatewayConfigParser.parse("ports: [{interface: a, form: id}]\n", "g"));
        assertTrue(e.getMessage().contains("'routes' is required"), e.getMessage());
    }

    @Test
    void duplicateTopLevelKeysAndBadBooleansNameTheKey() {
        var dup = assertThrows(GatewayConfigParser.ConfigException.class,
                () -> GatewayConfigParser.parse("ports: [{interface: a, form: id}]\nroutes: []\nroutes: []\n", "g.yaml"));
        assertEquals("g.yaml: top level: key 'routes' appears twice (line 3)", dup.getMessage());
        var bool = assertThrows(GatewayConfigParser.ConfigException.class,
                () -> GatewayConfigParser.parse("reload: yes\nports: [{interface: a, form: id}]\nroutes: []\n", "g.yaml"));
        assertEquals("g.yaml: top level: reload must be true or false, got 'yes'", bool.getMessage());
        var slot = assertThrows(GatewayConfigParser.ConfigException.class,
                () -> GatewayConfigParser.parse("ports: [{interface: a, form: id, slot: 07}]\nroutes: []\n", "g.yaml"));
        assertTrue(slot.getMessage().startsWith("g.yaml: ports[0]: slot: '07' has a leading zero"), slot.getMessage());
    }

    @Test
    void tooManyRoutesIsAClearError() {
        StringBuilder y = new StringBuilder("ports: [{interface: a, form: id}]\nroutes:\n");
        for (int i = 0; i < 5; i++) {
            y.append("  - {id: ").append(i + 1).append(", job: 1, token: 1, egress: a, dst-mac: 02:00:00:00:00:01}\n");
        }
        var e = assertThrows(GatewayConfigParser.ConfigException.class, () -> GatewayConfigParser.parse(y.toString(), "g", 4));
        assertEquals("g: routes: 5 routes, more than the 4 the gateway's route map holds", e.getMessage());
    }
}
