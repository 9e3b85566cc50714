package io.xaforward.cli;

import io.xaforward.cluster.CheckpointNames;
import io.xaforward.cluster.deploy.ClusterWorker;
import io.xaforward.cluster.deploy.RankIdentity;
import io.xaforward.cluster.deploy.WorkerOptions;
import io.xaforward.cluster.deploy.WorldSource;
import io.xaforward.cluster.rendezvous.EtcdRendezvous;
import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainerConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;

/** {@code xaf worker}: one rank of a training job on the host it is started on. */
@Command(name = "worker", mixinStandardHelpOptions = true,
        description = {"Run one rank of a data-parallel training job on this host.",
                "Learns its peers from a cluster file or an etcd rendezvous, trains with gradients all-reduced through the"
                        + " gateways, writes checkpoints and prints progress lines. See docs/DEPLOY.md."},
        footerHeading = "%nExample:%n",
        footer = {"  xaf worker --job 7 --world 4 --rank 2 --interface eth1 --form ipv6 \\",
                "      --token-file /etc/xaf/job7.token --secret-file /etc/xaf/job7.secret \\",
                "      --cluster cluster.yaml --data corpus.txt --steps 1000 \\",
                "      --checkpoint-dir /var/lib/xaf/job7"})
final class WorkerCommand implements Callable<Integer> {
    /** Who this rank is, its token, its peers and its wire security: the options xaf agent shares. */
    @Mixin
    JoinOptions join = new JoinOptions();

    /** Where torchrun's and Slurm's variables are read; tests give their own. */
    Map<String, String> environment = System.getenv();

    /** Who this worker is ({@link RankIdentity#resolve}); its rank is {@link RankIdentity#ASSIGNED} when the rendezvous assigns it. */
    RankIdentity identity() {
        return join.identity(environment);
    }

    /** --etcd-first-node: the endpoint of the etcd on the allocation's first node, set as --etcd. */
    void resolveFirstNodeEtcd() throws IOException, InterruptedException {
        join.resolveFirstNodeEtcd(environment, log, "xaf worker");
    }

    /** Under Slurm without --job or a cluster file: the job is Slurm's, said on the log. */
    void jobFromSlurm() {
        join.jobFromSlurm(environment, log, "xaf worker");
    }

    @Mixin
    TrainingLoopOptions loop = new TrainingLoopOptions();

    @Option(paramLabel = "PATH", names = "--data", description = "the same on every rank: DIR (train.bin, val.bin, meta.json from "
            + "`xaf data prepare`), FILE.bin (uint16 ids) or a UTF-8 text file (required, here or as data: in the cluster file's training section)")
    Path data;

    @Option(paramLabel = "DIR", names = "--data-root", description = "a directory that a data: path from the cluster"
            + " file's or etcd's training section may lie in, repeatable; --data on this command line is not limited"
            + " (default: the directory xaf runs from)")
    List<Path> dataRoots = new ArrayList<>();

    /** Where the inherited settings are reported (standard error: standard output carries the progress lines). */
    PrintStream log = System.err;

    @Option(paramLabel = "DIR", names = "--checkpoint-dir", required = true, description = "where this rank's checkpoints go")
    Path checkpointDir;

    @Option(paramLabel = "N", names = "--checkpoint-every", defaultValue = "0", description = "checkpoint every N steps, 0 = only the final weights (default: ${DEFAULT-VALUE})")
    long checkpointEvery;

    @Option(names = "--resume", description = "continue from the newest checkpoint that every rank has")
    boolean resume;

    @Spec
    CommandSpec commandSpec;

    /**
     * With a cluster file that has a training section, every job setting not given on this command line takes the
     * file's value: the settings a training section may give ({@link io.xaforward.cluster.TrainJobCodec#SECTION_KEYS}:
     * the shared training options of {@link TrainingLoopOptions} and the job's own). A name that is none of them is an
     * error naming the file.
     */
    void applyClusterTraining() {
        Path cluster = join.peers == null ? null : join.peers.cluster;
        if (cluster == null || commandSpec == null || !Files.exists(cluster)) return;
        applyTraining(ClusterFile.training(cluster), cluster.toString());
    }

    /** As {@link #applyClusterTraining}, with the settings etcd keeps for the job (/xaf/jobs/JOB/training). */
    void applyEtcdTraining() {
        if (join.peers == null || join.peers.etcd == null || commandSpec == null || join.job == null) return;
        applyTraining(EtcdRendezvous.training(join.peers.etcd, join.etcd.security(), join.job),
                "etcd " + join.peers.etcd + EtcdRendezvous.trainingKey(join.job));
    }

    private void applyTraining(Map<String, String> training, String source) {
        if (training.isEmpty()) return;
        // The names were checked by the codec that read the section (TrainJobCodec.SECTION_KEYS).
        Map<String, String> recorded = new TreeMap<>();
        for (var e : training.entrySet()) recorded.put("--" + e.getKey(), e.getValue());
        List<String> args = RunSettings.inherited(commandSpec, recorded, Set.of());
        if (args.isEmpty()) return;
        Map<String, Object> inherited = InheritedSettings.parse(source + ": training", commandSpec, args);
        // Checked whole before anything is set: a refused value leaves the command line's settings as they were.
        InheritedSettings.check(source, "training.", inherited, commandSpec, InheritedSettings.dataRoots(dataRoots));
        for (var e : inherited.entrySet()) commandSpec.findOption(e.getKey()).setValue(e.getValue());
        InheritedSettings.log(log, "xaf worker", source, inherited);
    }

    WorkerOptions options(RankIdentity id) throws IOException {
        if (data == null) throw new IllegalArgumentException("give the training data: --data PATH, or data: in the cluster file's training section");
        if (checkpointEvery < 0) throw new IllegalArgumentException("--checkpoint-every must not be negative");
        if (loop.steps < 1) throw new IllegalArgumentException("--steps must be at least 1");
        // The trainer and collective parts as xaf train fills them; this rank's checkpoints go to its own directory.
        TrainerConfig trainer = loop.trainer().checkpointEvery(checkpointEvery).checkpointDir(checkpointDir).build();
        return new WorkerOptions(join.spec(id, loop.collective(join.collective.settings())), trainer, data,
                Tokenizer.byName(loop.tokenizer != null ? loop.tokenizer : TrainData.defaultTokenizer(loop.preset)),
                loop.checksumEvery, resume);
    }

    @Override
    public Integer call() throws Exception {
        resolveFirstNodeEtcd();
        jobFromSlurm();
        applyClusterTraining();
        // No secret, no job: said before anything else is read. etcd's training settings cannot make the secret
        // unnecessary, since they may raise the wire security but never lower it (InheritedSettings).
        join.secret();
        applyEtcdTraining();
        return join.join(identity(), this::options, () -> CheckpointNames.ranksWithSettings(checkpointDir),
                (o, peers) -> {
                    run(o, peers);
                    return 0;
                });
    }

    private void run(WorkerOptions o, WorldSource source) throws Exception {
        // The settings record what this worker resolved (from options, torchrun's variables, the cluster file or the
        // rendezvous); they are written once the rank has joined (a rank that never joins leaves no directory behind).
        join.job = o.join().jobId();
        join.world = o.join().worldSize();
        join.rank = o.rank();
        join.form = o.join().form();
        new ClusterWorker(o, System.out, RunSettings.json("xaf worker", this)).run(source);
    }

}
