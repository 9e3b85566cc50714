package io.xaforward.cluster.deploy;

import io.xaforward.protocol.NetworkForm;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Who a rank is, resolved in one place for xaf worker and xaf agent: an option given wins, then torchrun's
 * variables, then Slurm's, then the cluster file (the job: option, cluster file, Slurm's job id); with an etcd
 * rendezvous and no rank anywhere the rendezvous assigns one; whatever is missing or out of range is named.
 */
class RankIdentityTest {
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
    }

    private static RankIdentity resolve(RankIdentity.Given given, Path file, Map<String, String> env) {
        return RankIdentity.resolve(given, file, new SchedulerEnvironment(env));
    }

    private static RankIdentity.Given only(String iface) {
        return new RankIdentity.Given(null, null, null, iface, null);
    }

    @Test
    void optionsWinThenTorchrunThenSlurmThenTheClusterFile() {
        assertEquals(new RankIdentity(7, 4, 2, "eth1", NetworkForm.IPV6),
                resolve(only("eth1"), cluster, Map.of("RANK", "2")), "job, world and form from the cluster file");
        assertEquals(new RankIdentity(9, 2, 1, "eth1", NetworkForm.IPV4),
                resolve(new RankIdentity.Given(9, 2, 1, "eth1", NetworkForm.IPV4), cluster,
                        Map.of("RANK", "0", "WORLD_SIZE", "8", "SLURM_JOB_ID", "70001")), "every option given wins");
        assertEquals(new RankIdentity(7, 8, 5, "eth1", NetworkForm.IPV4),
                resolve(new RankIdentity.Given(7, null, null, "eth1", NetworkForm.IPV4), null,
                        Map.of("RANK", "5", "WORLD_SIZE", "8", "SLURM_PROCID", "2", "SLURM_NTASKS", "4")),
                "torchrun's variables before Slurm's");
        assertEquals(new RankIdentity(70001 - 65535, 4, 2, "eth1", NetworkForm.IPV4),
                resolve(new RankIdentity.Given(null, null, null, "eth1", NetworkForm.IPV4), null,
                        Map.of("SLURM_PROCID", "2", "SLURM_NTASKS", "4", "SLURM_JOB_ID", "70001")), "Slurm's job, folded");
        assertEquals(7, resolve(only("eth1"), cluster, Map.of("SLURM_PROCID", "2", "SLURM_JOB_ID", "70001")).job(),
                "a cluster file's job wins over Slurm's: its gateways' routes are written for it");
        assertEquals(3, resolve(only("eth1"), cluster, Map.of("JOB_COMPLETION_INDEX", "3")).rank(),
                "a Kubernetes Indexed Job's pod index gives the rank last");
    }

    @Test
    void withEtcdAndNoRankTheRendezvousAssignsIt() {
        RankIdentity.Given etcd = new RankIdentity.Given(7, 4, null, "eth1", NetworkForm.IPV4);
        RankIdentity id = resolve(etcd, null, Map.of());
        assertEquals(RankIdentity.ASSIGNED, id.rank());
        assertEquals(new RankIdentity(7, 4, 3, "eth1", NetworkForm.IPV4), id.withRank(3));
    }

    @Test
    void whatIsMissingOrOutOfRangeIsNamed() {
        var e = assertThrows(IllegalArgumentException.class, () -> resolve(only("eth1"), cluster, Map.of()));
        assertEquals("give this worker's rank: --rank N or RANK or SLURM_PROCID or JOB_COMPLETION_INDEX (a cluster file"
                + " names each rank's host; with --etcd instead, the rendezvous can assign ranks)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> resolve(only("eth1"), null, Map.of("RANK", "0")));
        assertEquals("give the job id: --job ID (with --etcd there is no cluster file to take it from)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> resolve(new RankIdentity.Given(7, null, null, "eth1", null), null, Map.of("RANK", "0")));
        assertEquals("give the number of ranks: --world N or WORLD_SIZE (with --etcd there is no cluster file to take it"
                + " from)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> resolve(new RankIdentity.Given(7, 2, 0, "eth1", null), null, Map.of()));
        assertEquals("give this data center's network form: --form ipv4|ipv6|id (with --etcd there is no cluster file"
                + " to take it from)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> resolve(only("eth1"), cluster, Map.of("RANK", "4")));
        assertEquals("RANK must be 0..3, was 4", e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> resolve(new RankIdentity.Given(null, null, 5, "eth1", null), cluster, Map.of()));
        assertEquals("--rank must be 0..3, was 5", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> resolve(only("eth1"), cluster, Map.of("RANK", "two")));
        assertEquals("the environment variable RANK='two' is not a number in 0..2147483647", e.getMessage());
    }

    @Test
    void theLocalRankPicksOneInterfaceOfAList() {
        assertEquals("eth2", RankIdentity.localInterface("eth1, eth2", new SchedulerEnvironment(Map.of("LOCAL_RANK", "1"))));
        assertEquals("eth1", RankIdentity.localInterface("eth1,eth2", new SchedulerEnvironment(Map.of("SLURM_LOCALID", "0"))));
        assertEquals("eth3", RankIdentity.localInterface("eth3", new SchedulerEnvironment(Map.of())), "one interface: no local rank needed");
        var e = assertThrows(IllegalArgumentException.class,
                () -> RankIdentity.localInterface("eth1,eth2", new SchedulerEnvironment(Map.of())));
        assertEquals("--interface eth1,eth2 lists 2 interfaces: LOCAL_RANK picks this worker's (torchrun sets it, as srun"
                + " sets SLURM_LOCALID), or give one interface", e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> RankIdentity.localInterface("eth1,eth2", new SchedulerEnvironment(Map.of("SLURM_LOCALID", "2"))));
        assertEquals("SLURM_LOCALID=2 but --interface lists 2 interfaces", e.getMessage());
    }
}
