package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.xaforward.cluster.deploy.RankIdentity;
import io.xaforward.cluster.deploy.WorkerOptions;
import io.xaforward.protocol.NetworkForm;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * xaf worker honours torchrun's environment: RANK, WORLD_SIZE and LOCAL_RANK (picking one of a list of interfaces);
 * an option given on the command line wins; what neither gives comes from the cluster file (job, world size, form).
 */
class WorkerEnvironmentTest {
    @TempDir
    static Path dir;
    static Path cluster;

    @BeforeAll
    static void clusterFile() throws Exception {
        cluster = dir.resolve("cluster.yaml");
        Files.writeString(cluster, """
                job: 7
                datacenters:
                  - {name: a, form: ipv4, mtu: 1500, gateway: {ip: 10.0.1.254}}
                  - {name: b, form: ipv6, mtu: 1500, gateway: {ip: "fd00:b::fe"}}
                ranks:
                  - {rank: 0, datacenter: a, ip: 10.0.1.1, interface: eth1}
                  - {rank: 1, datacenter: a, ip: 10.0.1.2, interface: eth1}
                  - {rank: 2, datacenter: b, ip: "fd00:b::1", interface: eth1}
                  - {rank: 3, datacenter: b, ip: "fd00:b::2", interface: eth1}
                """);
        Files.writeString(dir.resolve("corpus.txt"), "text");
    }

    /** xaf worker with {@code args} (and the options every worker needs) in an environment of {@code env}. */
    static WorkerCommand worker(Map<String, String> env, String... args) {
        WorkerCommand w = new WorkerCommand();
        w.environment = env;
        List<String> all = new ArrayList<>(List.of("--token", "0x1234", "--data", dir.resolve("corpus.txt").toString(),
                "--checkpoint-dir", dir.resolve("ckpt").toString(), "--wire-security", "crc32c"));
        all.addAll(List.of(args));
        new CommandLine(w).parseArgs(all.toArray(String[]::new));
        return w;
    }

    static WorkerOptions options(Map<String, String> env, String... args) throws Exception {
        WorkerCommand w = worker(env, args);
        return w.options(w.identity());
    }

    @Test
    void torchrunsVariablesGiveRankAndWorldAndTheClusterFileTheRest() throws Exception {
        WorkerOptions o = options(Map.of("RANK", "2", "WORLD_SIZE", "4", "LOCAL_RANK", "0", "MASTER_ADDR", "10.0.1.1",
                "MASTER_PORT", "29500"), "--interface", "eth1", "--cluster", cluster.toString());
        assertEquals(2, o.rank());
        assertEquals(4, o.join().worldSize());
        assertEquals(7, o.join().jobId(), "the cluster file's job");
        assertEquals(NetworkForm.IPV6, o.join().form(), "rank 2's data center is on ipv6 in the cluster file");
        assertEquals("eth1", o.join().iface());

        o = options(Map.of("RANK", "1"), "--interface", "eth1", "--cluster", cluster.toString());
        assertEquals(4, o.join().worldSize(), "the cluster file's number of ranks");
        assertEquals(NetworkForm.IPV4, o.join().form());
    }

    @Test
    void optionsGivenWinOverTheEnvironment() throws Exception {
        WorkerOptions o = options(Map.of("RANK", "2", "WORLD_SIZE", "8"), "--rank", "1", "--world", "4", "--job", "7",
                "--form", "ipv4", "--interface", "eth1", "--cluster", cluster.toString());
        assertEquals(1, o.rank());
        assertEquals(4, o.join().worldSize());
        assertEquals(NetworkForm.IPV4, o.join().form());
    }

    @Test
    void flowsDefaultToOneAndABadCountIsRefused() throws Exception {
        assertEquals(1, options(Map.of("RANK", "1"), "--interface", "eth1", "--cluster", cluster.toString()).join().flows());
        assertEquals(4, options(Map.of("RANK", "1"), "--interface", "eth1", "--cluster", cluster.toString(),
                "--flows", "4").join().flows());
        var e = assertThrows(IllegalArgumentException.class, () -> options(Map.of("RANK", "1"), "--interface", "eth1",
                "--cluster", cluster.toString(), "--flows", "0"));
        assertEquals("--flows must be 1 to 64, was 0", e.getMessage());
    }

    @Test
    void localRankPicksTheInterfaceOfAList() throws Exception {
        WorkerOptions o = options(Map.of("RANK", "3", "LOCAL_RANK", "1"), "--interface", "eth1,eth2",
                "--cluster", cluster.toString());
        assertEquals("eth2", o.join().iface());
        var e = assertThrows(IllegalArgumentException.class, () -> options(Map.of("RANK", "3"), "--interface", "eth1,eth2",
                "--cluster", cluster.toString()));
        assertTrue(e.getMessage().contains("LOCAL_RANK"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> options(Map.of("RANK", "3", "LOCAL_RANK", "2"),
                "--interface", "eth1,eth2", "--cluster", cluster.toString()));
        assertTrue(e.getMessage().contains("LOCAL_RANK=2"), e.getMessage());
    }

    @Test
    void theClusterFilesTrainingSectionGivesTheJobsSettingsAndTheCommandLineWins() throws Exception {
        Path withTraining = dir.resolve("cluster-training.yaml");
        Files.writeString(withTraining, Files.readString(cluster) + """
                training: {preset: tiny, steps: 7, lr: 0.01, batch: 4, data: %s, checksum-every: 3, wire-security: encrypt}
                """.formatted(dir.resolve("corpus.txt")));
        Path secret = dir.resolve("job.secret");
        if (!Files.exists(secret)) io.xaforward.transport.JobSecret.generate().writeTo(secret);
        WorkerCommand w = new WorkerCommand();
        w.environment = Map.of("RANK", "1");
        new CommandLine(w).parseArgs("--token", "0x1234", "--checkpoint-dir", dir.resolve("ckpt").toString(),
                "--interface", "eth1", "--cluster", withTraining.toString(), "--steps", "5", "--data-root", dir.toString(),
                "--secret-file", secret.toString());
        w.applyClusterTraining();
        WorkerOptions o = w.options(w.identity());
        assertEquals("tiny", o.trainer().preset());
        assertEquals(5, o.trainer().steps(), "the command line wins");
        assertEquals(0.01, o.trainer().learningRate());
        assertEquals(4, o.trainer().globalBatch());
        assertEquals(3, o.checksumEvery());
        assertEquals(dir.resolve("corpus.txt"), o.data());
        assertEquals("encrypt", o.join().wireSecurity().configName(), "a stronger mode than the default is taken");
        assertEquals(1234, o.trainer().seed(), "not in the file: the default");

        Path typo = dir.resolve("cluster-typo.yaml");
        Files.writeString(typo, Files.readString(cluster) + "training: {presets: tiny}\n");
        WorkerCommand bad = worker(Map.of("RANK", "1"), "--interface", "eth1", "--cluster", typo.toString());
        var e = assertThrows(IllegalArgumentException.class, bad::applyClusterTraining);
        assertTrue(e.getMessage().contains(typo + ": training.presets is not a job setting"), e.getMessage());

        Path badValue = dir.resolve("cluster-bad-value.yaml");
        Files.writeString(badValue, Files.readString(cluster) + "training: {steps: many}\n");
        WorkerCommand worse = worker(Map.of("RANK", "1"), "--interface", "eth1", "--cluster", badValue.toString());
        e = assertThrows(IllegalArgumentException.class, worse::applyClusterTraining);
        assertTrue(e.getMessage().contains(badValue + ": training:") && e.getMessage().contains("many"), e.getMessage());
    }

    @Test
    void etcdKeepsTheJobsSettingsForEveryRank() throws Exception {
        try (io.xaforward.common.LocalEtcd etcd = io.xaforward.common.LocalEtcd.start();
             io.xaforward.common.EtcdClient client = new io.xaforward.common.EtcdClient(etcd.clientUrl(),
                     java.time.Duration.ofSeconds(5))) {
            String key = io.xaforward.cluster.rendezvous.EtcdRendezvous.trainingKey(7);
            client.put(key, "{preset: tiny, steps: 9, lr: 1e-2, data: " + dir.resolve("corpus.txt") + "}", 0);
            WorkerCommand w = new WorkerCommand();
            w.environment = Map.of("RANK", "1", "WORLD_SIZE", "2");
            new CommandLine(w).parseArgs("--token", "0x1234", "--checkpoint-dir", dir.resolve("ckpt").toString(),
                    "--wire-security", "crc32c", "--interface", "eth1", "--etcd", etcd.clientUrl().toString(), "--job", "7",
                    "--form", "ipv4", "--lr", "0.02", "--data-root", dir.toString());
            w.applyEtcdTraining();
            WorkerOptions o = w.options(w.identity());
            assertEquals("tiny", o.trainer().preset());
            assertEquals(9, o.trainer().steps());
            assertEquals(0.02, o.trainer().learningRate(), "the command line wins");
            assertEquals(dir.resolve("corpus.txt"), o.data());

            client.put(key, "{preset: tiny, rank: 3}", 0);
            WorkerCommand bad = worker(Map.of("RANK", "1", "WORLD_SIZE", "2"), "--interface", "eth1", "--etcd",
                    etcd.clientUrl().toString(), "--job", "7", "--form", "ipv4");
            var e = assertThrows(IllegalArgumentException.class, bad::applyEtcdTraining);
            assertTrue(e.getMessage().contains(key + ": training.rank is not a job setting"), e.getMessage());
        }
    }

    @Test
    void withEtcdAndNoRankTheRendezvousAssignsItAndRankIsStillHonoured() throws Exception {
        String[] etcd = {"--job", "7", "--world", "4", "--interface", "eth1", "--etcd", "http://127.0.0.1:1", "--form", "ipv4"};
        assertEquals(RankIdentity.ASSIGNED, worker(Map.of(), etcd).identity().rank(), "no --rank, no RANK: assigned");
        assertEquals(3, worker(Map.of("RANK", "3"), etcd).identity().rank(), "torchrun's RANK");
        var e = assertThrows(IllegalArgumentException.class, () -> worker(Map.of("RANK", "4"), etcd).identity());
        assertTrue(e.getMessage().contains("RANK must be 0..3, was 4"), e.getMessage());
    }

    @Test
    void aKubernetesIndexedJobsPodIndexIsTheRankWhenNeitherRankNorRANKIsGiven() throws Exception {
        String[] etcd = {"--job", "7", "--interface", "eth1", "--etcd", "http://127.0.0.1:1", "--form", "ipv4"};
        RankIdentity id = worker(Map.of("JOB_COMPLETION_INDEX", "2", "WORLD_SIZE", "4"), etcd).identity();
        assertEquals(2, id.rank(), "the pod index of an Indexed Job");
        assertEquals(4, id.world());
        assertEquals(1, worker(Map.of("JOB_COMPLETION_INDEX", "2", "RANK", "1", "WORLD_SIZE", "4"), etcd).identity().rank(),
                "torchrun's RANK comes first");
        assertEquals(0, worker(Map.of("JOB_COMPLETION_INDEX", "2", "WORLD_SIZE", "4"), add(etcd, "--rank", "0"))
                .identity().rank(), "--rank wins");
        assertEquals(3, options(Map.of("JOB_COMPLETION_INDEX", "3"), "--interface", "eth1", "--cluster", cluster.toString())
                .rank(), "with a cluster file as well");
        var e = assertThrows(IllegalArgumentException.class,
                () -> worker(Map.of("JOB_COMPLETION_INDEX", "4", "WORLD_SIZE", "4"), etcd).identity());
        assertEquals("JOB_COMPLETION_INDEX must be 0..3, was 4", e.getMessage(), "the variable that gave the rank is named");
        e = assertThrows(IllegalArgumentException.class,
                () -> worker(Map.of("JOB_COMPLETION_INDEX", "x", "WORLD_SIZE", "4"), etcd).identity());
        assertTrue(e.getMessage().contains("JOB_COMPLETION_INDEX='x' is not a number"), e.getMessage());
    }

    private static String[] add(String[] args, String... more) {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of(more));
        return all.toArray(String[]::new);
    }

    @Test
    void whatIsMissingOrWrongIsNamed() {
        var e = assertThrows(IllegalArgumentException.class, () -> options(Map.of(), "--interface", "eth1",
                "--cluster", cluster.toString()));
        assertTrue(e.getMessage().contains("--rank N or RANK or "), e.getMessage());
        assertTrue(e.getMessage().contains(" or JOB_COMPLETION_INDEX (a cluster file names each rank's host"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> options(Map.of("RANK", "two"), "--interface", "eth1",
                "--cluster", cluster.toString()));
        assertTrue(e.getMessage().contains("RANK='two'"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> options(Map.of("RANK", "4"), "--interface", "eth1",
                "--cluster", cluster.toString()));
        assertTrue(e.getMessage().contains("RANK must be 0..3, was 4"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> options(Map.of("RANK", "0", "WORLD_SIZE", "2"),
                "--interface", "eth1", "--etcd", "http://127.0.0.1:1", "--form", "ipv4"));
        assertTrue(e.getMessage().contains("--job ID"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> options(Map.of("RANK", "0"), "--job", "7",
                "--interface", "eth1", "--etcd", "http://127.0.0.1:1", "--form", "ipv4"));
        assertTrue(e.getMessage().contains("--world N or WORLD_SIZE"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> options(Map.of("RANK", "0", "WORLD_SIZE", "2"), "--job", "7",
                "--interface", "eth1", "--etcd", "http://127.0.0.1:1"));
        assertTrue(e.getMessage().contains("--form"), e.getMessage());
    }

    /** What srun sets for task 2 of 4 of Slurm job 70001, the second task on its node. */
    static final Map<String, String> SRUN = Map.of("SLURM_PROCID", "2", "SLURM_NTASKS", "4", "SLURM_LOCALID", "1",
            "SLURM_JOB_ID", "70001", "SLURM_JOB_NODELIST", "gpu[07-09]");

    @Test
    void slurmsVariablesGiveRankWorldLocalRankAndJobAfterTorchrunsAndTheOptions() throws Exception {
        String[] etcd = {"--interface", "eth1,eth2", "--etcd", "http://127.0.0.1:1", "--form", "ipv4"};
        WorkerCommand w = worker(SRUN, etcd);
        w.jobFromSlurm();
        WorkerOptions o = w.options(w.identity());
        assertEquals(2, o.rank(), "SLURM_PROCID");
        assertEquals(4, o.join().worldSize(), "SLURM_NTASKS");
        assertEquals("eth2", o.join().iface(), "SLURM_LOCALID picks the interface");
        assertEquals(70001 - 65535, o.join().jobId(), "SLURM_JOB_ID folded into 1..65535");

        // torchrun inside an allocation: its variables describe the worker, Slurm's the torchrun task
        Map<String, String> both = new java.util.HashMap<>(SRUN);
        both.putAll(Map.of("RANK", "5", "WORLD_SIZE", "8", "LOCAL_RANK", "0"));
        o = options(both, "--job", "7", "--interface", "eth1,eth2", "--etcd", "http://127.0.0.1:1", "--form", "ipv4");
        assertEquals(5, o.rank());
        assertEquals(8, o.join().worldSize());
        assertEquals("eth1", o.join().iface());

        // options win; a cluster file's job wins over Slurm's (its gateways' routes are written for it)
        o = options(SRUN, "--rank", "1", "--world", "2", "--job", "9", "--interface", "eth1", "--etcd",
                "http://127.0.0.1:1", "--form", "ipv4");
        assertEquals(List.of(1, 2, 9), List.of(o.rank(), o.join().worldSize(), o.join().jobId()));
        w = worker(SRUN, "--interface", "eth1", "--cluster", cluster.toString());
        w.jobFromSlurm();
        o = w.options(w.identity());
        assertEquals(List.of(2, 4, 7), List.of(o.rank(), o.join().worldSize(), o.join().jobId()));
        assertEquals(NetworkForm.IPV6, o.join().form(), "rank 2's data center in the cluster file");

        var e = assertThrows(IllegalArgumentException.class, () -> options(Map.of("SLURM_PROCID", "4", "SLURM_NTASKS", "4"),
                "--job", "7", "--interface", "eth1", "--etcd", "http://127.0.0.1:1", "--form", "ipv4"));
        assertTrue(e.getMessage().contains("SLURM_PROCID must be 0..3, was 4"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> options(Map.of("SLURM_PROCID", "1", "SLURM_NTASKS", "4",
                "SLURM_LOCALID", "2"), "--job", "7", "--interface", "eth1,eth2", "--etcd", "http://127.0.0.1:1", "--form", "ipv4"));
        assertTrue(e.getMessage().contains("SLURM_LOCALID=2 but --interface lists 2 interfaces"), e.getMessage());
        assertEquals(1, io.xaforward.cluster.deploy.SchedulerEnvironment.foldJob(65536));
        assertEquals(65535, io.xaforward.cluster.deploy.SchedulerEnvironment.foldJob(65535));
    }

    @Test
    void etcdOnTheFirstNodeOfTheAllocationIsFoundWithSlurmsScontrol(@TempDir Path tmp) throws Exception {
        // scontrol expands host lists from the cluster's slurm.conf; a minimal one is enough for that
        Path conf = tmp.resolve("slurm.conf");
        Files.writeString(conf, "ClusterName=x\nSlurmctldHost=localhost\nNodeName=localhost CPUs=1\nPartitionName=p Nodes=localhost\n");
        Map<String, String> env = new java.util.HashMap<>(SRUN);
        env.put("SLURM_CONF", conf.toString());
        WorkerCommand w = worker(env, "--interface", "eth1", "--etcd-first-node", "2379", "--form", "ipv4");
        java.io.ByteArrayOutputStream said = new java.io.ByteArrayOutputStream();
        w.log = new java.io.PrintStream(said, true);
        w.resolveFirstNodeEtcd();
        assertEquals(java.net.URI.create("http://gpu07:2379"), w.join.peers.etcd);
        assertTrue(said.toString().contains("etcd on the allocation's first node, http://gpu07:2379"), said.toString());

        WorkerCommand outside = worker(Map.of(), "--interface", "eth1", "--etcd-first-node", "2379", "--form", "ipv4");
        var e = assertThrows(IllegalArgumentException.class, outside::resolveFirstNodeEtcd);
        assertTrue(e.getMessage().contains("SLURM_JOB_NODELIST is not set"), e.getMessage());

        // xaf agent shares the option (JoinOptions) and resolves it the same way, before it joins
        AgentCommand agent = new AgentCommand();
        agent.environment = Map.of();
        new CommandLine(agent).parseArgs("--job", "7", "--world", "2", "--interface", "eth1", "--etcd-first-node", "2379",
                "--form", "ipv4", "--token", "1", "--wire-security", "crc32c", "--datacenter", "a", "--gateway", "10.0.0.1");
        e = assertThrows(IllegalArgumentException.class, agent::call);
        assertTrue(e.getMessage().contains("SLURM_JOB_NODELIST is not set"), e.getMessage());
    }

    @Test
    void xafLaunchUnderSlurmNeedsTheWorldSize() {
        LaunchCommand launch = new LaunchCommand();
        new CommandLine(launch).parseArgs("--local-ranks", "0,1", "--", "--job", "7", "--interface", "eth1");
        var e = assertThrows(IllegalArgumentException.class, () -> launch.checkSlurmWorld(Map.of("SLURM_PROCID", "0",
                "SLURM_NTASKS", "2")));
        assertTrue(e.getMessage().contains("SLURM_NTASKS (2) counts the launchers"), e.getMessage());
        launch.checkSlurmWorld(Map.of()); // not under Slurm: nothing to check
        LaunchCommand withWorld = new LaunchCommand();
        new CommandLine(withWorld).parseArgs("--local-ranks", "0,1", "--", "--world", "4", "--interface", "eth1");
        withWorld.checkSlurmWorld(Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "2"));
    }
}
