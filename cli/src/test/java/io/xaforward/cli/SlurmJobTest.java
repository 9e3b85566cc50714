package io.xaforward.cli;

import io.xaforward.cluster.WorkerLine;
import io.xaforward.dataplane.sys.NetworkNamespace;
import io.xaforward.gateway.GatewayMetrics;
import io.xaforward.cluster.deploy.SchedulerEnvironment;
import io.xaforward.common.EtcdClient;
import io.xaforward.common.EtcdException;
import io.xaforward.common.EtcdSecurity;
import io.xaforward.common.LocalEtcd;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A training job run by a real Slurm (Debian's slurm-wlm and munge, one node: this machine, {@link LocalSlurm}):
 * {@code srun -n 4 --overcommit} starts four tasks; each enters the network namespace of its emulated host (task i
 * on host i of the two-dc topology, as Slurm would place task i on node i) and runs {@code xaf worker} with neither
 * rank, world size nor job: they come from SLURM_PROCID, SLURM_NTASKS and SLURM_JOB_ID. The workers meet at an etcd
 * the job file names, and the gradients cross an XDP gateway whose routes follow the registrations. The job ends
 * COMPLETED with identical weights on every rank; a job cancelled mid-run with {@code scancel} leaves no worker
 * process, namespace, registration or pinned BPF object behind. The test fails, never skips, when the daemons cannot
 * start.
 *
 * <p>slurmctld runs examples/slurm/xaf-etcd-prolog and xaf-etcd-epilog (PrologSlurmctld, EpilogSlurmctld) for every
 * job against a second etcd, the site's as DEPLOY.md section 4 runs it (TLS, client certificates, authentication on):
 * each job gets an etcd user that may write its own prefix and no other job's, and loses it when it ends.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SlurmJobTest {
    static final int CLIENT_PORT = 2379;
    static DeployFixture machines;
    static LocalSlurm slurm;
    static LocalEtcd etcd;
    static GatewayProcess gateway;
    /** The emulated hosts', switches' and gateway's namespaces; pins under /sys/fs/bpf before the jobs. */
    static Set<String> fixtureNamespaces;
    static Set<String> bpffsBefore;
    /** The site's etcd that the prolog gives each job a user on, its certificates, and the prolog's settings and output. */
    static LocalEtcd siteEtcd;
    static LocalEtcd.Tls siteTls;
    static Path credentials;
    static Path jobCredentials;
    static Path rootPassword;

    @BeforeAll
    static void up() throws Exception {
        bpffsBefore = bpffs();
        startSiteEtcd();
        Path examples = Path.of("..", "examples", "slurm").toAbsolutePath().normalize();
        StringBuilder conf = new StringBuilder();
        for (String which : List.of("prolog", "epilog")) {
            // slurmctld hands its prologs only the job's variables: the settings file is named by a wrapper
            Path wrapper = credentials.resolve(which);
            Files.writeString(wrapper, "#!/bin/sh\nXAF_SLURM_ETCD_CONF=" + credentials.resolve("slurm-etcd.conf")
                    + " exec " + examples.resolve("xaf-etcd-" + which) + "\n");
            wrapper.toFile().setExecutable(true);
            conf.append(which.equals("prolog") ? "PrologSlurmctld=" : "EpilogSlurmctld=").append(wrapper).append('\n');
        }
        slurm = LocalSlurm.start(conf.toString());
        machines = new DeployFixture();
        fixtureNamespaces = new TreeSet<>(Netns.list());
        fixtureNamespaces.removeIf(n -> !n.startsWith(machines.prefix + "-"));
        etcd = LocalEtcd.start(List.of("ip", "netns", "exec", machines.gatewayNamespace()), "[::]", "127.0.0.1",
                CLIENT_PORT, 2380);
        Path config = machines.dir.resolve("gateway-follow.yaml");
        StringBuilder y = new StringBuilder("metrics: 127.0.0.1:9464\nports:\n");
        for (Node p : machines.state.gatewayPorts("gw")) {
            y.append("  - {interface: ").append(p.iface()).append(", form: ").append(p.form().configName())
                    .append(", datacenter: ").append(p.datacenter()).append("}\n");
        }
        Files.writeString(config, y.append("routes: []\n").toString());
        gateway = GatewayProcess.start(machines.gatewayNamespace(), config, List.of(), List.of(),
                List.of("--registry", "http://127.0.0.1:" + CLIENT_PORT, "--follow-jobs", "/xaf/jobs/"));
        gateway.awaitReady(60_000);
    }

    static final String ROOT_PASSWORD = "site-root-" + Long.toHexString(System.nanoTime());

    /**
     * The site's etcd on loopback with TLS, client certificates and authentication (a root user only), and the settings
     * file the prolog and epilog read: the controller's certificate and root's password, the certificate handed to the
     * jobs, and where the jobs' directories go.
     */
    static void startSiteEtcd() throws Exception {
        credentials = Files.createTempDirectory("xaf-slurm-etcd-");
        // another user's job reaches its directory below; the keys here stay private by their own modes
        Files.setPosixFilePermissions(credentials, PosixFilePermissions.fromString("rwx--x--x"));
        jobCredentials = credentials.resolve("jobs");
        siteTls = LocalEtcd.Tls.generate(credentials.resolve("pki"), List.of("127.0.0.1"));
        siteEtcd = LocalEtcd.start(List.of(), "127.0.0.1", "127.0.0.1", LocalSlurm.freePort(), LocalSlurm.freePort(),
                siteTls, List.of());
        siteEtcd.enableAuth(new EtcdSecurity(siteTls.ca(), siteTls.clientCert(), siteTls.clientKey(), null, null), ROOT_PASSWORD);
        rootPassword = credentials.resolve("root.password");
        Files.writeString(rootPassword, ROOT_PASSWORD + "\n");
        Files.setPosixFilePermissions(rootPassword, PosixFilePermissions.fromString("rw-------"));
        Files.writeString(credentials.resolve("slurm-etcd.conf"), """
                ETCD_ENDPOINTS=%s
                ETCD_CACERT=%s
                ETCD_ADMIN_CERT=%s
                ETCD_ADMIN_KEY=%s
                ETCD_ADMIN_USER=root
                ETCD_ADMIN_PASSWORD_FILE=%s
                JOB_CERT=%s
                JOB_KEY=%s
                XAF_ETCD_JOBS_DIR=%s
                """.formatted(siteEtcd.clientUrl(), siteTls.ca(), siteTls.clientCert(), siteTls.clientKey(), rootPassword,
                siteTls.clientCert(), siteTls.clientKey(), jobCredentials));
    }

    @AfterAll
    static void down() throws Exception {
        try {
            if (gateway != null) gateway.close();
            if (etcd != null) etcd.close();
        } finally {
            try {
                if (machines != null) {
                    machines.close();
                    // the job scripts, worker logs, checkpoints and corpus
                    try (Stream<Path> files = Files.walk(machines.dir)) {
                        for (Path f : files.sorted(java.util.Comparator.reverseOrder()).toList()) Files.deleteIfExists(f);
                    }
                }
            } finally {
                try {
                    if (slurm != null) slurm.close();
                } finally {
                    if (siteEtcd != null) siteEtcd.close();
                    if (credentials != null) {
                        try (Stream<Path> files = Files.walk(credentials)) {
                            for (Path f : files.sorted(java.util.Comparator.reverseOrder()).toList()) Files.deleteIfExists(f);
                        }
                    }
                }
            }
        }
        assertFalse(slurm != null && slurm.daemonsAlive(), "a Slurm daemon left running");
        assertFalse(slurm != null && Files.exists(slurm.dir), "the Slurm directory left behind");
        assertTrue(machines == null || Netns.list().stream().noneMatch(n -> n.startsWith(machines.prefix + "-")),
                "namespaces left behind");
    }

    /**
     * The job's task script, as a job file's {@code srun} runs it on every node: the task enters its host's namespace
     * (here: the emulated host of its SLURM_PROCID) and runs xaf worker with that host's interface, data center and
     * gateway, the rendezvous's etcd at its data center's gateway port, and no rank, world or job.
     */
    static Path taskScript(String name, int steps) throws IOException {
        StringBuilder sh = new StringBuilder("#!/bin/sh\ncase \"$SLURM_PROCID\" in\n");
        for (int r = 0; r < 4; r++) {
            Node host = machines.plan.host(r);
            List<String> args = new ArrayList<>(List.of("worker"));
            args.addAll(machines.workerArgs(r, steps, machines.dir.resolve("ckpt-" + name)));
            for (String unset : List.of("--job", "--world", "--rank")) {
                int i = args.indexOf(unset);
                args.subList(i, i + 2).clear();
            }
            int dir = args.indexOf("--checkpoint-dir");
            args.set(dir + 1, machines.dir.resolve("ckpt-" + name).toString() + "/rank${SLURM_PROCID}");
            Node port = machines.state.gatewayPort("gw", host.datacenter());
            String ip = port.ip().getHostAddress();
            args.addAll(List.of("--etcd", "http://" + (ip.contains(":") ? "[" + ip + "]" : ip) + ":" + CLIENT_PORT,
                    "--datacenter", host.datacenter(), "--gateway", ip, "--rendezvous-timeout", "120"));
            List<String> cmd = Netns.javaProcessBuilder(host.namespace(), DeployFixture.WORKER_JVM, Main.class.getName(), args).command();
            sh.append("  ").append(r).append(") exec");
            for (String c : cmd) sh.append(' ').append(c.contains("${SLURM_PROCID}") ? '"' + c + '"' : quote(c));
            sh.append(" ;;\n");
        }
        sh.append("  *) echo \"no emulated host for task $SLURM_PROCID\" >&2; exit 2 ;;\nesac\n");
        Path f = machines.dir.resolve(name + ".sh");
        Files.writeString(f, sh.toString());
        f.toFile().setExecutable(true);
        return f;
    }

    static String quote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }

    /** {@code srun -n 4 --overcommit} of a task script, its labelled standard output collected. */
    static final class Srun implements AutoCloseable {
        final Process process;
        final List<String> lines = new ArrayList<>();
        final Thread reader;

        Srun(String name, Path script) throws IOException {
            ProcessBuilder pb = slurm.clientProcess(List.of("srun", "-n", "4", "--overcommit", "--kill-on-bad-exit=1",
                    "--label", "-J", name, script.toString()));
            pb.redirectError(machines.dir.resolve(name + ".err").toFile());
            process = pb.start();
            reader = Thread.ofPlatform().daemon(true).start(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream()))) {
                    for (String line; (line = r.readLine()) != null; ) {
                        synchronized (lines) {
                            lines.add(line);
                        }
                    }
                } catch (IOException ended) {
                    // srun ended
                }
            });
        }

        /** The protocol lines of {@code kind}, with srun's "TASK: " label taken off. */
        List<WorkerLine> protocolLines(String kind) {
            synchronized (lines) {
                return lines.stream().map(l -> l.replaceFirst("^\\s*\\d+: ", "")).map(WorkerLine::parse)
                        .filter(l -> l != null && l.kind().equals(kind)).toList();
            }
        }

        String output() {
            synchronized (lines) {
                return String.join("\n", lines);
            }
        }

        String errors(String name) {
            return DeployFixture.log(machines.dir.resolve(name + ".err"));
        }

        @Override
        public void close() throws InterruptedException {
            if (process.isAlive()) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /** The id of the newest job of that name, as squeue or scontrol know it. */
    static String jobId(String name) throws Exception {
        String id = "";
        for (String line : slurm.client("scontrol", "show", "job", "-o").lines().toList()) {
            if (line.contains(" JobName=" + name + " ")) id = line.replaceFirst("^JobId=(\\d+) .*$", "$1");
        }
        assertFalse(id.isEmpty(), "no job named " + name);
        return id;
    }

    /** The job's fields once it is in {@code state}, or after 60 s (srun ends while the job is still COMPLETING). */
    static Map<String, String> awaitJobState(String id, String state) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        Map<String, String> job = slurm.job(id);
        while (!state.equals(job.get("JobState")) && System.currentTimeMillis() < deadline) {
            Thread.sleep(300);
            job = slurm.job(id);
        }
        return job;
    }

    static Map<String, Long> metrics() {
        return GatewayMetrics.scrape(machines.gatewayNamespace(), "127.0.0.1", 9464);
    }

    static List<EtcdClient.KeyValue> registrations() {
        return NetworkNamespace.call(machines.gatewayNamespace(), () -> {
            try (EtcdClient c = new EtcdClient(URI.create("http://127.0.0.1:" + CLIENT_PORT), Duration.ofSeconds(5))) {
                return c.range("/xaf/jobs/").kvs();
            }
        });
    }

    @Test
    @Order(1)
    void srunOfFourTasksTrainsThroughTheXdpGatewayAndTheJobEndsCompleted() throws Exception {
        long forwardedBefore = metrics().getOrDefault("xaf_packets_total{forwarded}", 0L);
        try (Srun srun = new Srun("xaf-train", taskScript("train", 3))) {
            assertTrue(srun.process.waitFor(300, TimeUnit.SECONDS), "srun still running:\n" + srun.output() + srun.errors("xaf-train"));
            srun.reader.join(5000);
            assertEquals(0, srun.process.exitValue(), "srun's exit status\n" + srun.output() + "\n" + srun.errors("xaf-train"));
            String id = jobId("xaf-train");
            Map<String, String> job = awaitJobState(id, "COMPLETED");
            assertEquals("COMPLETED", job.get("JobState"), job.toString());
            assertEquals("0:0", job.get("ExitCode"), job.toString());

            List<WorkerLine> done = srun.protocolLines("done");
            assertEquals(4, done.size(), srun.output());
            Set<String> ranks = new TreeSet<>();
            for (WorkerLine d : done) {
                ranks.add(d.get("rank"));
                assertEquals(done.get(0).get("checksum"), d.get("checksum"), "rank " + d.get("rank") + " ends with other weights");
            }
            assertEquals(Set.of("0", "1", "2", "3"), ranks, "SLURM_PROCID gave every rank once");
            assertTrue(Files.readString(machines.dir.resolve("xaf-train.err")).contains(
                    "job " + io.xaforward.cluster.deploy.SchedulerEnvironment.foldJob(Long.parseLong(id)) + " from SLURM_JOB_ID=" + id),
                    srun.errors("xaf-train"));
        }
        assertTrue(metrics().getOrDefault("xaf_packets_total{forwarded}", 0L) > forwardedBefore + 100,
                "gradients crossed the gateway: " + metrics());
        assertEquals(List.of(), registrations(), "finished workers revoke their registrations");
    }

    @Test
    @Order(2)
    void scancelMidRunLeavesNoProcessNamespaceRegistrationOrPinnedObject() throws Exception {
        try (Srun srun = new Srun("xaf-cancel", taskScript("cancel", 100_000))) {
            long deadline = System.currentTimeMillis() + 240_000;
            while (srun.protocolLines("step").size() < 4 && srun.process.isAlive() && System.currentTimeMillis() < deadline) {
                Thread.sleep(200);
            }
            assertTrue(srun.protocolLines("step").size() >= 4, "the job trains before it is cancelled:\n" + srun.output()
                    + "\n" + srun.errors("xaf-cancel"));
            String id = jobId("xaf-cancel");
            assertFalse(jobProcesses(id).isEmpty(), "the job's workers are found by their SLURM_JOB_ID");
            slurm.client("scancel", id);
            assertTrue(srun.process.waitFor(120, TimeUnit.SECONDS), "srun did not end after scancel");
            assertNotEquals(0, srun.process.exitValue());

            assertEquals("CANCELLED", awaitJobState(id, "CANCELLED").get("JobState"));
            deadline = System.currentTimeMillis() + 30_000;
            while (!jobProcesses(id).isEmpty() && System.currentTimeMillis() < deadline) Thread.sleep(300);
            assertEquals(List.of(), jobProcesses(id), "processes of the cancelled job left running");
            // a killed worker's registration lives until its lease expires (10 s), a stopped one revokes it
            deadline = System.currentTimeMillis() + 20_000;
            while (!registrations().isEmpty() && System.currentTimeMillis() < deadline) Thread.sleep(300);
            assertEquals(List.of(), registrations(), "registrations of the cancelled job left in etcd");
        }
        // Other tests on this machine create and remove their own namespaces and pins meanwhile: what this job could
        // leave carries this test's prefix (its hosts' namespaces and interfaces).
        Set<String> ours = new TreeSet<>(Netns.list());
        ours.removeIf(n -> !n.startsWith(machines.prefix + "-"));
        assertEquals(fixtureNamespaces, ours, "namespaces besides the emulated hosts of the test");
        Set<String> pins = bpffs();
        pins.removeAll(bpffsBefore);
        pins.removeIf(p -> !p.contains(machines.prefix));
        assertEquals(Set.of(), pins, "pinned BPF objects left behind");
        assertTrue(gateway.isAlive(), "the gateway outlives the job: " + gateway.output());
    }

    /**
     * The shipped job file, {@code examples/slurm/train.sbatch}, through sbatch: each node's site file (here one per
     * task, chosen by SLURM_PROCID, naming the task's emulated host) gives the interface, form, data center, gateway
     * and the address its network reaches the site's etcd at ({@code XAF_ETCD=site}); {@code XAF} is an xaf that
     * runs in the host's namespace.
     */
    @Test
    @Order(3)
    void theExampleJobFileRunsThroughSbatch() throws Exception {
        Path shared = Files.createDirectories(machines.dir.resolve("shared"));
        StringBuilder site = new StringBuilder("case \"$SLURM_PROCID\" in\n");
        for (int r = 0; r < 4; r++) {
            Node host = machines.plan.host(r);
            String ip = machines.state.gatewayPort("gw", host.datacenter()).ip().getHostAddress();
            site.append("  ").append(r).append(") export XAF_NETNS=").append(host.namespace())
                    .append("; XAF_INTERFACE=").append(host.iface()).append("; XAF_FORM=").append(host.form().configName())
                    .append("; XAF_DATACENTER=").append(host.datacenter()).append("; XAF_GATEWAY=").append(ip)
                    .append("; XAF_ETCD_URL=http://").append(ip.contains(":") ? "[" + ip + "]" : ip).append(':')
                    .append(CLIENT_PORT).append(" ;;\n");
        }
        Path siteFile = machines.dir.resolve("site.env");
        Files.writeString(siteFile, site.append("esac\n").toString());
        StringBuilder xaf = new StringBuilder("#!/bin/sh\nexec");
        for (String c : Netns.javaProcessBuilder("XAFNETNS", DeployFixture.WORKER_JVM, Main.class.getName(), List.of()).command()) {
            xaf.append(' ').append(c.contains("XAFNETNS") ? '"' + c.replace("XAFNETNS", "${XAF_NETNS}") + '"' : quote(c));
        }
        Path xafInNamespace = machines.dir.resolve("xaf-in-netns.sh");
        Files.writeString(xafInNamespace, xaf.append(" \"$@\"\n").toString());
        xafInNamespace.toFile().setExecutable(true);

        Path out = machines.dir.resolve("example-%j.out");
        ProcessBuilder pb = slurm.clientProcess(List.of("sbatch", "--wait", "--parsable", "--nodes=1", "--ntasks=4",
                "--overcommit", "-J", "xaf-example", "-o", out.toString(),
                Path.of("..", "examples", "slurm", "train.sbatch").toAbsolutePath().normalize().toString()));
        pb.environment().putAll(Map.of("XAF", xafInNamespace.toString(), "XAF_SHARED", shared.toString(),
                "XAF_SITE", siteFile.toString(), "XAF_DATA", machines.corpus.toString(), "XAF_ETCD", "site",
                "XAF_ETCD_OPTS", "", "XAF_PRESET", "tiny", "XAF_STEPS", "3",
                "XAF_WORKER_ARGS", "--batch 8 --seed 31 --warmup 2 --start-timeout 90 --rendezvous-timeout 120"));
        pb.redirectErrorStream(true);
        Process sbatch = pb.start();
        String said;
        try {
            assertTrue(sbatch.waitFor(300, TimeUnit.SECONDS), "sbatch --wait still waiting");
            said = new String(sbatch.getInputStream().readAllBytes()).strip();
        } finally {
            sbatch.destroyForcibly();
        }
        String id = said.lines().findFirst().orElse("").replaceFirst(";.*", "");
        Path jobOut = machines.dir.resolve("example-" + id + ".out");
        String output = Files.exists(jobOut) ? Files.readString(jobOut) : "(no job output)";
        assertEquals(0, sbatch.exitValue(), "sbatch: " + said + "\n" + output);
        assertEquals("COMPLETED", awaitJobState(id, "COMPLETED").get("JobState"), output);
        List<WorkerLine> done = output.lines().map(WorkerLine::parse).filter(l -> l != null && l.kind().equals("done")).toList();
        assertEquals(4, done.size(), output);
        Set<String> ranks = new TreeSet<>();
        for (WorkerLine d : done) {
            ranks.add(d.get("rank"));
            assertEquals(done.get(0).get("checksum"), d.get("checksum"), "rank " + d.get("rank") + " ends with other weights");
        }
        assertEquals(Set.of("0", "1", "2", "3"), ranks);
        assertTrue(Files.isRegularFile(shared.resolve("job-" + id).resolve("job.secret")), "the job file's secret");
        assertEquals(List.of(), registrations(), "finished workers revoke their registrations");
    }

    /**
     * Two jobs at once, one of root and one of another user (nobody): the prolog gave each an etcd user, role
     * {@code xaf-slurm-ID} on {@code /xaf/jobs/XAFJOB/}, and a directory of the job's user holding its password and
     * certificate. Each job's credentials write and read its own prefix; writing the other job's keys or reading all
     * jobs is refused by etcd (permission denied). When a job ends the epilog removes its user, its role, its keys and
     * its directory, and the password opens nothing any more; at the end no job's user is left, this class's other
     * jobs' included.
     */
    @Test
    @Order(4)
    void thePrologGivesEachJobAnEtcdUserForItsOwnPrefixOnlyAndTheEpilogRemovesIt() throws Exception {
        String rootJob = holdingJob("xaf-cred-root", List.of());
        String nobodyJob = holdingJob("xaf-cred-nobody", List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"));
        try {
            for (String id : List.of(rootJob, nobodyJob)) {
                Path dir = jobCredentials.resolve(id);
                int uid = Integer.parseInt(slurm.job(id).get("UserId").replaceFirst("^.*\\((\\d+)\\)$", "$1"));
                assertEquals(id.equals(nobodyJob) ? 65534 : 0, uid, "the job's user");
                assertEquals(uid, Files.getAttribute(dir, "unix:uid"), dir + " belongs to the job's user");
                assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)), dir.toString());
                for (String f : List.of("password", "ca.crt", "client.crt", "client.key")) {
                    assertEquals(uid, Files.getAttribute(dir.resolve(f), "unix:uid"), f + " of job " + id);
                    assertEquals("r--------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(f))), f);
                }
            }
            String ownKey = "/xaf/jobs/" + SchedulerEnvironment.foldJob(Long.parseLong(rootJob)) + "/ranks/0";
            String otherKey = "/xaf/jobs/" + SchedulerEnvironment.foldJob(Long.parseLong(nobodyJob)) + "/ranks/0";
            // root's job through xaf's own etcd client, as its workers would; nobody's job through etcdctl run as
            // nobody, reading the files the prolog gave it
            try (EtcdClient asRootJob = jobClient(rootJob)) {
                asRootJob.put(ownKey, "root's rank 0", 0);
                assertTrue(asJobUser(nobodyJob, 0, "put", otherKey, "nobody's rank 0").lines().anyMatch("OK"::equals),
                        "a job writes its own keys");
                assertEquals("root's rank 0", asRootJob.range(ownKey).kvs().getFirst().value(), "a job reads its own keys");

                String hijack = asJobUser(nobodyJob, 1, "put", ownKey, "hijacked");
                assertTrue(hijack.contains("permission denied"), "another job's key: " + hijack);
                EtcdException other = assertThrows(EtcdException.class, () -> asRootJob.put(otherKey, "hijacked", 0));
                assertTrue(other.getMessage().contains("permission denied"), other.getMessage());
                EtcdException all = assertThrows(EtcdException.class, () -> asRootJob.range("/xaf/jobs/"));
                assertTrue(all.getMessage().contains("permission denied"), "every job's registrations: " + all.getMessage());
                assertEquals("root's rank 0", asRootJob.range(ownKey).kvs().getFirst().value(), "the refused write left it");
            }

            Path rootJobPassword = Files.copy(jobCredentials.resolve(rootJob).resolve("password"), credentials.resolve("ended.password"),
                    java.nio.file.StandardCopyOption.COPY_ATTRIBUTES);
            slurm.client("scancel", rootJob);
            awaitGone(rootJob);
            assertFalse(Files.exists(jobCredentials.resolve(rootJob)), "the ended job's directory");
            try (EtcdClient ended = new EtcdClient(siteEtcd.clientUrl(), Duration.ofSeconds(5), new EtcdSecurity(siteTls.ca(),
                    siteTls.clientCert(), siteTls.clientKey(), "xaf-slurm-" + rootJob, rootJobPassword))) {
                EtcdException e = assertThrows(EtcdException.class, () -> ended.range(ownKey));
                assertTrue(e.getMessage().contains("authentication failed"), "the ended job's password: " + e.getMessage());
            }
            try (EtcdClient root = siteRoot()) {
                assertEquals(List.of(), root.range(ownKey).kvs(), "the ended job's keys");
                assertEquals(1, root.range(otherKey).kvs().size(), "the running job's keys stay");
            }
            assertTrue(siteEtcdctl("user", "list").contains("xaf-slurm-" + nobodyJob), "the running job keeps its user");
        } finally {
            slurm.client("scancel", rootJob, nobodyJob);
        }
        awaitGone(nobodyJob);
        // Every job of this class (the srun and sbatch jobs of the tests before) ran the prolog and the epilog.
        assertEquals(List.of("root"), siteEtcdctl("user", "list").lines().toList(), "users left behind");
        assertEquals(List.of(), siteEtcdctl("role", "list").lines().filter(r -> r.startsWith("xaf-slurm-")).toList(),
                "roles left behind");
        try (Stream<Path> left = Files.list(jobCredentials)) {
            assertEquals(List.of(), left.toList(), "job directories left behind");
        }
    }

    /** A job that sleeps until cancelled, once it runs and its prolog has made its credentials (at most 60 s). */
    static String holdingJob(String name, List<String> asUser) throws Exception {
        List<String> cmd = new ArrayList<>(asUser);
        cmd.addAll(List.of("sbatch", "--parsable", "-J", name, "-n", "1", "--overcommit", "--chdir=/tmp", "-o", "/dev/null",
                "--wrap", "sleep 600"));
        ProcessBuilder pb = slurm.clientProcess(cmd).redirectErrorStream(true);
        Process p = pb.start();
        String said = new String(p.getInputStream().readAllBytes()).strip();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, String.join(" ", cmd) + ": " + said);
        String id = said.replaceFirst(";.*", "");
        Map<String, String> job = awaitJobState(id, "RUNNING");
        assertEquals("RUNNING", job.get("JobState"), job + "\n" + slurm.logs());
        long deadline = System.currentTimeMillis() + 30_000;
        while (!Files.exists(jobCredentials.resolve(id).resolve("password")) && System.currentTimeMillis() < deadline) Thread.sleep(200);
        assertTrue(Files.exists(jobCredentials.resolve(id).resolve("password")), "the prolog's credentials of job " + id
                + "\n" + slurm.logs());
        return id;
    }

    /** Waits (at most 60 s) until the epilog of job {@code id} has removed its etcd user. */
    static void awaitGone(String id) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (siteEtcdctl("user", "list").contains("xaf-slurm-" + id) && System.currentTimeMillis() < deadline) Thread.sleep(300);
        assertFalse(siteEtcdctl("user", "list").contains("xaf-slurm-" + id), "job " + id + "'s user\n" + slurm.logs());
        assertFalse(siteEtcdctl("role", "list").contains("xaf-slurm-" + id), "job " + id + "'s role");
    }

    /**
     * etcdctl run as nobody (uid 65534) with job {@code id}'s credentials from its directory, read as that user; its
     * output, after checking its exit status is {@code status}.
     */
    static String asJobUser(String id, int status, String... args) throws Exception {
        Path dir = jobCredentials.resolve(id);
        StringBuilder sh = new StringBuilder("ETCDCTL_USER=\"xaf-slurm-" + id + ":$(cat " + dir.resolve("password")
                + ")\" exec etcdctl --endpoints " + siteEtcd.clientUrl() + " --cacert " + dir.resolve("ca.crt")
                + " --cert " + dir.resolve("client.crt") + " --key " + dir.resolve("client.key"));
        for (String a : args) sh.append(' ').append(quote(a));
        Process p = new ProcessBuilder("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", sh.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes()).strip();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "etcdctl still running");
        assertEquals(status, p.exitValue(), out);
        return out;
    }

    /** The site's etcd with the credentials the prolog left for job {@code id}, as its workers would use them. */
    static EtcdClient jobClient(String id) {
        Path dir = jobCredentials.resolve(id);
        return new EtcdClient(siteEtcd.clientUrl(), Duration.ofSeconds(5), new EtcdSecurity(dir.resolve("ca.crt"),
                dir.resolve("client.crt"), dir.resolve("client.key"), "xaf-slurm-" + id, dir.resolve("password")));
    }

    static EtcdClient siteRoot() {
        return new EtcdClient(siteEtcd.clientUrl(), Duration.ofSeconds(5), new EtcdSecurity(siteTls.ca(),
                siteTls.clientCert(), siteTls.clientKey(), "root", rootPassword));
    }

    /** etcdctl (Debian package etcd-client) against the site's etcd as its root user; its output. */
    static String siteEtcdctl(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("etcdctl", "--endpoints", siteEtcd.clientUrl().toString(),
                "--cacert", siteTls.ca().toString(), "--cert", siteTls.clientCert().toString(),
                "--key", siteTls.clientKey().toString()));
        cmd.addAll(List.of(args));
        return LocalSlurm.run(cmd, Map.of("ETCDCTL_USER", "root:" + ROOT_PASSWORD));
    }

    /** The processes whose environment holds {@code SLURM_JOB_ID=id}: every task of the job and its children. */
    static List<Long> jobProcesses(String id) throws IOException {
        byte[] marker = ("\0SLURM_JOB_ID=" + id + "\0").getBytes();
        List<Long> pids = new ArrayList<>();
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.filter(p -> p.getFileName().toString().matches("\\d+")).toList()) {
                byte[] env;
                try {
                    byte[] raw = Files.readAllBytes(p.resolve("environ"));
                    env = new byte[raw.length + 1];
                    System.arraycopy(raw, 0, env, 1, raw.length); // a leading NUL, so the first variable matches too
                } catch (IOException gone) {
                    continue;
                }
                if (indexOf(env, marker) >= 0) pids.add(Long.parseLong(p.getFileName().toString()));
            }
        }
        return pids;
    }

    private static int indexOf(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) if (hay[i + j] != needle[j]) continue outer;
            return i;
        }
        return -1;
    }

    /** Every path under /sys/fs/bpf (pinned maps, programs, links). */
    static Set<String> bpffs() throws IOException {
        Path root = Path.of("/sys/fs/bpf");
        if (!Files.isDirectory(root)) return Set.of();
        try (Stream<Path> s = Files.walk(root)) {
            return new TreeSet<>(s.map(Path::toString).toList());
        }
    }
}
