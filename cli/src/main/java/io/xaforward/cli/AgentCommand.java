package io.xaforward.cli;

import io.xaforward.cluster.CollectiveSettings;
import io.xaforward.cluster.agent.RankAgent;
import io.xaforward.cluster.deploy.RankIdentity;
import io.xaforward.cluster.deploy.WorkerOptions;
import io.xaforward.collective.Algorithm;
import io.xaforward.collective.WireDtype;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainerConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code xaf agent}: one rank of a job whose training runs in a PyTorch process beside it (docs/PYTORCH.md). It
 * takes the job and identity options of {@code xaf worker} (the same {@link JoinOptions}, resolved by the same code),
 * joins the job, and serves the training process on a Unix socket.
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
    /** Who this rank is, its token, its peers and its wire security, as for xaf worker. */
    @Mixin
    JoinOptions join = new JoinOptions();

    @Option(paramLabel = "SECONDS", names = "--op-timeout", defaultValue = "120", description = "seconds a collective waits for a peer before it fails (default: ${DEFAULT-VALUE})")
    long opTimeoutSeconds = 120;

    @Option(paramLabel = "SECONDS", names = "--start-timeout", defaultValue = "300", description = "seconds to wait for every rank to come up, and then for the training process to say hello (default: ${DEFAULT-VALUE})")
    long startTimeoutSeconds = 300;

    @Option(paramLabel = "N", names = "--flows", defaultValue = "1", description = "UDP flows this rank sends from; the same on every rank (default: ${DEFAULT-VALUE})")
    int flows = 1;

    @Option(paramLabel = "MB", names = "--bucket-mb", defaultValue = "4", description = "all-reduce bucket size in MB on the wire (default: ${DEFAULT-VALUE})")
    long bucketMb = 4;

    @Option(paramLabel = "ALGORITHM", names = "--algorithm", defaultValue = "hierarchical", converter = Words.AlgorithmWord.class,
            description = "hierarchical, ring or ps (default: ${DEFAULT-VALUE})")
    Algorithm algorithm = Algorithm.HIERARCHICAL;

    @Option(paramLabel = "DTYPE", names = "--wire-dtype", defaultValue = "fp32", converter = Words.WireDtypeWord.class,
            description = "all-reduce numbers on the wire: fp32 or bf16; the same on every rank (default: ${DEFAULT-VALUE})")
    WireDtype wireDtype = WireDtype.FP32;

    @Option(paramLabel = "PATH", names = "--socket", description = "the Unix socket the training process connects to (XAF_AGENT_SOCKET), in a directory only this user can enter (mode 0700); printed on the agent line (default: agent.sock in a fresh private directory under $XDG_RUNTIME_DIR, else under the temporary directory)")
    Path socket;

    @Option(paramLabel = "N", names = "--shm-bytes", defaultValue = "268435456", description = "size of the shared tensor segment (a file under /dev/shm, mode 0600, removed at exit); the training process's gradients must fit (default: ${DEFAULT-VALUE}, 256 MiB)")
    long shmBytes = 256L << 20;

    @Option(paramLabel = "N", names = "--local-rank", description = "this rank's index on its host, told to the training process (default: $LOCAL_RANK, else counted from the world)")
    Integer localRank;

    /** Where torchrun's and Slurm's variables are read; tests give their own. */
    Map<String, String> environment = System.getenv();

    /** A worker's options for joining the job; the training fields are unused by the agent and left at neutral values. */
    private WorkerOptions options(RankIdentity id) throws IOException {
        TrainerConfig neutral = TrainerConfig.builder(TrainingLoopOptions.DEFAULT_PRESET).steps(1).globalBatch(1)
                .checkpointDir(Path.of("-")).build();
        return new WorkerOptions(id.job(), id.world(), join.token.resolve(), id.rank(), id.iface(), id.form(), neutral,
                CollectiveSettings.of(algorithm, bucketMb << 20), join.wireSecurity, join.secret(), flows,
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
        join.resolveFirstNodeEtcd(environment, System.err, "xaf agent"); // as xaf worker: the option is theirs alike
        join.secret(); // no secret, no job: said before anything else
        RankAgent.Settings settings = new RankAgent.Settings(socket, shmBytes, localRankSetting(), wireDtype);
        return join.join(join.identity(environment), this::options, flows, Set::of,
                (o, peers) -> new RankAgent(o, settings, System.out).run(peers));
    }
}
