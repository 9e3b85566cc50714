package io.xaforward.bench.train;

import io.xaforward.cluster.ClusterRun;
import io.xaforward.cluster.RankRuntime;
import io.xaforward.cluster.TrainResult;
import io.xaforward.cluster.WorkerLine;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.TrainingJob;
import io.xaforward.cluster.agent.PrivateDirectory;
import io.xaforward.cluster.python.PythonSetup;
import io.xaforward.cluster.python.RankPair;
import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.training.SyntheticCorpus;
import io.xaforward.training.TokenDataset;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainingData;
import io.xaforward.transport.JobSecret;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * PyTorch over XAForward as a peer of {@code xaf bench train} ({@code --peers pytorch-xaf}): the very script, model,
 * batches and initial weights of the DDP-over-Gloo peer ({@link DdpGlooPeer}), with {@code --backend xaf}:
 * xaforward.torch's DistributedOptimizer talks to an {@code xaf agent} per rank, which all-reduces through the XDP
 * gateway exactly as XAF's Java trainer does (same transport, hierarchical algorithm, 4 MB buckets, wire security).
 * Beside the {@code xaf} row of the same gateway mode, its row shows what the Python side and the agent hop cost on
 * the same gradient; beside {@code ddp-gloo}, how it fares against what a PyTorch user runs today.
 *
 * <p>On its first rank the peer starts every rank's agent (from a cluster file of the job's world, as on real
 * hosts), since an agent serves its socket only once its job is complete; then each rank's script starts when its
 * agent is ready ({@link RankPair#agentReady}) and still runs. The sockets lie in a {@link PrivateDirectory}.
 */
public final class PytorchXafPeer implements TrainingJob.RankStarter {
    /** The peer's name on the command line and its endpoint label in the report. */
    public static final String NAME = "pytorch-xaf";
    /** The gateway mode it runs through: XAF's own. */
    public static final List<GatewayMode> MODES = List.of(GatewayMode.XDP);

    private final TrainJobSpec spec;
    private final Function<List<String>, List<String>> agentCommand;
    private Path script;
    private Path batches;
    private Path initialWeights;
    private Path sockets;
    private final List<Process> agents = new ArrayList<>();

    /** @param agentCommand the command running {@code xaf agent} with the given options (the CLI's main class) */
    public PytorchXafPeer(TrainJobSpec spec, Function<List<String>, List<String>> agentCommand) {
        this.spec = spec;
        this.agentCommand = agentCommand;
    }

    @Override
    public void start(ClusterRun cluster, int rank, Path jobFile) throws Exception {
        if (script == null) prepare(cluster);
        Path socket = socket(rank);
        long deadline = System.nanoTime() + 180_000_000_000L;
        while (!RankPair.agentReady(agentLog(rank), socket) || !agents.get(rank).isAlive()) {
            if (!agents.get(rank).isAlive()) {
                throw new IllegalStateException("rank " + rank + "'s agent ended (exit " + agents.get(rank).exitValue()
                        + ") before it was ready; its script was not started (its log: " + agentLog(rank) + ")");
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("rank " + rank + "'s agent was not ready in 180 s (its log: " + agentLog(rank) + ")");
            }
            Thread.sleep(50);
        }
        Map<String, String> env = PythonSetup.scriptEnvironment(System.getenv(), rank, cluster.plan().worldSize(), 0, 1, socket);
        List<String> command = new ArrayList<>(List.of("env"));
        env.forEach((k, v) -> command.add(k + "=" + v));
        command.addAll(List.of(PythonSetup.interpreter(System.getenv()), "-u", script.toString(),
                "--rank", Integer.toString(rank), "--world", Integer.toString(cluster.plan().worldSize()), "--backend", "xaf"));
        command.addAll(DdpGlooPeer.arguments(DdpGlooPeer.trainerConfig(spec), batches, initialWeights, spec.checksumEvery(), spec.collective().bucketBytes()));
        cluster.startProcess(rank, Netns.processBuilder(cluster.plan().host(rank).namespace(), command).command());
    }

    private Path socket(int rank) {
        return sockets.resolve("agent-" + rank + ".sock");
    }

    private Path agentLog(int rank) {
        return agentLog(spec.workDir(), rank);
    }

    private static Path agentLog(Path workDir, int rank) {
        return workDir.resolve("agent-" + rank + ".log");
    }

    /**
     * The transport counters of every rank's agent, summed over ranks: retransmissions, resent and sent bytes and
     * the {@link RankRuntime#LOSS_COUNTERS}, from the {@code done} line each agent prints into its log
     * ({@code agent-R.log} in the job's work directory) when its script says bye. Fails naming the log when an agent
     * printed none: a row must not show 0 retransmissions for counters it could not read.
     */
    public static Map<String, Long> agentCounters(Path workDir, int world) throws IOException {
        Map<String, Long> sums = new LinkedHashMap<>();
        for (int rank = 0; rank < world; rank++) {
            Path log = agentLog(workDir, rank);
            WorkerLine done = null;
            for (String line : Files.readAllLines(log)) {
                WorkerLine l = WorkerLine.parse(line);
                if (l != null && l.kind().equals("done")) done = l;
            }
            if (done == null) throw new IllegalStateException("rank " + rank + "'s agent printed no done line with its transport counters: " + log);
            List<String> keys = new ArrayList<>(List.of("retransmits", "resent_bytes", "sent_bytes"));
            keys.addAll(RankRuntime.LOSS_COUNTERS);
            for (String key : keys) sums.merge(key, done.integer(key), Long::sum);
        }
        return sums;
    }

    /**
     * {@code r} with its agents' counters ({@link #agentCounters}): {@code retransmits} becomes the agents' chunks
     * resent plus the scripts' own TCP retransmissions (kept apart as {@code tcp_retransmits}), and the agents'
     * loss counters and bytes join the job's counters.
     */
    public static TrainResult withAgentCounters(TrainResult r) throws IOException {
        Map<String, Long> agents = agentCounters(r.spec().workDir(), r.worldSize());
        Map<String, Long> counters = new LinkedHashMap<>(r.gatewayCounters());
        long tcp = counters.getOrDefault("retransmits", 0L);
        counters.put("tcp_retransmits", tcp);
        agents.forEach((k, v) -> counters.put(k, k.equals("retransmits") ? v + tcp : v));
        return new TrainResult(r.spec(), r.worldSize(), r.steps(), r.wallSeconds(), counters, r.finalChecksum(), r.parameterCount());
    }

    private void prepare(ClusterRun cluster) throws IOException {
        if (!MODES.contains(cluster.spec().gatewayMode())) {
            throw new IllegalArgumentException("PyTorch over XAF runs through xdp, not " + cluster.spec().gatewayMode().configName());
        }
        sockets = PrivateDirectory.create("xaf-bench-"); // the work directory need not be private
        script = DdpGlooPeer.copyScript(spec.workDir());
        if (!Files.exists(spec.data())) SyntheticCorpus.write(spec.data(), spec.trainer().seed(), 2_000_000);
        TokenDataset train = TrainingData.open(spec.data(), Tokenizer.byName("bytes")).train();
        batches = DdpGlooPeer.writeBatches(train, DdpGlooPeer.trainerConfig(spec), spec.workDir().resolve("ddp-batches.i32"));
        initialWeights = DdpGlooPeer.writeInitialWeights(DdpGlooPeer.trainerConfig(spec), train,
                spec.workDir().resolve("ddp-initial.safetensors"));
        Path clusterFile = spec.workDir().resolve("cluster.yaml");
        Files.writeString(clusterFile, ClusterFile.render(cluster.world()));
        Path secret = spec.workDir().resolve("agent.secret");
        if (spec.wireSecurity().authenticated()) JobSecret.generate().writeTo(secret);
        int world = cluster.plan().worldSize();
        for (int r = 0; r < world; r++) {
            Node host = cluster.plan().host(r);
            Files.deleteIfExists(socket(r));
            List<String> options = new ArrayList<>(List.of("--job", Integer.toString(spec.cluster().jobId()), "--world", Integer.toString(world),
                    "--rank", Integer.toString(r), "--interface", host.iface(), "--form", host.form().configName(),
                    "--token", String.format("0x%08x", spec.cluster().jobToken()), "--cluster", clusterFile.toString(),
                    "--wire-security", spec.wireSecurity().configName(), "--socket", socket(r).toString(),
                    "--bucket-mb", Long.toString(Math.max(1, spec.collective().bucketBytes() >> 20)), "--algorithm", spec.collective().algorithm().configName(),
                    "--local-rank", "0", "--op-timeout", "120"));
            if (spec.wireSecurity().authenticated()) options.addAll(List.of("--secret-file", secret.toString()));
            ProcessBuilder pb = new ProcessBuilder(cluster.placedCommand(Netns.processBuilder(host.namespace(),
                    agentCommand.apply(options)).command())).redirectErrorStream(true).redirectOutput(agentLog(r).toFile());
            Process agent = pb.start();
            agents.add(agent);
            cluster.stopOnTeardown(agent);
        }
    }
}
