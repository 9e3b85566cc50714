package io.xaforward.cli;

import io.xaforward.cluster.agent.RankAgent;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code xaf agent}: one rank of a job whose training runs in a PyTorch process beside it (docs/PYTORCH.md). It
 * takes the options of {@code xaf worker} that say how a rank joins (the same {@link JoinOptions}, made into the same
 * {@link io.xaforward.cluster.deploy.JoinSpec}), joins the job as a worker does, and serves the training process on a Unix socket.
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
    /** Who this rank is, its token, peers, wire security, timeouts, flows and collectives, as for xaf worker. */
    @Mixin
    JoinOptions join = new JoinOptions();

    @Option(paramLabel = "PATH", names = "--socket", description = "the Unix socket the training process connects to (XAF_AGENT_SOCKET), in a directory only this user can enter (mode 0700); printed on the agent line (default: agent.sock in a fresh private directory under $XDG_RUNTIME_DIR, else under the temporary directory)")
    Path socket;

    @Option(paramLabel = "N", names = "--shm-bytes", defaultValue = "268435456", description = "size of the shared tensor segment (a file under /dev/shm, mode 0600, removed at exit); the training process's gradients must fit (default: ${DEFAULT-VALUE}, 256 MiB)")
    long shmBytes = 256L << 20;

    @Option(paramLabel = "N", names = "--local-rank", description = "this rank's index on its host, told to the training process (default: $LOCAL_RANK, else counted from the world)")
    Integer localRank;

    /** Where torchrun's and Slurm's variables are read; tests give their own. */
    Map<String, String> environment = System.getenv();

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
        join.resolveFirstNodeEtcd(environment, System.err, "xaf agent"); // as xaf worker: the option is theirs alike
        join.secret(); // no secret, no job: said before anything else
        RankAgent.Settings settings = new RankAgent.Settings(socket, shmBytes, localRankSetting());
        return join.join(join.identity(environment), join::spec, Set::of,
                (spec, peers) -> new RankAgent(spec, settings, System.out).run(peers));
    }
}
