package io.xaforward.cluster.deploy;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Who a worker is, as the program that started it says through the environment: torchrun's {@code RANK},
 * {@code WORLD_SIZE} and {@code LOCAL_RANK}, else Slurm's {@code SLURM_PROCID}, {@code SLURM_NTASKS} and
 * {@code SLURM_LOCALID} (what {@code srun} sets for each task), and Slurm's {@code SLURM_JOB_ID} as the job; a
 * Kubernetes Indexed Job's pod index, {@code JOB_COMPLETION_INDEX}, gives the rank last (deploy/kubernetes/workers.yaml
 * runs one rank per index, WORLD_SIZE set in the manifest).
 * torchrun's come first: torchrun started inside a Slurm allocation sets them for each of its processes, while the
 * Slurm variables it inherits describe the torchrun task itself. Options on the command line win over both
 * ({@code xaf worker} resolves that order).
 */
public final class SchedulerEnvironment {
    /** An integer the environment gave, with the variable it came from (for error messages). */
    public record Value(int value, String variable) {}

    private final Map<String, String> environment;

    public SchedulerEnvironment(Map<String, String> environment) {
        this.environment = Map.copyOf(environment);
    }

    /** The variables that give the rank, in the order they are read. */
    public static final List<String> RANK_VARIABLES = List.of("RANK", "SLURM_PROCID", "JOB_COMPLETION_INDEX");

    /** This process's rank: {@code RANK}, else {@code SLURM_PROCID}, else {@code JOB_COMPLETION_INDEX}. */
    public Optional<Value> rank() {
        return first(RANK_VARIABLES.toArray(String[]::new));
    }

    /** The number of ranks: {@code WORLD_SIZE}, else {@code SLURM_NTASKS}. */
    public Optional<Value> worldSize() {
        return first("WORLD_SIZE", "SLURM_NTASKS");
    }

    /** The rank among this host's ranks: {@code LOCAL_RANK}, else {@code SLURM_LOCALID}. */
    public Optional<Value> localRank() {
        return first("LOCAL_RANK", "SLURM_LOCALID");
    }

    /** True inside a Slurm job step (srun sets {@code SLURM_PROCID} for every task). */
    public boolean slurmTask() {
        return present("SLURM_PROCID");
    }

    /**
     * The XAF job id of the Slurm job ({@code SLURM_JOB_ID}): Slurm's ids grow past the 16 bits of a network index
     * identifier's job, so the id is folded into 1..65535 ({@code 1 + (id - 1) % 65535}); two jobs get the same XAF
     * job only when their Slurm ids are a multiple of 65535 apart, far more than run at once on one cluster.
     */
    public Optional<Value> slurmJob() {
        return integer("SLURM_JOB_ID", Long.MAX_VALUE).map(v -> new Value(foldJob(v), "SLURM_JOB_ID"));
    }

    public static int foldJob(long slurmJobId) {
        if (slurmJobId < 1) throw new IllegalArgumentException("SLURM_JOB_ID=" + slurmJobId + " is not a job id");
        return (int) (1 + (slurmJobId - 1) % 0xFFFF);
    }

    /**
     * The first node of the allocation, as {@code scontrol show hostnames $SLURM_JOB_NODELIST} lists it: where the
     * rendezvous's etcd runs when the job file starts it there ({@code xaf worker --etcd-first-node PORT}).
     */
    public String firstNode() throws IOException, InterruptedException {
        String list = environment.get("SLURM_JOB_NODELIST");
        if (list == null || list.isBlank()) {
            throw new IllegalArgumentException("SLURM_JOB_NODELIST is not set: --etcd-first-node works inside a Slurm"
                    + " allocation (sbatch, salloc, srun); elsewhere give --etcd URL");
        }
        return firstHost(list, environment.get("SLURM_CONF"));
    }

    /**
     * The first host of a Slurm host list ({@code node[01-04],gpu7}), expanded by Slurm's own scontrol, which reads
     * the cluster's slurm.conf ({@code slurmConf} when not null, else its default place).
     */
    public static String firstHost(String hostList, String slurmConf) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(List.of("scontrol", "show", "hostnames", hostList)).redirectErrorStream(true);
        if (slurmConf != null) pb.environment().put("SLURM_CONF", slurmConf);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("scontrol show hostnames " + hostList + " did not answer in 30 s");
        }
        List<String> hosts = out.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
        if (p.exitValue() != 0 || hosts.isEmpty()) {
            throw new IOException("scontrol show hostnames " + hostList + " failed (exit " + p.exitValue() + "): " + out.strip());
        }
        return hosts.get(0);
    }

    /** The first of {@code names} that is set, in order (torchrun's before the schedulers'). */
    private Optional<Value> first(String... names) {
        for (String name : names) {
            Optional<Long> v = integer(name, Integer.MAX_VALUE);
            if (v.isPresent()) return v.map(n -> new Value((int) (long) n, name));
        }
        return Optional.empty();
    }

    private boolean present(String name) {
        String v = environment.get(name);
        return v != null && !v.isBlank();
    }

    /** A non-negative integer from the environment, empty when the variable is unset or blank. */
    private Optional<Long> integer(String name, long max) {
        String v = environment.get(name);
        if (v == null || v.isBlank()) return Optional.empty();
        try {
            long n = Long.parseLong(v.strip());
            if (n < 0 || n > max) throw new NumberFormatException();
            return Optional.of(n);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("the environment variable " + name + "='" + v + "' is not a number"
                    + (max < Long.MAX_VALUE ? " in 0.." + max : ""));
        }
    }
}
