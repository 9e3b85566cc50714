package io.xaforward.cli;

import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.deploy.Launcher;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.WireSecurity;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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

    @Parameters(paramLabel = "WORKER-OPTIONS", description = "options passed to every xaf worker")
    List<String> workerArgs = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        if (workerArgs.contains("--rank")) throw new IllegalArgumentException("give the ranks with --local-ranks, not --rank");
        checkSlurmWorld(System.getenv());
        if (interfaces != null && interfaces.size() != ranks.size()) {
            throw new IllegalArgumentException("--interfaces needs one interface per local rank (" + ranks.size() + ")");
        }
        provideSecret();
        long delay = restartDelaySeconds > 0 ? restartDelaySeconds : optionValue("--op-timeout", 120) + 5;
        Launcher.Spec spec = new Launcher.Spec(ranks, rank -> command(rank), maxRestarts, Duration.ofSeconds(delay));
        return new Launcher(spec, System.out).run();
    }

    /**
     * One xaf launch per node under srun is one Slurm task per node, so SLURM_NTASKS, which the workers would take as
     * their world size, counts the launchers, not the ranks: the world size must then be given.
     */
    void checkSlurmWorld(java.util.Map<String, String> environment) {
        var env = new io.xaforward.cluster.deploy.SchedulerEnvironment(environment);
        if (env.slurmTask() && !workerArgs.contains("--world") && environment.get("WORLD_SIZE") == null) {
            throw new IllegalArgumentException("xaf launch under Slurm: give the job's number of ranks, --world N, after"
                    + " --: SLURM_NTASKS (" + environment.get("SLURM_NTASKS") + ") counts the launchers, not their ranks");
        }
    }

    /**
     * With an authenticated wire security and no --secret-file, the workers get a secret file in their checkpoint
     * directory: generated once, kept for restarts and later launches (the other hosts hold copies of it).
     */
    void provideSecret() throws IOException {
        int mode = workerArgs.indexOf("--wire-security");
        boolean authenticated = WireSecurity.fromName(mode >= 0 && mode + 1 < workerArgs.size()
                ? workerArgs.get(mode + 1) : TrainJobSpec.DEFAULT_WIRE_SECURITY).authenticated(); // as xaf worker reads it
        int dir = workerArgs.indexOf("--checkpoint-dir");
        if (!authenticated || workerArgs.contains("--secret-file") || dir < 0 || dir + 1 >= workerArgs.size()) return;
        Path file = UserPaths.resolve(workerArgs.get(dir + 1)).resolve("job.secret").toAbsolutePath(); // as the worker will
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

    private long optionValue(String name, long dflt) {
        int i = workerArgs.indexOf(name);
        return i >= 0 && i + 1 < workerArgs.size() ? Long.parseLong(workerArgs.get(i + 1)) : dflt;
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
}
