package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HTTPGetAction;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.PersistentVolumeClaim;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.GatewayConfigParser;
import io.xaforward.protocol.NetworkForm;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * deploy/kubernetes/ is read with the Kubernetes object model (fabric8) and checked for what the design relies on:
 * the gateway's capabilities, host network, bpffs mount, its probes on the metrics endpoint its config (parsed by
 * the gateway's own parser) serves; the workers' pod index as their rank and the Job's completions as the world
 * size, their arguments parsed by the real {@code xaf worker} command; etcd with TLS and client certificates; every
 * key and config file a file rather than the link a Secret or ConfigMap volume gives (xaf refuses links); etcd and
 * the gateway in a system namespace and each job in its own; the gateway's bpffs mount limited to its pin directory;
 * RuntimeDefault seccomp and no service-account token on every pod; a NetworkPolicy on etcd's client and metrics
 * ports. No cluster can run here: this is what can be checked without one.
 */
class KubernetesManifestsTest {
    static final Path DIR = Path.of("..", "deploy", "kubernetes");
    /** Where etcd and the gateway live; every job has a namespace of its own. */
    static final String SYSTEM_NAMESPACE = "xaf-system";
    static final Map<String, List<HasMetadata>> FILES = new HashMap<>();

    @BeforeAll
    static void parseEveryManifest() throws Exception {
        try (Stream<Path> files = Files.list(DIR)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList()) {
                FILES.put(f.getFileName().toString(), read(f));
            }
        }
        assertEquals(Set.of("namespace.yaml", "etcd.yaml", "gateway.yaml", "workers.yaml"), FILES.keySet());
    }

    /** The objects of one manifest file: one per YAML document, the model class picked from apiVersion and kind. */
    static List<HasMetadata> read(Path f) throws java.io.IOException {
        List<HasMetadata> objects = new ArrayList<>();
        for (String doc : Files.readString(f).split("(?m)^---\\s*$")) {
            if (doc.lines().allMatch(l -> l.isBlank() || l.strip().startsWith("#"))) continue;
            Object o = Serialization.unmarshal(doc);
            assertTrue(o instanceof HasMetadata, f + ": a document that is no Kubernetes object: " + o);
            objects.add((HasMetadata) o);
        }
        return objects;
    }

    static <T extends HasMetadata> T only(Class<T> kind, String name) {
        List<T> found = FILES.values().stream().flatMap(List::stream).filter(kind::isInstance).map(kind::cast)
                .filter(o -> o.getMetadata().getName().equals(name)).toList();
        assertEquals(1, found.size(), kind.getSimpleName() + " " + name);
        return found.get(0);
    }

    @Test
    void everyFieldIsOneTheModelKnowsAndEverythingIsInANamespaceTheManifestsMake() {
        Set<String> namespaces = namespaces().keySet();
        for (var file : FILES.entrySet()) {
            for (HasMetadata o : file.getValue()) {
                String what = file.getKey() + ": " + o.getKind() + " " + o.getMetadata().getName();
                List<String> unknown = new ArrayList<>();
                unknownFields(o, o.getKind(), unknown, new IdentityHashMap<>());
                assertEquals(List.of(), unknown, what + ": fields the Kubernetes API does not have (misspelt?)");
                if (!(o instanceof Namespace)) assertTrue(namespaces.contains(o.getMetadata().getNamespace()), what + " in "
                        + o.getMetadata().getNamespace() + ", which no manifest makes (" + namespaces + ")");
            }
        }
    }

    /** Collects the paths of fields the model kept as "additional properties": names it does not know. */
    private static void unknownFields(Object o, String path, List<String> out, IdentityHashMap<Object, Boolean> seen) {
        if (o == null || seen.put(o, true) != null) return;
        if (o instanceof Collection<?> c) {
            int i = 0;
            for (Object e : c) unknownFields(e, path + "[" + i++ + "]", out, seen);
            return;
        }
        if (o instanceof Map<?, ?> m) {
            for (var e : m.entrySet()) unknownFields(e.getValue(), path + "." + e.getKey(), out, seen);
            return;
        }
        if (!o.getClass().getName().startsWith("io.fabric8.kubernetes.api.model")) return;
        for (Method g : o.getClass().getMethods()) {
            if (g.getParameterCount() != 0 || Modifier.isStatic(g.getModifiers()) || !g.getName().startsWith("get")
                    || g.getDeclaringClass() == Object.class) continue;
            Object v;
            try {
                v = g.invoke(o);
            } catch (ReflectiveOperationException e) {
                throw new AssertionError(path + "." + g.getName(), e);
            }
            if (g.getName().equals("getAdditionalProperties")) {
                if (v instanceof Map<?, ?> extra && !extra.isEmpty()) out.add(path + ": " + extra.keySet());
            } else {
                unknownFields(v, path + "." + g.getName().substring(3), out, seen);
            }
        }
    }

    // ---- the gateway ----

    @Test
    void theGatewayRunsOnTheHostsNetworkWithTheCapabilitiesXdpNeedsAndNoMore() {
        PodSpec pod = only(DaemonSet.class, "xaf-gateway").getSpec().getTemplate().getSpec();
        assertEquals(Boolean.TRUE, pod.getHostNetwork(), "XDP attaches to the node's NICs");
        assertEquals("ClusterFirstWithHostNet", pod.getDnsPolicy(), "etcd's Service name must resolve from the host network");
        Container c = container(pod, "gateway");
        var sc = c.getSecurityContext();
        assertNotNull(sc);
        assertFalse(Boolean.TRUE.equals(sc.getPrivileged()), "capabilities, not a privileged container");
        assertEquals(List.of("ALL"), sc.getCapabilities().getDrop());
        assertEquals(Set.of("BPF", "NET_ADMIN", "PERFMON", "SYS_RESOURCE"), Set.copyOf(sc.getCapabilities().getAdd()));
        assertEquals(0L, sc.getRunAsUser(), "the config, keys and pins are root's");
    }

    /** The node's directory the DaemonSet mounts at the pod's /sys/fs/bpf: its own, per gateway name. */
    static final String GATEWAY_BPFFS_DIR = "/sys/fs/bpf/xaf/";

    @Test
    void theGatewayMountsOnlyItsOwnDirectoryOfTheHostsBpffsWhereItsPinsLive() {
        PodSpec pod = only(DaemonSet.class, "xaf-gateway").getSpec().getTemplate().getSpec();
        GatewayCommand cmd = gatewayCommand();
        assertTrue(cmd.pin, "the mount is there for --pin: a restarted pod adopts the pinned program");
        assertNotNull(cmd.name, "--name: the pins' directory does not hang on the config file's name");
        // GatewayPins looks for a bpffs at /sys/fs/bpf and pins under xaforward/NAME/ there.
        VolumeMount m = mountAt(container(pod, "gateway"), "/sys/fs/bpf");
        assertFalse(Boolean.TRUE.equals(m.getReadOnly()), "--pin writes there");
        Volume v = volume(pod, m.getName());
        assertNotNull(v.getHostPath(), "the host's bpffs, so that pins outlive the pod");
        Path own = Path.of(GATEWAY_BPFFS_DIR + cmd.name);
        assertEquals(own.toString(), v.getHostPath().getPath(), "only the gateway's own directory of the node's bpffs");
        assertEquals("DirectoryOrCreate", v.getHostPath().getType(), "the kubelet makes it before the first pod");
        for (Volume other : pod.getVolumes()) {
            if (other.getHostPath() == null) continue;
            Path hp = Path.of(other.getHostPath().getPath());
            assertFalse(own.startsWith(hp) && !own.equals(hp), "volume " + other.getName() + " mounts " + hp
                    + ", which holds every program's pins on the node");
            assertFalse(hp.startsWith("/sys/fs/bpf") && !hp.equals(own), "volume " + other.getName() + ": another part of the bpffs");
        }
    }

    @Test
    void theConfigMapHoldsAConfigTheGatewayAcceptsAndTheProbesAskItsMetricsEndpoint() {
        DaemonSet ds = only(DaemonSet.class, "xaf-gateway");
        PodSpec pod = ds.getSpec().getTemplate().getSpec();
        Container c = container(pod, "gateway");
        GatewayCommand cmd = gatewayCommand();

        // The file --config names is the ConfigMap's key, mounted as a file.
        VolumeMount m = mountAt(c, cmd.config.toString());
        Volume v = volume(pod, m.getName());
        assertNotNull(v.getConfigMap(), "--config comes from a ConfigMap");
        assertEquals(0444, v.getConfigMap().getDefaultMode(), "root's file, writable by nobody (the gateway checks it)");
        ConfigMap cm = only(ConfigMap.class, v.getConfigMap().getName());
        String text = cm.getData().get(m.getSubPath());
        assertNotNull(text, "ConfigMap " + cm.getMetadata().getName() + " has no key " + m.getSubPath());

        GatewayConfig config = GatewayConfigParser.parse(text, "ConfigMap " + cm.getMetadata().getName());
        assertTrue(config.routes().isEmpty(), "the routes follow the registrations");
        assertTrue(config.ports().stream().allMatch(p -> p.datacenter().isPresent()), "--follow-jobs needs each port's data center");
        assertEquals(Set.of("a", "b"), config.ports().stream().map(p -> p.datacenter().orElseThrow()).collect(Collectors.toSet()));
        assertFalse(config.reload(), "a subPath mount never sees a ConfigMap update: watching it would only mislead");
        GatewayConfig.MetricsEndpoint metrics = config.metrics().orElseThrow(() -> new AssertionError("probes need the metrics endpoint"));

        for (var probe : List.of(c.getReadinessProbe(), c.getLivenessProbe())) {
            HTTPGetAction get = probe.getHttpGet();
            assertNotNull(get, "probes ask the metrics endpoint over HTTP");
            assertEquals("/metrics", get.getPath(), "the one path MetricsServer serves");
            assertEquals(metrics.port(), portNumber(c, get.getPort()), "the port of the config's metrics endpoint");
            assertEquals(metrics.host(), Optional.ofNullable(get.getHost()).orElse("the pod's address"),
                    "the probe must reach the address the endpoint is bound to");
        }
    }

    @Test
    void theGatewayFollowsTheRegistrationsInEtcdOverTls() {
        PodSpec pod = only(DaemonSet.class, "xaf-gateway").getSpec().getTemplate().getSpec();
        GatewayCommand cmd = gatewayCommand();
        assertEquals("/xaf/jobs/", cmd.followJobs);
        assertEquals(null, cmd.registryPrefix);
        assertEtcdEndpoint(cmd.registry);
        assertEtcdCredentials(pod, container(pod, "gateway"), cmd.etcd, "xaf-etcd-gw");
    }

    static GatewayCommand gatewayCommand() {
        Container c = container(only(DaemonSet.class, "xaf-gateway").getSpec().getTemplate().getSpec(), "gateway");
        assertTrue(c.getCommand() == null || c.getCommand().isEmpty(), "the image's entry point runs xaf");
        CommandLine.ParseResult parsed = Main.commandLine().parseArgs(c.getArgs().toArray(String[]::new));
        assertEquals("gateway", parsed.subcommand().commandSpec().name());
        return (GatewayCommand) parsed.subcommand().commandSpec().userObject();
    }

    // ---- the workers ----

    @Test
    void theWorkersAreAnIndexedJobWhosePodIndexIsTheRankAndWhoseCompletionsAreTheWorldSize() throws Exception {
        Job job = only(Job.class, "xaf-job7");
        assertEquals("Indexed", job.getSpec().getCompletionMode());
        int completions = job.getSpec().getCompletions();
        assertEquals(completions, job.getSpec().getParallelism(), "every rank at once: the rendezvous waits for all of them");
        PodSpec pod = job.getSpec().getTemplate().getSpec();
        Container c = container(pod, "worker");
        Map<String, EnvVar> env = c.getEnv().stream().collect(Collectors.toMap(EnvVar::getName, e -> e));
        assertEquals(String.valueOf(completions), env.get("WORLD_SIZE").getValue(), "WORLD_SIZE is the Job's completions");
        assertEquals("metadata.annotations['batch.kubernetes.io/job-completion-index']",
                env.get("JOB_COMPLETION_INDEX").getValueFrom().getFieldRef().getFieldPath());
        assertFalse(c.getArgs().contains("--rank"), "the rank comes from the pod index");
        assertFalse(c.getArgs().contains("--world"), "the world size comes from WORLD_SIZE");
        assertTrue(env.keySet().stream().noneMatch(n -> n.equals("RANK")), "RANK would win over the pod index");

        // Every index, on a node of either data center: the real `xaf worker` command resolves who it is.
        Map<String, NetworkForm> nodes = Map.of("dc-a.args", NetworkForm.IPV4, "dc-b.args", NetworkForm.IPV6);
        for (var node : nodes.entrySet()) {
            for (int index = 0; index < completions; index++) {
                Map<String, String> podEnv = new HashMap<>();
                for (EnvVar e : c.getEnv()) if (e.getValue() != null) podEnv.put(e.getName(), e.getValue());
                podEnv.put("JOB_COMPLETION_INDEX", String.valueOf(index)); // what the fieldRef gives pod number index
                WorkerCommand w = workerCommand(pod, c, DIR.resolve("node").resolve(node.getKey()));
                w.environment = podEnv;
                io.xaforward.cluster.deploy.RankIdentity id = w.identity();
                assertEquals(index, id.rank(), node.getKey() + ": pod index " + index);
                assertEquals(completions, id.world());
                assertEquals(7, id.job());
                assertEquals(node.getValue(), id.form(), node.getKey());
                assertEquals("eth1", id.iface());
                assertNotNull(w.join.datacenter, "--etcd needs the data center, from the node's file");
                assertNotNull(w.join.gateway, "--etcd needs the gateway port, from the node's file");
            }
        }
    }

    @Test
    void theWorkersGetTheirDataCenterFromTheNodeTheirSecretsAsFilesAndEtcdOverTls() throws Exception {
        Job job = only(Job.class, "xaf-job7");
        PodSpec pod = job.getSpec().getTemplate().getSpec();
        Container c = container(pod, "worker");
        assertEquals(Boolean.TRUE, pod.getHostNetwork(), "the worker sends on the node's data-center NIC");
        assertEquals("ClusterFirstWithHostNet", pod.getDnsPolicy());
        assertEquals(List.of("ALL"), c.getSecurityContext().getCapabilities().getDrop());
        assertTrue(c.getSecurityContext().getCapabilities().getAdd() == null
                || c.getSecurityContext().getCapabilities().getAdd().isEmpty(), "a worker needs no capability");
        ContainerPort xaf = c.getPorts().stream().filter(p -> p.getContainerPort() == 9450).findFirst().orElseThrow();
        assertEquals("UDP", xaf.getProtocol(), "UDP 9450 held per node: one rank per node");

        // The argument file is the node's: a hostPath directory.
        String atFile = c.getArgs().stream().filter(a -> a.startsWith("@")).findFirst().orElseThrow().substring(1);
        VolumeMount nodeMount = c.getVolumeMounts().stream().filter(m -> atFile.startsWith(m.getMountPath() + "/"))
                .findFirst().orElseThrow(() -> new AssertionError(atFile + " is on no volume"));
        assertNotNull(volume(pod, nodeMount.getName()).getHostPath(), atFile + " must come from the node");

        WorkerCommand w = workerCommand(pod, c, DIR.resolve("node").resolve("dc-a.args"));
        assertEtcdEndpoint(w.join.peers.etcd);
        assertEtcdCredentials(pod, c, w.join.etcd, "xaf-etcd-job7");
        assertSecretFile(pod, c, w.join.secretFile, "xaf-job7");
        assertSecretFile(pod, c, w.join.token.file, "xaf-job7");
        assertEquals(io.xaforward.transport.WireSecurity.MAC, w.join.wireSecurity, "every datagram authenticated (the default)");
        assertTrue(w.resume, "a restarted pod resumes from the newest checkpoint every rank has");
        for (Path p : List.of(w.checkpointDir, w.data)) {
            VolumeMount m = c.getVolumeMounts().stream().filter(vm -> p.toString().startsWith(vm.getMountPath() + "/"))
                    .findFirst().orElseThrow(() -> new AssertionError(p + " is on no volume"));
            assertNotNull(volume(pod, m.getName()).getPersistentVolumeClaim(), p + ": shared by the ranks, kept across pods");
            only(PersistentVolumeClaim.class, volume(pod, m.getName()).getPersistentVolumeClaim().getClaimName());
        }
        assertTrue(w.dataRoots.stream().anyMatch(r -> w.data.startsWith(r)), "--data lies under a --data-root");
    }

    static WorkerCommand workerCommand(PodSpec pod, Container c, Path nodeArgs) {
        List<String> args = new ArrayList<>();
        for (String a : c.getArgs()) args.add(a.startsWith("@") ? "@" + nodeArgs.toAbsolutePath() : a);
        CommandLine.ParseResult parsed = Main.commandLine().parseArgs(args.toArray(String[]::new));
        assertEquals("worker", parsed.subcommand().commandSpec().name());
        return (WorkerCommand) parsed.subcommand().commandSpec().userObject();
    }

    // ---- etcd ----

    @Test
    void etcdServesOnlyTlsAndWantsClientCertificatesSignedByItsCa() {
        StatefulSet sts = only(StatefulSet.class, "xaf-etcd");
        Service svc = only(Service.class, sts.getSpec().getServiceName());
        assertEquals(sts.getSpec().getTemplate().getMetadata().getLabels().entrySet().containsAll(
                svc.getSpec().getSelector().entrySet()), true, "the Service selects the StatefulSet's pods");
        assertTrue(svc.getSpec().getPorts().stream().anyMatch(p -> p.getPort() == 2379));
        PodSpec pod = sts.getSpec().getTemplate().getSpec();
        Container c = container(pod, "etcd");
        Map<String, String> flags = new HashMap<>();
        Set<String> switches = new TreeSet<>();
        for (String a : c.getCommand().subList(1, c.getCommand().size())) {
            int eq = a.indexOf('=');
            if (eq < 0) switches.add(a);
            else flags.put(a.substring(0, eq), a.substring(eq + 1));
        }
        assertTrue(switches.contains("--client-cert-auth"), "clients prove who they are with a certificate");
        assertTrue(flags.get("--listen-client-urls").startsWith("https://"), "clients only over TLS");
        assertEquals("https://xaf-etcd." + SYSTEM_NAMESPACE + ".svc:2379", flags.get("--advertise-client-urls"));
        for (String f : List.of("--cert-file", "--key-file", "--trusted-ca-file")) {
            String file = flags.get(f);
            assertNotNull(file, f);
            VolumeMount m = c.getVolumeMounts().stream().filter(vm -> file.startsWith(vm.getMountPath() + "/")).findFirst()
                    .orElseThrow(() -> new AssertionError(f + " " + file + " is on no volume"));
            assertEquals("xaf-etcd-server", volume(pod, m.getName()).getSecret().getSecretName(), f);
        }
    }

    /** The endpoint the gateway and workers use: the etcd Service's name in its namespace, https, the client port. */
    static void assertEtcdEndpoint(URI url) {
        Service svc = only(Service.class, "xaf-etcd");
        assertEquals("https", url.getScheme(), "etcd only over TLS");
        assertEquals(svc.getMetadata().getName() + "." + svc.getMetadata().getNamespace() + ".svc", url.getHost());
        assertEquals(2379, url.getPort());
    }

    /** --etcd-ca/cert/key from the client certificate's Secret, the password from the role's, all as files. */
    static void assertEtcdCredentials(PodSpec pod, Container c, EtcdOptions etcd, String passwordSecret) {
        assertSecretFile(pod, c, etcd.ca, "xaf-etcd-client");
        assertSecretFile(pod, c, etcd.cert, "xaf-etcd-client");
        assertSecretFile(pod, c, etcd.key, "xaf-etcd-client");
        assertSecretFile(pod, c, etcd.passwordFile, passwordSecret);
        assertNotNull(etcd.user, "one etcd user per role");
    }

    /**
     * A file xaf checks (private, not a link) comes from {@code secret} as a subPath mount, mode 400: a Secret volume
     * mounted whole gives a symbolic link into its ..data directory, which xaf refuses.
     */
    static void assertSecretFile(PodSpec pod, Container c, Path file, String secret) {
        assertNotNull(file, "a file from Secret " + secret);
        VolumeMount m = mountAt(c, file.toString());
        assertNotNull(m.getSubPath(), file + ": a subPath mount (a file, not a link)");
        Volume v = volume(pod, m.getName());
        assertNotNull(v.getSecret(), file + " comes from a Secret");
        assertEquals(secret, v.getSecret().getSecretName(), file.toString());
        assertEquals(0400, v.getSecret().getDefaultMode(), file + ": private to root");
    }

    // ---- namespaces, seccomp, tokens, the NetworkPolicy ----

    /** A pod template's namespace and spec. */
    record PodOf(String what, String namespace, PodSpec spec) {}

    static List<PodOf> pods() {
        List<PodOf> out = new ArrayList<>();
        for (HasMetadata o : FILES.values().stream().flatMap(List::stream).toList()) {
            PodSpec pod = o instanceof DaemonSet d ? d.getSpec().getTemplate().getSpec()
                    : o instanceof StatefulSet s ? s.getSpec().getTemplate().getSpec()
                    : o instanceof Job j ? j.getSpec().getTemplate().getSpec() : null;
            if (pod != null) out.add(new PodOf(o.getKind() + " " + o.getMetadata().getName(), o.getMetadata().getNamespace(), pod));
        }
        return out;
    }

    /**
     * The namespaces the manifests make, each with the labels a selector sees: its own and
     * {@code kubernetes.io/metadata.name}, which Kubernetes sets on every namespace.
     */
    static Map<String, Map<String, String>> namespaces() {
        Map<String, Map<String, String>> out = new HashMap<>();
        for (HasMetadata o : FILES.values().stream().flatMap(List::stream).toList()) {
            if (!(o instanceof Namespace ns)) continue;
            Map<String, String> labels = new HashMap<>(Optional.ofNullable(ns.getMetadata().getLabels()).orElse(Map.of()));
            labels.put("kubernetes.io/metadata.name", ns.getMetadata().getName());
            out.put(ns.getMetadata().getName(), labels);
        }
        return out;
    }

    @Test
    void etcdAndTheGatewayLiveInTheSystemNamespaceAndEachJobInANamespaceOfItsOwn() {
        assertEquals(SYSTEM_NAMESPACE, only(StatefulSet.class, "xaf-etcd").getMetadata().getNamespace());
        assertEquals(SYSTEM_NAMESPACE, only(DaemonSet.class, "xaf-gateway").getMetadata().getNamespace());
        List<Job> jobs = FILES.values().stream().flatMap(List::stream).filter(Job.class::isInstance).map(Job.class::cast).toList();
        assertFalse(jobs.isEmpty());
        for (Job job : jobs) {
            String ns = job.getMetadata().getNamespace();
            assertFalse(ns.equals(SYSTEM_NAMESPACE), "whoever may create a Job in " + ns + " may mount its Secrets: etcd's"
                    + " server key and the gateway's credentials must not be among them");
            assertTrue(namespaces().containsKey(ns), "the job's namespace is made with it: " + ns);
            List<PodOf> neighbours = pods().stream().filter(p -> p.namespace().equals(ns)).toList();
            assertEquals(1, neighbours.size(), "one job per namespace, nothing else in it: " + neighbours);
        }
    }

    @Test
    void everyPodRunsUnderTheRuntimesDefaultSeccompProfileWithoutAServiceAccountToken() {
        for (PodOf p : pods()) {
            assertEquals(Boolean.FALSE, p.spec().getAutomountServiceAccountToken(), p.what() + ": no pod of ours talks to the API");
            assertNotNull(p.spec().getSecurityContext(), p.what());
            assertNotNull(p.spec().getSecurityContext().getSeccompProfile(), p.what() + ": a seccomp profile");
            assertEquals("RuntimeDefault", p.spec().getSecurityContext().getSeccompProfile().getType(), p.what());
            for (Container c : p.spec().getContainers()) {
                var own = c.getSecurityContext() == null ? null : c.getSecurityContext().getSeccompProfile();
                assertTrue(own == null || "RuntimeDefault".equals(own.getType()), p.what() + "/" + c.getName()
                        + " overrides the pod's seccomp profile with " + own);
            }
        }
    }

    @Test
    void aNetworkPolicyLetsOnlyTheGatewayAndTheJobsReachEtcdsClientPortAndOnlyMonitoringItsMetrics() {
        StatefulSet sts = only(StatefulSet.class, "xaf-etcd");
        Map<String, String> etcdLabels = sts.getSpec().getTemplate().getMetadata().getLabels();
        Container etcd = container(sts.getSpec().getTemplate().getSpec(), "etcd");
        int clientPort = URI.create(etcdFlag(etcd, "--listen-client-urls")).getPort();
        int metricsPort = URI.create(etcdFlag(etcd, "--listen-metrics-urls")).getPort();

        List<NetworkPolicy> policies = FILES.values().stream().flatMap(List::stream).filter(NetworkPolicy.class::isInstance)
                .map(NetworkPolicy.class::cast)
                .filter(np -> np.getMetadata().getNamespace().equals(sts.getMetadata().getNamespace()))
                .filter(np -> selects(np.getSpec().getPodSelector(), etcdLabels)).toList();
        assertFalse(policies.isEmpty(), "no NetworkPolicy selects etcd's pods: every pod may reach every port");
        Map<Integer, List<NetworkPolicyPeer>> admitted = new HashMap<>();
        for (NetworkPolicy np : policies) {
            assertTrue(np.getSpec().getPolicyTypes().contains("Ingress"), np.getMetadata().getName());
            for (NetworkPolicyIngressRule rule : np.getSpec().getIngress()) {
                assertFalse(rule.getPorts() == null || rule.getPorts().isEmpty(), "a rule without ports admits every port");
                assertFalse(rule.getFrom() == null || rule.getFrom().isEmpty(), "a rule without from admits every source");
                for (NetworkPolicyPort port : rule.getPorts()) {
                    assertTrue(port.getEndPort() == null, "a range of ports");
                    admitted.computeIfAbsent(portNumber(etcd, port.getPort()), k -> new ArrayList<>()).addAll(rule.getFrom());
                }
            }
        }
        assertTrue(admitted.containsKey(clientPort), "the gateway and the workers must reach the client port");
        assertTrue(Set.of(clientPort, metricsPort).containsAll(admitted.keySet()), "ports etcd does not serve: " + admitted.keySet());

        Map<String, Map<String, String>> namespaces = namespaces();
        Map<String, String> stranger = Map.of("kubernetes.io/metadata.name", "default");
        Set<String> reaching = new TreeSet<>();
        for (NetworkPolicyPeer peer : admitted.get(clientPort)) {
            if (peer.getIpBlock() != null) {
                // the host-network pods (gateway, workers) connect from their node's address
                assertFalse(peer.getIpBlock().getCidr().endsWith("/0"), "an ipBlock of every address");
                continue;
            }
            assertTrue(peer.getPodSelector() == null, "namespaces, not pods picked by labels any pod can carry");
            assertNotNull(peer.getNamespaceSelector(), "a peer of neither namespaces nor addresses");
            assertFalse(selects(peer.getNamespaceSelector(), stranger), "a namespace of anyone: " + peer);
            for (var ns : namespaces.entrySet()) if (selects(peer.getNamespaceSelector(), ns.getValue())) reaching.add(ns.getKey());
        }
        Set<String> needed = new TreeSet<>(Set.of(only(DaemonSet.class, "xaf-gateway").getMetadata().getNamespace()));
        for (PodOf p : pods()) if (p.what().startsWith("Job ")) needed.add(p.namespace());
        assertEquals(needed, reaching, "the namespaces that reach etcd's client port");

        for (NetworkPolicyPeer peer : admitted.getOrDefault(metricsPort, List.of())) {
            assertTrue(peer.getIpBlock() == null && peer.getPodSelector() == null, "metrics: only the monitoring namespace: " + peer);
            assertEquals(Map.of("kubernetes.io/metadata.name", "monitoring"), peer.getNamespaceSelector().getMatchLabels(),
                    "metrics: only the monitoring namespace");
            assertTrue(peer.getNamespaceSelector().getMatchExpressions() == null
                    || peer.getNamespaceSelector().getMatchExpressions().isEmpty(), peer.toString());
        }
    }

    /** Whether a label selector (matchLabels only: these manifests use no expressions) picks {@code labels}. */
    static boolean selects(LabelSelector selector, Map<String, String> labels) {
        assertNotNull(selector, "a missing selector");
        assertTrue(selector.getMatchExpressions() == null || selector.getMatchExpressions().isEmpty(),
                "matchExpressions: this test reads matchLabels only");
        Map<String, String> wanted = Optional.ofNullable(selector.getMatchLabels()).orElse(Map.of());
        return labels.entrySet().containsAll(wanted.entrySet());
    }

    static String etcdFlag(Container etcd, String flag) {
        return etcd.getCommand().stream().filter(a -> a.startsWith(flag + "=")).map(a -> a.substring(flag.length() + 1))
                .findFirst().orElseThrow(() -> new AssertionError("etcd has no " + flag));
    }

    // ---- the README ----

    @Test
    void theReadmeCreatesEverySecretTheManifestsMountAndSaysNoClusterRanHere() throws Exception {
        String readme = Files.readString(DIR.resolve("README.md"));
        Set<String> created = new TreeSet<>();
        Matcher m = Pattern.compile("kubectl -n ([a-z0-9-]+) create secret generic ([a-z0-9-]+)").matcher(readme);
        while (m.find()) created.add(m.group(1) + "/" + m.group(2));
        Set<String> mounted = new TreeSet<>();
        for (PodOf p : pods()) {
            for (Volume v : p.spec().getVolumes()) if (v.getSecret() != null) mounted.add(p.namespace() + "/" + v.getSecret().getSecretName());
        }
        assertEquals(mounted, created, "README's kubectl create secret lines against the Secrets the pods mount");
        for (String f : FILES.keySet()) assertTrue(readme.contains(f), "README describes " + f);
        assertTrue(readme.contains("No Kubernetes cluster"), "README says what was not tested");
    }

    // ---- helpers ----

    static Container container(PodSpec pod, String name) {
        return pod.getContainers().stream().filter(c -> c.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no container " + name));
    }

    static VolumeMount mountAt(Container c, String path) {
        return c.getVolumeMounts().stream().filter(m -> m.getMountPath().equals(path)).findFirst()
                .orElseThrow(() -> new AssertionError(c.getName() + ": nothing is mounted at " + path));
    }

    static Volume volume(PodSpec pod, String name) {
        return pod.getVolumes().stream().filter(v -> v.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no volume " + name));
    }

    /** A probe's port, by number or by the name of one of the container's ports. */
    static int portNumber(Container c, io.fabric8.kubernetes.api.model.IntOrString port) {
        if (port.getIntVal() != null) return port.getIntVal();
        return c.getPorts().stream().filter(p -> port.getStrVal().equals(p.getName())).findFirst()
                .orElseThrow(() -> new AssertionError("no container port named " + port.getStrVal())).getContainerPort();
    }
}
