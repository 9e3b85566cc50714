package io.xaforward.cli;

import io.xaforward.cluster.WorkerLine;
import io.xaforward.cluster.agent.PrivateDirectory;
import io.xaforward.cluster.deploy.Launcher;
import io.xaforward.cluster.deploy.SchedulerEnvironment;
import io.xaforward.cluster.python.PythonSetup;
import io.xaforward.cluster.python.RankPair;
import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.WireSecurity;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/** {@code xaf launch}: the local ranks of one host, supervised and restarted from checkpoints. */
@Command(name = "launch", mixinStandardHelpOptions = true,
        description = {"Start the local ranks of one host as xaf worker processes and supervise them.",
                "When a rank fails, the local ranks restart from the newest common checkpoint (--max-restarts).",
                "Everything after -- goes to every xaf worker: the worker options without --rank (xaf worker --help,"
                        + " docs/DEPLOY.md)."},
        footerHeading = "%nExample:%n",
        footer = {"  xaf launch --local-ranks 0,1 --interfaces eth1,eth2 --max-restarts 1 -- \\",
                "      --job 7 --world 4 --interface eth1 --form ipv4 \\",
                "      --token-file /etc/xaf/job7.token --secret-file /etc/xaf/job7.secret \\",
                "      --cluster cluster.yaml --data corpus.txt --steps 1000 \\",
                "      --checkpoint-dir /var/lib/xaf/job7"})
final class LaunchCommand implements Callable<Integer> {
    @Option(paramLabel = "LIST", hideParamSyntax = true, names = "--local-ranks", required = true, split = ",", description = "ranks to run on this host")
    List<Integer> ranks;

    @Option(paramLabel = "LIST", hideParamSyntax = true, names = "--interfaces", split = ",", description = "one interface per local rank (default: the worker's --interface)")
    List<String> interfaces;

    @Option(paramLabel = "N", names = "--max-restarts", defaultValue = "0", description = "restarts of the local ranks after a failure (default: ${DEFAULT-VALUE})")
    int maxRestarts;

    @Option(paramLabel = "SECONDS", names = "--restart-delay", defaultValue = "0",
            description = "seconds to wait before a restart; at least the workers' --op-timeout plus a margin, so every rank of the old run has failed (default: --op-timeout + 5)")
    long restartDelaySeconds;

    @Option(paramLabel = "SCRIPT", names = "--python", description = "run a PyTorch script that uses xaforward.torch: per local rank an"
            + " xaf agent (given the worker options) and the script beside it, with /usr/bin/python3 (or $XAF_PYTHON); the"
            + " script's arguments follow a second -- (docs/PYTORCH.md)")
    Path python;

    @Parameters(paramLabel = "WORKER-OPTIONS", description = "options passed to every xaf worker (with --python: every xaf agent)")
    List<String> workerArgs = new ArrayList<>();

    /**
     * The options of the workers' (or with --python the agents') command line that launch itself reads, with their
     * values there or the defaults xaf worker (xaf agent) declares: read through that command's own options, so the
     * words mean what they will mean to the worker. Options launch does not read are left for the worker to judge.
     */
    private DetachedOptions workerOptions() {
        Object command = python != null ? new AgentCommand() : new WorkerCommand();
        DetachedOptions options = new DetachedOptions(new CommandLine(command).getCommandSpec(),
                o -> LAUNCH_READS.contains(o.longestName())).ignoringOthers();
        try {
            return options.parse(workerArgs);
        } catch (CommandLine.ParameterException e) {
            // A word that names nothing is its enum's one line, as when the worker reads it.
            Words.BadWord bad = Words.badWord(e);
            throw new IllegalArgumentException(bad != null ? bad.getMessage() : e.getMessage(), e);
        }
    }

    /** The worker options launch reads: to refuse --rank, to write a secret, for timeouts and the world size. */
    private static final Set<String> LAUNCH_READS = Set.of("--rank", "--world", "--cluster", "--wire-security",
            "--secret-file", "--checkpoint-dir", "--op-timeout", "--start-timeout");

    @Override
    public Integer call() throws Exception {
        if (python != null) return launchScript();
        DetachedOptions worker = workerOptions();
        if (worker.given("--rank")) throw new IllegalArgumentException("give the ranks with --local-ranks, not --rank");
        checkSlurmWorld(System.getenv());
        if (interfaces != null && interfaces.size() != ranks.size()) {
            throw new IllegalArgumentException("--interfaces needs one interface per local rank (" + ranks.size() + ")");
        }
        provideSecret();
        long delay = restartDelaySeconds > 0 ? restartDelaySeconds : worker.<Long>value("--op-timeout") + 5;
        Launcher.Spec spec = new Launcher.Spec(ranks, rank -> command(rank), maxRestarts, Duration.ofSeconds(delay));
        return new Launcher(spec, System.out).run();
    }

    /**
     * One xaf launch per node under srun is one Slurm task per node, so SLURM_NTASKS, which the workers would take as
     * their world size, counts the launchers, not the ranks: the world size must then be given.
     */
    void checkSlurmWorld(Map<String, String> environment) {
        var env = new SchedulerEnvironment(environment);
        if (env.slurmTask() && !workerOptions().given("--world") && environment.get("WORLD_SIZE") == null) {
            throw new IllegalArgumentException("xaf launch under Slurm: give the job's number of ranks, --world N, after"
                    + " --: SLURM_NTASKS (" + environment.get("SLURM_NTASKS") + ") counts the launchers, not their ranks");
        }
    }

    /**
     * With an authenticated wire security and no --secret-file, the workers get a secret file in their checkpoint
     * directory: generated once, kept for restarts and later launches (the other hosts hold copies of it).
     */
    void provideSecret() throws IOException {
        DetachedOptions worker = workerOptions();
        WireSecurity security = worker.value("--wire-security");
        Path dir = python != null ? null : worker.value("--checkpoint-dir"); // an agent keeps no checkpoints
        if (!security.authenticated() || worker.given("--secret-file") || dir == null) return;
        Path file = dir.resolve("job.secret").toAbsolutePath(); // as the worker will
        if (Files.isRegularFile(file)) {
            System.out.printf("xaf launch: using the job secret in %s%n", file);
        } else {
            JobSecret.generate().writeTo(file);
            System.out.printf("xaf launch: wrote a new job secret to %s (mode 600)%n", file);
        }
        System.out.println("xaf launch: every other host of the job needs the same file: copy it there (scp -p) and pass"
                + " --secret-file to its xaf launch or xaf worker");
        workerArgs.addAll(List.of("--secret-file", file.toString()));
    }

    List<String> command(int rank) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC", "-Dai.djl.offline=true",
                "-cp", System.getProperty("java.class.path"), Main.class.getName(), "worker"));
        cmd.addAll(workerArgs);
        cmd.addAll(List.of("--rank", Integer.toString(rank)));
        if (interfaces != null) {
            int i = cmd.indexOf("--interface");
            if (i >= 0) cmd.subList(i, i + 2).clear();
            cmd.addAll(List.of("--interface", interfaces.get(ranks.indexOf(rank))));
        }
        return cmd;
    }

    /** The command that runs {@code xaf agent} with {@code options}: this JVM's java, class path and main class. */
    static List<String> agentCommand(List<String> options) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC",
                "-cp", System.getProperty("java.class.path"), Main.class.getName(), "agent"));
        cmd.addAll(options);
        return cmd;
    }

    /**
     * {@code xaf launch --python}: per local rank an agent with the worker options (as {@code xaf worker} would get
     * them) and the script beside it, supervised in pairs; the first failure gives the other local ranks the agents'
     * operation timeout to fail on their own, then stops them.
     */
    int launchScript() throws Exception {
        int split = workerArgs.indexOf("--");
        List<String> scriptArgs = split < 0 ? List.of() : List.copyOf(workerArgs.subList(split + 1, workerArgs.size()));
        if (split >= 0) workerArgs = new ArrayList<>(workerArgs.subList(0, split));
        DetachedOptions agent = workerOptions();
        if (agent.given("--rank")) throw new IllegalArgumentException("give the ranks with --local-ranks, not --rank");
        if (maxRestarts > 0) throw new IllegalArgumentException("--max-restarts needs checkpoints xaf writes; a --python script"
                + " keeps its own: restart it with its own resume option");
        if (interfaces != null && interfaces.size() != ranks.size()) {
            throw new IllegalArgumentException("--interfaces needs one interface per local rank (" + ranks.size() + ")");
        }
        Path script = UserPaths.requireFile(UserPaths.resolve(python.toString()), "--python script");
        provideSecret();
        int world = worldSize(agent);
        Path sockets = PrivateDirectory.create("xaf-launch-"); // the agents' sockets and logs, this user's alone
        List<RankPair> pairs = new ArrayList<>();
        Thread hook = new Thread(() -> pairs.forEach(RankPair::stop), "xaf-launch-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            for (int i = 0; i < ranks.size(); i++) {
                int rank = ranks.get(i);
                Path socket = sockets.resolve("rank-" + rank + ".sock");
                var pair = new RankPair(rank, socket, sockets.resolve("agent-" + rank + ".log"));
                List<String> options = new ArrayList<>(command(rank));
                options.subList(0, options.indexOf("worker") + 1).clear(); // the worker's options alone
                options.addAll(List.of("--socket", socket.toString(), "--local-rank", Integer.toString(i)));
                pairs.add(pair);
                pair.startAgent(agentCommand(options));
                System.out.println(WorkerLine.format("launched", "rank", rank, "agent_log", sockets.resolve("agent-" + rank + ".log")));
            }
            var env = System.getenv();
            for (int i = 0; i < pairs.size(); i++) {
                var pair = pairs.get(i);
                List<String> cmd = new ArrayList<>(List.of(PythonSetup.interpreter(env), script.toString()));
                cmd.addAll(scriptArgs);
                pair.startScript(cmd, UserPaths.workingDirectory(),
                        PythonSetup.scriptEnvironment(env, pair.rank(), world, i, pairs.size(),
                                sockets.resolve("rank-" + pair.rank() + ".sock")),
                        Duration.ofSeconds(agent.<Long>value("--start-timeout")), line -> {
                            synchronized (System.out) {
                                System.out.println("[rank " + pair.rank() + "] " + line);
                            }
                        });
            }
            Duration grace = Duration.ofSeconds(agent.<Long>value("--op-timeout")).plus(RankPair.AGENT_GRACE).plusSeconds(30);
            var exits = RankPair.awaitAll(pairs, grace, System.out);
            return exits.stream().allMatch(RankPair.Exit::ok) ? 0 : 1;
        } finally {
            pairs.forEach(RankPair::stop);
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException ignored) {
                // shutting down
            }
        }
    }

    /** The job's number of ranks, for the scripts' WORLD_SIZE: --world, else $WORLD_SIZE, else the cluster file's. */
    private static int worldSize(DetachedOptions agent) {
        Integer world = agent.value("--world");
        if (world != null) return world;
        String env = System.getenv("WORLD_SIZE");
        if (env != null && !env.isBlank()) return Integer.parseInt(env.strip());
        Path cluster = agent.value("--cluster");
        if (cluster != null) return ClusterFile.read(cluster).worldSize();
        throw new IllegalArgumentException("give the number of ranks: --world N among the worker options (or a --cluster file)");
    }
}
