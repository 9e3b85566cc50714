package io.xaforward.cluster.deploy;

import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.cluster.world.World;
import io.xaforward.protocol.NetworkForm;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * Who one rank of a job on real hosts is ({@code xaf worker}, {@code xaf agent}): its job, the job's number of ranks,
 * its rank, the interface it sends on and its data center's network form.
 *
 * <p>{@link #resolve} takes each from the first place that gives it: the command line's option, then torchrun's
 * environment variable, then Slurm's (both read by {@link SchedulerEnvironment}), then the cluster file. The job is the
 * exception: the option, then the cluster file, then Slurm's job id, since a cluster file's job is the one its
 * gateways' routes were written for. With an etcd rendezvous and no rank anywhere, the rank is {@link #ASSIGNED}: the
 * rendezvous assigns one ({@link #withRank}).
 *
 * @param rank  0..world-1, or {@link #ASSIGNED}
 * @param iface the interface this rank sends on (one entry of a list the command line gave, picked by the local rank)
 */
public record RankIdentity(int job, int world, int rank, String iface, NetworkForm form) {
    /** The rank of an identity whose rank the etcd rendezvous assigns (no --rank and no variable giving one). */
    public static final int ASSIGNED = -1;

    /**
     * What the command line gave; null where it gave nothing.
     *
     * @param iface one interface, or a comma-separated list of one per local rank
     */
    public record Given(Integer job, Integer world, Integer rank, String iface, NetworkForm form) {}

    /** This identity with the rank the rendezvous assigned. */
    public RankIdentity withRank(int assigned) {
        return new RankIdentity(job, world, assigned, iface, form);
    }

    /**
     * Resolves {@code given} with the scheduler's variables in {@code env} and the cluster file {@code clusterFile}
     * (null: the peers come from an etcd rendezvous, which has no file to take anything from). Each missing or
     * contradictory setting is one {@link IllegalArgumentException} naming the option or variable to give.
     */
    public static RankIdentity resolve(Given given, Path clusterFile, SchedulerEnvironment env) {
        World file = clusterFile != null ? ClusterFile.read(clusterFile) : null;
        String where = file != null ? "" : " (with --etcd there is no cluster file to take it from)";
        int job;
        if (given.job() != null) job = given.job();
        else if (file != null) job = file.jobId();
        else if (env.slurmJob().isPresent()) job = env.slurmJob().get().value();
        else throw new IllegalArgumentException("give the job id: --job ID" + where);
        Integer world = given.world() != null ? given.world() : env.worldSize().map(SchedulerEnvironment.Value::value).orElse(null);
        if (world == null && file != null) world = file.worldSize();
        if (world == null) throw new IllegalArgumentException("give the number of ranks: --world N or WORLD_SIZE" + where);
        Integer rank = given.rank() != null ? given.rank() : env.rank().map(SchedulerEnvironment.Value::value).orElse(null);
        if (rank == null && file == null) rank = ASSIGNED;
        if (rank == null) {
            throw new IllegalArgumentException("give this worker's rank: --rank N or " + String.join(" or ", SchedulerEnvironment.RANK_VARIABLES)
                    + " (a cluster file names each rank's host; with --etcd instead, the rendezvous can assign ranks)");
        }
        if (rank != ASSIGNED && (rank < 0 || rank >= world)) {
            throw new IllegalArgumentException((given.rank() != null ? "--rank" : env.rank().orElseThrow().variable()) + " must be 0.."
                    + (world - 1) + ", was " + rank);
        }
        NetworkForm form;
        if (given.form() != null) form = given.form();
        else if (file != null) form = file.rank(rank).form();
        else throw new IllegalArgumentException("give this data center's network form: --form ipv4|ipv6|id" + where);
        return new RankIdentity(job, world, rank, localInterface(given.iface(), env), form);
    }

    /** {@code iface}, or with a comma-separated list the entry the local rank ($LOCAL_RANK, else $SLURM_LOCALID) names. */
    public static String localInterface(String iface, SchedulerEnvironment env) {
        if (!iface.contains(",")) return iface;
        List<String> list = Arrays.stream(iface.split(",")).map(String::strip).toList();
        var local = env.localRank().orElseThrow(() -> new IllegalArgumentException("--interface " + iface
                + " lists " + list.size() + " interfaces: LOCAL_RANK picks this worker's (torchrun sets it, as srun"
                + " sets SLURM_LOCALID), or give one interface"));
        if (local.value() >= list.size()) {
            throw new IllegalArgumentException(local.variable() + "=" + local.value() + " but --interface lists "
                    + list.size() + " interfaces");
        }
        return list.get(local.value());
    }
}
