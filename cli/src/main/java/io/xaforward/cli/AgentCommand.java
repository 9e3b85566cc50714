package io.xaforward.cli;

import io.xaforward.cluster.agent.RankAgent;
import io.xaforward.cluster.CollectiveSettings;
import io.xaforward.cluster.deploy.WorkerOptions;
import io.xaforward.cluster.deploy.WorldSource;
import io.xaforward.cluster.rendezvous.EtcdRendezvous;
import io.xaforward.collective.Algorithm;
import io.xaforward.collective.WireDtype;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainerConfig;
import io.xaforward.transport.WireSecurity;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code xaf agent}: one rank of a job whose training runs in a PyTorch process beside it (docs/PYTORCH.md). It
 * takes the job and identity options of {@code xaf worker} (resolved by the same code: a {@link WorkerCommand}
 * filled from these options), joins the job, and serves the training process on a Unix socket.
 */
@Command(name = "agent", mixinStandardHelpOptions = true,
        description = {"Run one rank of a data-parallel job for a PyTorch training process (python/xaforward).",
                "Joins the job as xaf worker does (cluster file or etcd rendezvous, wire security, gateways), then serves"
                        + " one training process on a Unix socket and a shared-memory segment. See docs/PYTORCH.md."},
        footerHeading = "%nExample:%n",
        footer = {"  xaf agent --job 7 --world 4 --rank 2 --interface eth1 \\",
                "      --cluster cluster.yaml --token-file /etc/xaf/job7.token \\",
                "      --secret-file /etc/xaf/job7.secret --socket /run/xaf/rank2.sock",
                "  XAF_AGENT_SOCKET=/run/xaf/rank2.sock RANK=2 WORLD_SIZE=4 \\",
                "      /usr/bin/python3 train.py"})
final class AgentCommand implements Callable<Integer> {
    @Option(paramLabel = "ID", names = "--job", description = "job id, 1..65535 (default: the cluster file's job; with --etcd, required)")
    Integer job;

    @Option(paramLabel = "N", names = "--world", description = "number of ranks (default: $WORLD_SIZE, else the cluster file's)")
    Integer world;

    @Option(paramLabel = "N", names = "--rank", description = "this rank, 0..world-1 (default: $RANK; with --etcd and neither, the rendezvous assigns one)")
    Integer rank;

    @Option(paramLabel = "IFACE", names = "--interface", required = true, description = "the interface this rank sends on; a comma-separated list names one per local rank and $LOCAL_RANK picks it")
    String iface;

    @Option(paramLabel = "FORM", names = "--form", description = "network form of this host's data center: ipv4, ipv6 or id (default: the cluster file's; with --etcd, required)")
    String form;

    @ArgGroup(exclusive = true, multiplicity = "1")
    WorkerCommand.TokenSource token;

    @ArgGroup(exclusive = true, multiplicity = "1")
    WorkerCommand.Peers peers;

    @Mixin
    EtcdOptions etcd = new EtcdOptions();

    @Option(paramLabel = "NAME", names = "--datacenter", description = "with --etcd: this host's data center")
    String datacenter;

    @Option(paramLabel = "ADDRESS", names = "--gateway", description = "with --etcd: the gateway port this data center sends to")
    String gateway;

    @Option(paramLabel = "ID", names = "--identity", defaultValue = "0", description = "with --etcd on the id form: this host's 32-bit identity (default: ${DEFAULT-VALUE})")
    String identity = "0";

    @Option(paramLabel = "SECONDS", names = "--rendezvous-timeout", defaultValue = "300", description = "with --etcd: seconds to wait for every rank to register (default: ${DEFAULT-VALUE})")
    long rendezvousTimeoutSeconds = 300;

    @Option(paramLabel = "SECONDS", names = "--op-timeout", defaultValue = "120", description = "seconds a collective waits for a peer before it fails (default: ${DEFAULT-VALUE})")
    long opTimeoutSeconds = 120;

    @Option(paramLabel = "SECONDS", names = "--start-timeout", defaultValue = "300", description = "seconds to wait for every rank to come up, and then for the training process to say hello (default: ${DEFAULT-VALUE})")
    long startTimeoutSeconds = 300;

    @Option(names = "--wire-security", defaultValue = io.xaforward.cluster.TrainJobSpec.DEFAULT_WIRE_SECURITY, paramLabel = "MODE",
            description = "crc32c, mac or encrypt; mac and encrypt need --secret-file; the same on every rank (default: ${DEFAULT-VALUE})")
    String wireSecurity = io.xaforward.cluster.TrainJobSpec.DEFAULT_WIRE_SECURITY;

    @Option(names = "--secret-file", paramLabel = "FILE", description = "the job secret (64 hex digits, mode 600), the same file on every host")
    Path secretFile;

    @Option(paramLabel = "N", names = "--flows", defaultValue = "1", description = "UDP flows this rank sends from; the same on every rank (default: ${DEFAULT-VALUE})")
    int flows = 1;

    @Option(paramLabel = "MB", names = "--bucket-mb", defaultValue = "4", description = "all-reduce bucket size in MB on the wire (default: ${DEFAULT-VALUE})")
    long bucketMb = 4;

    @Option(paramLabel = "ALGORITHM", names = "--algorithm", defaultValue = "hierarchical", description = "hierarchical, ring or ps (default: ${DEFAULT-VALUE})")
    String algorithm = "hierarchical";

    @Option(paramLabel = "DTYPE", names = "--wire-dtype", defaultValue = "fp32", description = "all-reduce numbers on the wire: fp32 or bf16; the same on every rank (default: ${DEFAULT-VALUE})")
    String wireDtype = "fp32";

    @Option(paramLabel = "PATH", names = "--socket", description = "the Unix socket the training process connects to (XAF_AGENT_SOCKET); printed on the agent line (default: $XDG_RUNTIME_DIR/xaf-agent-jobJ-rankR.sock, else /tmp/xaf-agent-USER-jobJ-rankR.sock)")
    Path socket;

    @Option(paramLabel = "N", names = "--shm-bytes", defaultValue = "268435456", description = "size of the shared tensor segment (a file under /dev/shm, mode 0600, removed at exit); the training process's gradients must fit (default: ${DEFAULT-VALUE}, 256 MiB)")
    long shmBytes = 256L << 20;

    @Option(paramLabel = "N", names = "--local-rank", description = "this rank's index on its host, told to the training process (default: $LOCAL_RANK, else counted from the world)")
    Integer localRank;

    /** Where torchrun's variables are read; tests give their own. */
    java.util.Map<String, String> environment = System.getenv();

    /** The worker command that resolves identity, secret and world exactly as {@code xaf worker} does. */
    private WorkerCommand asWorker() {
        WorkerCommand w = new WorkerCommand();
        w.job = job;
        w.world = world;
        w.rank = rank;
        w.iface = iface;
        w.form = form;
        w.token = token;
        w.peers = peers;
        w.etcd = etcd;
        w.datacenter = datacenter;
        w.gateway = gateway;
        w.identity = identity;
        w.rendezvousTimeoutSeconds = rendezvousTimeoutSeconds;
        w.wireSecurity = wireSecurity;
        w.secretFile = secretFile;
        w.environment = environment;
        return w;
    }

    /** A worker's options for joining the job; the training fields are unused by the agent and left at neutral values. */
    private WorkerOptions options(WorkerCommand w, WorkerCommand.Identity id) throws java.io.IOException {
        WireSecurity mode = WireSecurity.fromName(wireSecurity);
        TrainerConfig neutral = TrainerConfig.builder(TrainingLoopOptions.DEFAULT_PRESET).steps(1).globalBatch(1)
                .checkpointDir(Path.of("-")).build();
        return new WorkerOptions(id.job(), id.world(), token.resolve(), id.rank(), id.iface(), id.form(), neutral,
                CollectiveSettings.of(Algorithm.fromName(algorithm), bucketMb << 20), mode, w.secret(mode), flows,
                Path.of("-"), Tokenizer.byName("bytes"), 0, false, Duration.ofSeconds(opTimeoutSeconds),
                Duration.ofSeconds(startTimeoutSeconds));
    }

    private Integer localRankSetting() {
        if (localRank != null) return localRank;
        String v = environment.get("LOCAL_RANK");
        if (v == null || v.isBlank()) return null;
        try {
            return Integer.parseInt(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("the environment variable LOCAL_RANK='" + v + "' is not a number");
        }
    }

    @Override
    public Integer call() throws Exception {
        if (bucketMb < 1) throw new IllegalArgumentException("--bucket-mb must be at least 1, was " + bucketMb);
        WorkerCommand w = asWorker();
        w.secret(WireSecurity.fromName(wireSecurity)); // no secret, no job: said before anything else
        RankAgent.Settings settings = new RankAgent.Settings(socket, shmBytes, localRankSetting(), WireDtype.fromName(wireDtype));
        WorkerCommand.Identity id = w.identity();
        options(w, id.rank() == WorkerCommand.ASSIGNED ? id.withRank(0) : id); // every option checked first
        if (id.rank() == WorkerCommand.ASSIGNED) {
            try (EtcdRendezvous rendezvous = w.rendezvous()) {
                id = id.withRank(rendezvous.claimRank(id.job(), id.world(), token.resolve(), id.iface(), id.form(), flows, Set.of()));
                return new RankAgent(options(w, id), settings, System.out).run(rendezvous);
            }
        }
        try (WorldSource source = w.worldSource()) {
            return new RankAgent(options(w, id), settings, System.out).run(source);
        }
    }
}
