package io.xaforward.cluster.python;

import io.xaforward.cluster.ClusterRun;
import io.xaforward.cluster.agent.PrivateDirectory;
import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.plan.IdentifierPlan;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.WireSecurity;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

/**
 * {@code xaf train --python SCRIPT}: a user's PyTorch script trained across the emulated data centers of a
 * topology. Brings the cluster up as {@code xaf train} does ({@link ClusterRun}: testbed, gateways), writes the
 * job's cluster file and keys as an operator would, and starts per rank, inside the rank's host namespace, an agent
 * ({@code xaf agent} with the options {@code xaf worker} takes, from that cluster file) in place of the Java trainer
 * and the script beside it ({@link RankPair}). The scripts' lines are printed with their rank. When a rank fails,
 * the others are given the agents' operation timeout to fail on their own (their all-reduce cannot complete), which
 * each reports, before anything left is stopped.
 */
public final class PythonTrainingJob {
    /**
     * @param agentCommand the command that runs {@code xaf agent} with the given options (the CLI knows its own main class)
     * @param workingDirectory where the scripts run and their relative paths are resolved: the user's directory
     * @param opTimeout    how long an agent's all-reduce waits for a peer before it fails the job
     * @param startTimeout how long a rank waits for every other rank to join
     */
    public record Spec(ClusterRun.Spec cluster, WireSecurity wireSecurity, Path script, List<String> scriptArgs,
                       Path workingDirectory, Function<List<String>, List<String>> agentCommand, Duration opTimeout,
                       Duration startTimeout, boolean placed) {
        public Spec {
            Objects.requireNonNull(cluster, "cluster");
            Objects.requireNonNull(wireSecurity, "wireSecurity");
            Objects.requireNonNull(script, "script");
            scriptArgs = List.copyOf(scriptArgs);
            Objects.requireNonNull(workingDirectory, "workingDirectory");
            Objects.requireNonNull(agentCommand, "agentCommand");
        }
    }

    /** How each rank ended, in rank order, the job's wall time and the gateways' counters at its end. */
    public record Result(List<RankPair.Exit> ranks, double wallSeconds, Map<String, Long> gatewayCounters) {
        public boolean ok() {
            return ranks.stream().allMatch(RankPair.Exit::ok);
        }
    }

    private final Spec spec;
    private final PrintStream out;
    private final Map<String, String> environment;

    public PythonTrainingJob(Spec spec, PrintStream out, Map<String, String> environment) {
        this.spec = spec;
        this.out = out;
        this.environment = Map.copyOf(environment);
    }

    public Result run() throws Exception {
        long start = System.nanoTime();
        // Before any namespace: a missing package or script is one clear error.
        PythonSetup.packageRoot(environment);
        if (!Files.isRegularFile(spec.script())) throw new IllegalArgumentException("script " + spec.script() + " not found");
        // The sockets' own directory: private (the work directory may be open to others) and short (sun_path)
        Path sockets = PrivateDirectory.create("xaf-train-");
        try (ClusterRun cluster = new ClusterRun(spec.cluster(), out)) {
            if (spec.placed()) cluster.placed();
            IdentifierPlan plan = cluster.up();
            Path work = spec.cluster().workDir();
            Path clusterFile = work.resolve("cluster.yaml");
            Files.writeString(clusterFile, ClusterFile.render(cluster.world()));
            Path secret = work.resolve("job.secret");
            if (spec.wireSecurity().authenticated()) JobSecret.generate().writeTo(secret);

            int world = plan.worldSize();
            List<RankPair> pairs = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                Path socket = sockets.resolve("agent-" + r + ".sock");
                RankPair pair = new RankPair(r, socket, work.resolve("agent-" + r + ".log"));
                Node host = plan.host(r);
                List<String> agent = spec.agentCommand().apply(agentOptions(r, world, host, clusterFile, secret, socket));
                cluster.stopOnTeardown(pair.startAgent(cluster.placedCommand(Netns.processBuilder(host.namespace(), agent).command())));
                pairs.add(pair);
            }
            out.printf("xaf: %d agents started; starting %s beside each%n", world, spec.script().getFileName());
            for (RankPair pair : pairs) {
                int r = pair.rank();
                List<String> command = new ArrayList<>(List.of(PythonSetup.interpreter(environment), spec.script().toString()));
                command.addAll(spec.scriptArgs());
                Map<String, String> env = PythonSetup.scriptEnvironment(environment, r, world, 0, 1,
                        sockets.resolve("agent-" + r + ".sock"));
                cluster.stopOnTeardown(pair.startScript(
                        cluster.placedCommand(Netns.processBuilder(plan.host(r).namespace(), command).command()),
                        spec.workingDirectory(), env, spec.startTimeout(), line -> {
                            synchronized (out) {
                                out.println("[rank " + r + "] " + line);
                            }
                        }));
            }
            Duration grace = spec.opTimeout().plus(RankPair.AGENT_GRACE).plusSeconds(30);
            List<RankPair.Exit> exits = RankPair.awaitAll(pairs, grace, out);
            return new Result(exits, (System.nanoTime() - start) / 1e9, cluster.gatewayCounters());
        } finally {
            PrivateDirectory.removeIfEmpty(sockets); // the agents, stopped by now, removed their sockets
        }
    }

    /** The agent's options: those of {@code xaf worker} for this rank, its world from the cluster file, and its socket. */
    List<String> agentOptions(int rank, int world, Node host, Path clusterFile, Path secret, Path socket) {
        List<String> o = new ArrayList<>(List.of("--job", Integer.toString(spec.cluster().jobId()),
                "--world", Integer.toString(world), "--rank", Integer.toString(rank),
                "--interface", host.iface(), "--form", host.form().configName(),
                "--token", String.format("0x%08x", spec.cluster().jobToken()), "--cluster", clusterFile.toString(),
                "--wire-security", spec.wireSecurity().configName(),
                "--op-timeout", Long.toString(spec.opTimeout().toSeconds()),
                "--start-timeout", Long.toString(spec.startTimeout().toSeconds()),
                "--socket", socket.toString()));
        if (spec.wireSecurity().authenticated()) o.addAll(List.of("--secret-file", secret.toString()));
        if (spec.cluster().flows() > 1) o.addAll(List.of("--flows", Integer.toString(spec.cluster().flows())));
        return o;
    }
}
