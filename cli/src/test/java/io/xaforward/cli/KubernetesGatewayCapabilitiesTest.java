package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.xaforward.dataplane.GatewayPins;
import io.xaforward.testbed.Netns;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The gateway DaemonSet of deploy/kubernetes/ runs as root with every capability dropped but the ones it adds. This
 * runs the real {@code xaf gateway} as the pod would: the ConfigMap's config (its interfaces, eth1 and eth2, made as
 * veths in a namespace of their own), {@code --pin} on the host's bpffs, and exactly the manifest's capabilities
 * (setpriv: root whose bounding and inheritable sets hold only those, which is what a container runtime gives
 * {@code capabilities: {drop: [ALL], add: [...]}}), in a mount namespace whose /sys/fs/bpf is only the manifest's
 * hostPath directory of the host's bpffs, bound there as the kubelet binds it. It must attach, pin into that
 * directory and answer on its metrics endpoint; with any one of CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON taken away it
 * must fail to start, so none of them is there for show.
 */
class KubernetesGatewayCapabilitiesTest {
    static final String NS = "xk8s" + Integer.toHexString(new Random().nextInt(0x1000, 0x10000));
    static final String PIN_NAME = NS;
    /** Capability numbers (linux/capability.h) of the names a manifest may add. */
    static final Map<String, Integer> CAPABILITY_NUMBERS = Map.of("net_admin", 12, "sys_resource", 24, "perfmon", 38, "bpf", 39);
    static Path config;
    static List<String> capabilities;
    static int metricsPort;
    /** The host's directory bound at the gateway's /sys/fs/bpf: the manifest's hostPath, made unique to this run. */
    static Path hostBpffsDir;
    /** Where the gateway's pins land on the host: GatewayPins' xaforward/NAME below that directory. */
    static GatewayPins pins;

    @BeforeAll
    static void setUp() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        List<HasMetadata> objects = KubernetesManifestsTest.read(KubernetesManifestsTest.DIR.resolve("gateway.yaml"));
        DaemonSet ds = objects.stream().filter(DaemonSet.class::isInstance).map(DaemonSet.class::cast).findFirst().orElseThrow();
        ConfigMap cm = objects.stream().filter(ConfigMap.class::isInstance).map(ConfigMap.class::cast).findFirst().orElseThrow();
        Container c = ds.getSpec().getTemplate().getSpec().getContainers().get(0);
        capabilities = c.getSecurityContext().getCapabilities().getAdd().stream().map(n -> n.toLowerCase(Locale.ROOT)).toList();
        String bpffsVolume = c.getVolumeMounts().stream().filter(m -> m.getMountPath().equals("/sys/fs/bpf")).findFirst()
                .orElseThrow().getName();
        String hostPath = ds.getSpec().getTemplate().getSpec().getVolumes().stream().filter(v -> v.getName().equals(bpffsVolume))
                .findFirst().orElseThrow().getHostPath().getPath();
        assertTrue(hostPath.startsWith("/sys/fs/bpf/"), "the gateway's directory of the host's bpffs: " + hostPath);
        hostBpffsDir = Files.createDirectories(Path.of(hostPath + "-" + NS)); // DirectoryOrCreate
        pins = GatewayPins.at(hostBpffsDir.resolve("xaforward").resolve(PIN_NAME));
        assertEquals(List.of("ALL"), c.getSecurityContext().getCapabilities().getDrop());

        String text = cm.getData().get("gateway.yaml");
        var parsed = io.xaforward.gateway.GatewayConfigParser.parse(text, "ConfigMap");
        metricsPort = parsed.metrics().orElseThrow().port();
        Netns.add(NS);
        for (var port : parsed.ports()) {
            String peer = "p" + port.iface();
            Netns.exec(NS, "ip", "link", "add", port.iface(), "type", "veth", "peer", "name", peer);
            Netns.exec(NS, "ip", "link", "set", port.iface(), "up");
            Netns.exec(NS, "ip", "link", "set", peer, "up");
        }
        // As kubelet writes a ConfigMap key: root's, mode 0444.
        config = Files.createTempFile("xaf-k8s-gateway", ".yaml");
        Files.writeString(config, text);
        Files.setPosixFilePermissions(config, PosixFilePermissions.fromString("r--r--r--"));
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (pins != null && Files.exists(pins.dir())) pins.remove();
        if (hostBpffsDir != null) {
            Files.deleteIfExists(hostBpffsDir.resolve("xaforward"));
            Files.deleteIfExists(hostBpffsDir);
            try (var left = Files.list(hostBpffsDir.getParent())) {
                if (left.findAny().isEmpty()) Files.delete(hostBpffsDir.getParent());
            }
        }
        Netns.delete(NS);
        if (config != null) Files.deleteIfExists(config);
    }

    /** setpriv arguments that leave root exactly {@code caps} across the exec of java. */
    static List<String> onlyCapabilities(List<String> caps) {
        String set = "-all" + caps.stream().map(c -> ",+" + c).reduce("", String::concat);
        return List.of("setpriv", "--inh-caps=" + set, "--bounding-set=" + set, "--");
    }

    /**
     * What the container runtime does with the DaemonSet's bpffs volume: a mount namespace of the gateway's own whose
     * /sys/fs/bpf is the host's directory bound there, then setpriv leaving root only {@code caps}.
     */
    static List<String> asThePod(List<String> caps) {
        List<String> wrapper = new ArrayList<>(List.of("unshare", "--mount", "--propagation", "private", "--",
                "sh", "-c", "mount --bind \"$0\" /sys/fs/bpf && exec \"$@\"", hostBpffsDir.toString()));
        wrapper.addAll(onlyCapabilities(caps));
        return wrapper;
    }

    /** The manifest's capabilities that this process can hand on (its bounding set); the others are named. */
    static List<String> grantable(List<String> caps, Set<String> notHere) throws Exception {
        long bounding = 0;
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("CapBnd:")) bounding = Long.parseUnsignedLong(line.substring(7).strip(), 16);
        }
        List<String> out = new ArrayList<>();
        for (String c : caps) {
            Integer bit = CAPABILITY_NUMBERS.get(c);
            assertTrue(bit != null, "a capability this test does not know: " + c);
            if ((bounding >>> bit & 1) == 1) out.add(c);
            else notHere.add(c);
        }
        return out;
    }

    @Test
    void theGatewayRunsWithExactlyTheManifestsCapabilitiesAndWithNoneOfBpfNetAdminPerfmonLess() throws Exception {
        Set<String> notHere = new TreeSet<>();
        List<String> caps = grantable(capabilities, notHere);
        // This machine's root may lack CAP_SYS_RESOURCE; it is there only for kernels before 5.11 (memlock).
        assertTrue(Set.of("sys_resource").containsAll(notHere), "this test cannot grant " + notHere);
        List<String> options = List.of("--pin", "--name", PIN_NAME);

        GatewayProcess g = GatewayProcess.startKeepingMounts(NS, config, asThePod(caps), options);
        try {
            g.awaitReady(60_000);
            for (String port : List.of("eth1", "eth2")) {
                assertTrue(Netns.exec(NS, "ip", "link", "show", port).stdout().contains("xdp"), port + " has the program");
                assertTrue(pins.hasLink(port), port + "'s link is pinned in the pod's directory of the host's bpffs");
            }
            // What the readiness probe asks (GET /metrics on the config's endpoint, from the same network namespace).
            String metrics = Netns.exec(NS, Duration.ofSeconds(20), null,
                    List.of("curl", "-sf", "http://127.0.0.1:" + metricsPort + "/metrics")).stdout();
            assertTrue(metrics.contains("xaf_rx_packets_total"), metrics);
            assertEquals(143, g.stop(), "SIGTERM is a clean stop: " + g.output());
        } finally {
            g.close();
        }
        assertFalse(Files.exists(Path.of("/sys/fs/bpf", "xaforward", PIN_NAME)), "pinned outside the pod's directory");
        pins.remove();
        assertFalse(Netns.exec(NS, "ip", "link", "show").stdout().contains("xdp"), "detached once unpinned");

        for (String without : List.of("bpf", "net_admin", "perfmon")) {
            assertTrue(caps.contains(without), "the manifest adds " + without);
            List<String> fewer = caps.stream().filter(c -> !c.equals(without)).toList();
            GatewayProcess h = GatewayProcess.startKeepingMounts(NS, config, asThePod(fewer), options);
            try {
                assertEquals(1, h.awaitExit(60_000), "without " + without + " it must not start: " + h.output());
                assertTrue(h.sawLine("cannot start"), h.output());
            } finally {
                h.close();
            }
            assertFalse(Netns.exec(NS, "ip", "link", "show").stdout().contains("xdp"), "without " + without + ": nothing attached");
            assertFalse(pins.hasMaps(), "without " + without + ": nothing pinned");
        }
    }
}
