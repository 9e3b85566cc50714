package io.xaforward.cli;

import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.GatewayConfigParser;
import io.xaforward.testbed.Layout;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.plan.IdentifierPlan;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The gateway's documentation against the product: the sample config parses and is exactly what the testbed's own plan
 * gives for the topology it names; every namespace and interface GATEWAY.md's examples use is one `xaf topo up` makes;
 * DEPLOY.md's systemd unit runs the installed jar as a notify service that treats SIGTERM's 143 as success.
 */
class GatewayDocsTest {
    static final Path DOCS = Path.of("..", "docs");
    static final Path SAMPLE = DOCS.resolve("examples").resolve("gateway.yaml");

    /** A route as comparable text (its byte arrays in hex). */
    static String text(GatewayConfig.RouteConfig r) {
        HexFormat h = HexFormat.of();
        java.util.function.Function<Optional<byte[]>, String> hex = o -> o.map(h::formatHex).orElse("-");
        return String.join(" ", "id=" + r.networkId(), "job=" + r.jobId(), "token=" + r.jobToken(), r.action().toString(),
                r.egress().orElse("-"), r.form().map(Object::toString).orElse("-"), r.ingress().toString(), hex.apply(r.srcMac()),
                hex.apply(r.dstMac()), hex.apply(r.srcIp()), hex.apply(r.dstIp()), "ports=" + r.srcPort() + "/" + r.dstPort(),
                "srcId=" + r.srcId());
    }

    static IdentifierPlan threeDcMinPlan() {
        Topology t = Topology.load(Path.of("..", "topologies", "three-dc-min.yaml"));
        Layout l = Layout.of(t);
        return IdentifierPlan.build(new TestbedState(t, l.hosts(), l.gatewayPorts()), 7, 0x5eed1234);
    }

    @Test
    void theSampleConfigIsWhatTheTestbedPlanGivesForThreeDcMin() {
        GatewayConfig sample = GatewayConfigParser.parse(SAMPLE);
        GatewayConfig plan = GatewayConfigParser.parse(threeDcMinPlan().gatewayYaml("gw", "127.0.0.1:9464"), "plan");
        assertEquals(plan.ports(), sample.ports());
        assertEquals(plan.attach(), sample.attach());
        assertEquals(plan.metrics(), sample.metrics());
        assertEquals(plan.routes().stream().map(GatewayDocsTest::text).toList(), sample.routes().stream().map(GatewayDocsTest::text).toList());
        assertEquals(3, sample.routes().size());
    }

    /** Fenced blocks of a markdown file whose info string is {@code lang}. */
    static List<String> blocks(Path md, String lang) throws IOException {
        List<String> out = new ArrayList<>();
        Matcher m = Pattern.compile("(?ms)^```" + lang + "\\n(.*?)^```").matcher(Files.readString(md));
        while (m.find()) out.add(m.group(1));
        return out;
    }

    @Test
    void gatewayMdsConfigBlockParses() throws IOException {
        List<String> yaml = blocks(DOCS.resolve("GATEWAY.md"), "yaml");
        assertFalse(yaml.isEmpty());
        GatewayConfig c = GatewayConfigParser.parse(yaml.getFirst(), "GATEWAY.md");
        assertFalse(c.routes().isEmpty());
    }

    /**
     * DEPLOY.md's threat model speaks to operators about every boundary: each wire mode and what it protects, the
     * ports, etcd access, per-run keys, the hop limit cap, the config file's settle rule and the metrics endpoint.
     */
    @Test
    void deployMdsThreatModelCoversEveryBoundary() throws IOException {
        String deploy = Files.readString(DOCS.resolve("DEPLOY.md"));
        Matcher m = Pattern.compile("(?ms)^## \\d+\\. Threat model\\n(.*?)(?=^## )").matcher(deploy);
        assertTrue(m.find(), "DEPLOY.md has no threat model section");
        String model = m.group(1);
        for (io.xaforward.transport.WireSecurity mode : io.xaforward.transport.WireSecurity.values()) {
            assertTrue(model.contains("| `" + mode.configName() + "` |"), mode + " missing from the wire mode table");
        }
        for (String topic : List.of("accidents only", "authenticity", "confidentiality", "UDP 9450", "TCP 2379", "TCP 9464",
                "**etcd.**", "`/xaf/routes/GW/`", "`/xaf/jobs/JOB/`", "run nonce", "replay", "`max-hop-limit`",
                "open for writing", "**The job secret**", "**The metrics endpoint**", "forge a NACK")) {
            assertTrue(model.contains(topic), "the threat model says nothing about " + topic);
        }
    }

    /** Every namespace and gateway interface the testbed's topologies make. */
    static Set<String> testbedNames() throws IOException {
        Set<String> names = new TreeSet<>();
        try (Stream<Path> files = Files.list(Path.of("..", "topologies"))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".yaml")).toList()) {
                Layout l = Layout.of(Topology.load(f));
                for (var n : l.hosts()) { names.add(n.namespace()); names.add(n.iface()); }
                for (var n : l.gatewayPorts()) { names.add(n.namespace()); names.add(n.iface()); }
            }
        }
        return names;
    }

    @Test
    void gatewayMdsExamplesUseNamesTopoUpMakes() throws IOException {
        String md = Files.readString(DOCS.resolve("GATEWAY.md"));
        Set<String> real = testbedNames();
        Matcher ns = Pattern.compile("(?:ip netns exec |nsenter --net=/run/netns/)([a-z0-9-]+)").matcher(md);
        int seen = 0;
        while (ns.find()) {
            if (ns.group(1).equals("NS")) continue; // the placeholder
            seen++;
            assertTrue(real.contains(ns.group(1)), "GATEWAY.md uses namespace '" + ns.group(1) + "', which no topology under topologies/ makes");
        }
        assertTrue(seen >= 3, "examples with a namespace: " + seen);
        // interfaces shown in the status and routes examples
        Matcher iface = Pattern.compile("(?m)^(thr253-gw-[a-z])  ").matcher(md);
        int ports = 0;
        while (iface.find()) {
            ports++;
            assertTrue(real.contains(iface.group(1)), iface.group(1));
        }
        assertTrue(ports >= 3, "status example rows: " + ports);
        assertFalse(md.contains("dc-gw"), "the old made-up namespace name");
    }

    @Test
    void deployMdsSystemdUnitRunsTheInstalledJarAsANotifyService() throws IOException {
        List<String> units = blocks(DOCS.resolve("DEPLOY.md"), "ini");
        assertEquals(1, units.size(), "one systemd unit in DEPLOY.md");
        String unit = units.getFirst();
        assertTrue(unit.contains("\nType=notify\n"), unit);
        assertTrue(unit.contains("\nSuccessExitStatus=143\n"), unit);
        String execStart = unit.lines().filter(l -> l.startsWith("ExecStart=")).findFirst().orElseThrow();
        assertTrue(execStart.startsWith("ExecStart=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java -jar /opt/xaforward/xaf-cli.jar gateway "), execStart);
        assertFalse(unit.contains("/xaf gateway"), "the ./xaf launcher may run apt and Maven: " + unit);
        assertTrue(unit.contains("ExecReload=/bin/kill -HUP $MAINPID"), unit);
        // the install step that puts the jar there
        assertTrue(Files.readString(DOCS.resolve("DEPLOY.md")).contains("cp -r cli/target/xaf-cli.jar cli/target/lib /opt/xaforward/"));
    }
}
