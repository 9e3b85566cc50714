package io.xaforward.cli;

import io.xaforward.cluster.CollectiveSettings;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.deploy.JoinSpec;
import io.xaforward.cluster.deploy.RankIdentity;
import io.xaforward.cluster.deploy.SchedulerEnvironment;
import io.xaforward.cluster.deploy.WorldSource;
import io.xaforward.cluster.rendezvous.EtcdRendezvous;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.WireSecurity;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * How one rank joins a job on real hosts, the options {@code xaf worker} and {@code xaf agent} share (a picocli
 * mixin of both, each option declared here once, so they cannot drift apart; {@code xaf launch} reads those it needs
 * through the same declarations): who the rank is (job, world, rank, interface, form; resolved by
 * {@link RankIdentity} with the scheduler's variables and the cluster file), the job token, where the peers come from
 * (a cluster file, or an etcd rendezvous with etcd's TLS options and this host's site), the wire security with its
 * secret, the timeouts, the flows and the collective settings ({@link CollectiveOptions}). {@link #spec} makes them
 * one {@link JoinSpec}.
 */
final class JoinOptions {
    @Option(paramLabel = "ID", names = "--job", description = "job id, 1..65535 (default: the cluster file's job, else under Slurm $SLURM_JOB_ID folded into 1..65535; with --etcd, one of them is required)")
    Integer job;

    @Option(paramLabel = "N", names = "--world", description = "number of ranks in the job (default: $WORLD_SIZE, else $SLURM_NTASKS, else the cluster file's number of ranks; with --etcd, one of them is required)")
    Integer world;

    @Option(paramLabel = "N", names = "--rank", description = "this process's rank, 0..world-1 (default: $RANK, else $SLURM_PROCID, else $JOB_COMPLETION_INDEX, a Kubernetes Indexed Job's pod index; with a cluster file one of them is required; with --etcd and none, the rendezvous assigns the lowest free rank)")
    Integer rank;

    @Option(paramLabel = "IFACE", names = "--interface", required = true, description = "the interface this rank sends on; a comma-separated list names one per local rank and $LOCAL_RANK (else $SLURM_LOCALID) picks it")
    String iface;

    @Option(paramLabel = "FORM", names = "--form", converter = Words.NetworkFormWord.class, description = "network form of this host's data center: ipv4, ipv6 or id (default: the cluster file's, for this rank; with --etcd, required)")
    NetworkForm form;

    @ArgGroup(exclusive = true, multiplicity = "1")
    TokenSource token;

    static final class TokenSource {
        @Option(paramLabel = "TOKEN", names = "--token", description = "the job token (decimal or 0x hex)")
        String value;

        @Option(paramLabel = "FILE", names = "--token-file", description = "file holding the job token (decimal or 0x hex)")
        Path file;

        int resolve() throws IOException {
            String text = value != null ? value : Files.readString(file).trim();
            return parseToken(text);
        }
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Peers peers;

    static final class Peers {
        @Option(names = "--cluster", paramLabel = "FILE", description = "cluster file (YAML): ranks, addresses, gateways")
        Path cluster;

        @Option(names = "--etcd", paramLabel = "URL", description = "etcd endpoint of the rendezvous, e.g. https://10.0.0.5:2379 (TLS and credentials: --etcd-ca, --etcd-cert, --etcd-key, --etcd-user)")
        URI etcd;

        @Option(names = "--etcd-first-node", paramLabel = "PORT", description = "under Slurm: the rendezvous is the etcd the job file started on the first node of the allocation (scontrol show hostnames $SLURM_JOB_NODELIST), at this client port; https with --etcd-ca, else http")
        Integer etcdFirstNode;
    }

    @Mixin
    EtcdOptions etcd = new EtcdOptions();

    @Option(paramLabel = "NAME", names = "--datacenter", description = "with --etcd: this host's data center")
    String datacenter;

    @Option(paramLabel = "ADDRESS", names = "--gateway", description = "with --etcd: the gateway port this data center sends to (IP, or MAC on the id form)")
    String gateway;

    @Option(paramLabel = "ID", names = "--identity", defaultValue = "0", description = "with --etcd on the id form: this host's 32-bit identity (default: ${DEFAULT-VALUE})")
    String identity = "0";

    @Option(paramLabel = "SECONDS", names = "--rendezvous-timeout", defaultValue = "300", description = "with --etcd: seconds to wait for every rank to register (default: ${DEFAULT-VALUE})")
    long rendezvousTimeoutSeconds = 300;

    @Option(names = "--wire-security", defaultValue = TrainJobSpec.DEFAULT_WIRE_SECURITY, paramLabel = "MODE",
            converter = Words.WireSecurityWord.class,
            description = "crc32c, mac or encrypt; mac and encrypt need --secret-file; the same on every rank (default: ${DEFAULT-VALUE})")
    WireSecurity wireSecurity = TrainJobSpec.DEFAULT_WIRE;

    @Option(names = "--secret-file", paramLabel = "FILE",
            description = "the job secret (64 hex digits, mode 600), the same file on every host; xaf launch writes one")
    Path secretFile;

    @Option(paramLabel = "SECONDS", names = "--op-timeout", defaultValue = "120", description = "seconds a collective"
            + " (an all-reduce of a training step) waits for a peer before the job fails (default: ${DEFAULT-VALUE})")
    long opTimeoutSeconds = 120;

    @Option(paramLabel = "SECONDS", names = "--start-timeout", defaultValue = "300", description = "seconds to wait for"
            + " every rank to come up (and xaf agent, then for its training process to say hello) (default: ${DEFAULT-VALUE})")
    long startTimeoutSeconds = 300;

    @Option(paramLabel = "N", names = "--flows", defaultValue = "1", description = "UDP flows this rank sends from (its"
            + " port and the ones after it); the same on every rank, with src-port-span N on the gateways' routes (IP"
            + " forms; the id form has no ports) (default: ${DEFAULT-VALUE})")
    int flows = 1;

    /** How the collectives run: --algorithm, --bucket-mb, --wire-dtype, --pacing-mbps. */
    @Mixin
    CollectiveOptions collective = new CollectiveOptions();

    /**
     * How the rank {@code id} joins the job: these options made one spec (the token and secret read, every limit
     * checked there). {@code collective} is the collective settings (a training rank's, with its outer format).
     */
    JoinSpec spec(RankIdentity id, CollectiveSettings collective) throws IOException {
        return new JoinSpec(id, token.resolve(), wireSecurity, secret(), Duration.ofSeconds(opTimeoutSeconds),
                Duration.ofSeconds(startTimeoutSeconds), flows, collective);
    }

    /** {@link #spec(RankIdentity, CollectiveSettings)} with the collective options as they are. */
    JoinSpec spec(RankIdentity id) throws IOException {
        return spec(id, collective.settings());
    }

    /** Who this rank is: {@link RankIdentity#resolve} of these options, the scheduler's variables and the cluster file. */
    RankIdentity identity(Map<String, String> environment) {
        return RankIdentity.resolve(new RankIdentity.Given(job, world, rank, iface, form), peers.cluster,
                new SchedulerEnvironment(environment));
    }

    /** --etcd-first-node: the endpoint of the etcd on the allocation's first node, set as --etcd. */
    void resolveFirstNodeEtcd(Map<String, String> environment, PrintStream log, String who) throws IOException, InterruptedException {
        if (peers == null || peers.etcdFirstNode == null) return;
        int port = peers.etcdFirstNode;
        if (port < 1 || port > 65535) throw new IllegalArgumentException("--etcd-first-node must be a port, 1..65535, was " + port);
        String host = new SchedulerEnvironment(environment).firstNode();
        peers.etcd = URI.create((etcd.ca != null ? "https" : "http") + "://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port);
        log.println(who + ": the rendezvous is etcd on the allocation's first node, " + peers.etcd);
    }

    /**
     * Under Slurm without --job or a cluster file: the job is Slurm's ({@link SchedulerEnvironment#slurmJob}), set
     * before the job's settings are read from etcd (they are kept under the job).
     */
    void jobFromSlurm(Map<String, String> environment, PrintStream log, String who) {
        if (job != null || peers == null || peers.cluster != null) return;
        new SchedulerEnvironment(environment).slurmJob().ifPresent(j -> {
            job = j.value();
            log.println(who + ": job " + job + " from SLURM_JOB_ID=" + environment.get("SLURM_JOB_ID"));
        });
    }

    /** A command's options for one identity (every check of its own made there). */
    @FunctionalInterface
    interface RankOptions<O> {
        O of(RankIdentity id) throws IOException;
    }

    /** What a command runs once it has joined: its options and the peers' source; returns the exit status. */
    @FunctionalInterface
    interface JoinedRank<O> {
        int run(O options, WorldSource peers) throws Exception;
    }

    /**
     * Joins the job as {@code id} and runs {@code rank}: a known rank with the cluster file or the rendezvous as
     * its peers; a rank the rendezvous assigns ({@link RankIdentity#ASSIGNED}) only after every option was checked (as
     * rank 0), claiming one with {@code ranBefore} (the ranks this host ran, read only then) asked for first.
     */
    <O> int join(RankIdentity id, RankOptions<O> options, Callable<Set<Integer>> ranBefore,
                 JoinedRank<O> rank) throws Exception {
        if (id.rank() != RankIdentity.ASSIGNED) {
            O known = options.of(id);
            try (WorldSource source = worldSource()) {
                return rank.run(known, source);
            }
        }
        options.of(id.withRank(0)); // every option checked before a rank is claimed
        try (EtcdRendezvous rendezvous = rendezvous()) {
            RankIdentity claimed = id.withRank(rendezvous.claimRank(id.job(), id.world(), token.resolve(), id.iface(),
                    id.form(), flows, ranBefore.call()));
            return rank.run(options.of(claimed), rendezvous);
        }
    }

    /** The job secret of the authenticated modes; there is no default secret, so a missing file is an error. */
    JobSecret secret() throws IOException {
        if (!wireSecurity.authenticated()) return null;
        if (secretFile == null) {
            throw new IllegalArgumentException("--wire-security " + wireSecurity.configName() + " needs the job secret: give"
                    + " --secret-file FILE (the same file on every host; xaf launch writes one), or --wire-security"
                    + " crc32c for no authentication");
        }
        if (!Files.isRegularFile(secretFile)) {
            throw new IllegalArgumentException("--secret-file " + secretFile + " not found");
        }
        return JobSecret.readFrom(secretFile);
    }

    /** The peers: the cluster file, or the etcd rendezvous. */
    WorldSource worldSource() {
        if (peers.cluster != null) {
            if (etcd.given()) throw new IllegalArgumentException("--etcd-ca, --etcd-cert, --etcd-key, --etcd-user and --etcd-password-file need --etcd URL");
            return WorldSource.clusterFile(peers.cluster);
        }
        return rendezvous();
    }

    EtcdRendezvous rendezvous() {
        if (datacenter == null || gateway == null) {
            throw new IllegalArgumentException("--etcd needs --datacenter and --gateway (the peers learn them from this rank)");
        }
        return new EtcdRendezvous(peers.etcd, etcd.security(), new EtcdRendezvous.Site(datacenter, gateway, parseToken(identity)),
                Duration.ofSeconds(rendezvousTimeoutSeconds), System.err);
    }

    static int parseToken(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        try {
            long v = t.startsWith("0x") ? Long.parseLong(t.substring(2), 16) : Long.parseLong(t);
            if (v < 0 || v > 0xFFFF_FFFFL) throw new NumberFormatException();
            return (int) v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("job token '" + text + "' is not a 32-bit number (decimal or 0x hex)");
        }
    }
}
