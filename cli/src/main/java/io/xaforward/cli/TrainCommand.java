package io.xaforward.cli;

import io.xaforward.cluster.ClusterRun;
import io.xaforward.cluster.CollectiveSettings;
import io.xaforward.cluster.Endpoint;
import io.xaforward.cluster.SummaryTable;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.TrainResult;
import io.xaforward.cluster.python.PythonTrainingJob;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.ModelConfig;
import io.xaforward.training.TrainerConfig;
import io.xaforward.transport.WireSecurity;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;

/** {@code xaf train}: data-parallel GPT training across the emulated data centers of a topology. */
@Command(name = "train", mixinStandardHelpOptions = true,
        description = {"Train a GPT model data-parallel across the data centers of a topology.",
                "One worker JVM per host namespace, gradients all-reduced through the gateways. Needs root."},
        footerHeading = "%nExample:%n",
        footer = {"  xaf train --topology topologies/two-dc.yaml --preset gpt2-tiny \\", "      --steps 300 --out runs/europarl"})
final class TrainCommand implements Callable<Integer> {
    @Mixin
    TrainingLoopOptions loop = new TrainingLoopOptions();

    @Mixin
    CollectiveOptions collective = new CollectiveOptions();

    @Option(paramLabel = "FILE", names = "--topology", description = "topology file (default: topologies/two-dc.yaml, shipped with xaf)")
    Path topology;

    @Option(paramLabel = "MODE", names = "--gateway-mode", defaultValue = "xdp", converter = Words.GatewayModeWord.class,
            description = "xdp, relay, afxdp, kernel, kernel-tunnel or direct, see docs/TOPOLOGY.md (default: ${DEFAULT-VALUE})")
    GatewayMode gatewayMode = GatewayMode.XDP;

    @Option(paramLabel = "PATH", names = "--data", description = "DIR (train.bin, val.bin, meta.json from `xaf data prepare` or nanoGPT), FILE.bin (uint16 ids)"
            + " or a UTF-8 text file (default: the shipped Europarl text for a GPT-2 preset, a generated corpus for a byte preset)")
    Path data;

    @Option(paramLabel = "DIR", names = "--data-root", description = "with --resume: a directory that the data path"
            + " recorded in the checkpoint may lie in, repeatable; --data on this command line is not limited"
            + " (default: the directory xaf runs from)")
    List<Path> dataRoots = new ArrayList<>();

    @Option(paramLabel = "DIR", names = "--out", description = "where metrics.jsonl, loss.png and model.ckpt go (default: xaf-runs/train-TIME in the working directory)")
    Path out;

    @Option(names = "--keep-work-dir", description = "keep the work directory (logs, configs) after a successful run; a failed run always keeps it")
    boolean keepWorkDir;

    @Option(paramLabel = "N", names = "--checkpoint-every", defaultValue = "0", description = "write a checkpoint every N steps into OUT/checkpoints, 0 = only the final one (default: ${DEFAULT-VALUE})")
    long checkpointEvery;

    @Option(paramLabel = "FILE", names = "--resume", description = "checkpoint file to continue from; every option not given here takes the value the checkpoint recorded (its config.json), and training runs on to --steps in total")
    Path resume;

    @Option(paramLabel = "ENDPOINT", names = "--endpoint", converter = Words.EndpointWord.class,
            description = "workers' endpoint: afxdp (AF_XDP sockets) or udp (kernel sockets) (default: udp)")
    Endpoint endpoint;

    @Option(paramLabel = "N", names = "--flows", defaultValue = "1", description = "UDP flows each worker sends from (its"
            + " port and the ones after it), kept apart by the xdp gateways; more than one spreads a host's traffic over"
            + " a receiver's NIC queues and equal-cost WAN paths (udp endpoint) (default: ${DEFAULT-VALUE})")
    int flows = 1;

    @Option(names = "--wire-security", paramLabel = "MODE", defaultValue = TrainJobSpec.DEFAULT_WIRE_SECURITY,
            converter = Words.WireSecurityWord.class, description = "how gradient datagrams are protected end to end: crc32c (corruption only), mac (AES-GMAC"
                    + " tag and replay window, keyed by a secret generated per run) or encrypt (as mac, payload AES-GCM"
                    + " encrypted: for links that leave the building) (default: ${DEFAULT-VALUE})")
    WireSecurity wireSecurity = TrainJobSpec.DEFAULT_WIRE;

    @Option(paramLabel = "DIR", names = "--work-dir", description = "where logs, configs and derived data go (default: a new temp dir, removed after a successful run)")
    Path workDir;

    @Option(paramLabel = "SCRIPT", names = "--python", description = "train a PyTorch script that uses xaforward.torch instead of"
            + " XAF's GPT: per rank an xaf agent and the script beside it (with /usr/bin/python3, or $XAF_PYTHON); the"
            + " arguments after -- go to the script; the model and training options above are the script's (docs/PYTORCH.md)")
    Path python;

    @CommandLine.Parameters(paramLabel = "SCRIPT-ARGS", description = "with --python, after --: the script's arguments")
    List<String> scriptArgs = new ArrayList<>();

    @Option(paramLabel = "SECONDS", names = "--op-timeout", defaultValue = "" + TrainJobSpec.DEFAULT_OP_TIMEOUT_SECONDS,
            description = "seconds a worker's (with --python, an agent's) all-reduce waits for a peer before the job"
                    + " fails (default: ${DEFAULT-VALUE})")
    long opTimeoutSeconds = TrainJobSpec.DEFAULT_OP_TIMEOUT_SECONDS;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec commandSpec;

    /** How the settings name the command that ran (xaf demo fills a TrainCommand in by code). */
    String commandName = "xaf train";

    /** Options a resumed run never takes from the checkpoint's settings: they belong to this run alone. */
    static final Set<String> NOT_INHERITED = Set.of("--resume", "--out", "--work-dir", "--keep-work-dir",
            "--data-root");

    /**
     * With --resume, every option not given on this command line takes the value recorded in the checkpoint's
     * settings (the run it continues), so 'xaf train --resume FILE' alone continues that run as it was started.
     */
    void inheritSettings() throws IOException {
        if (resume == null || commandSpec == null) return;
        String recorded = DataParallelTrainer.checkpointSettings(checkCheckpoint(resume));
        if (recorded.isEmpty()) return; // a checkpoint of an older version: the command line says everything
        List<String> args = RunSettings.inherited(commandSpec, RunSettings.options(recorded), NOT_INHERITED);
        if (args.isEmpty()) return;
        String source = "checkpoint " + resume + " (its recorded settings)";
        Map<String, Object> inherited = InheritedSettings.parse(source, commandSpec, args);
        // A checkpoint may come from anyone (a shared directory, a download): its settings are checked as etcd's are
        // for xaf worker, whole, before any is set.
        InheritedSettings.check(source, "--", inherited, commandSpec, InheritedSettings.dataRoots(dataRoots));
        for (var e : inherited.entrySet()) commandSpec.findOption(e.getKey()).setValue(e.getValue());
        // One line names the source and every setting taken from it (docs/DATA.md, "Resuming").
        log.println("xaf: settings of the resumed run from " + resume + ": " + String.join(" ", args));
    }

    /** Where the inherited settings are reported. */
    PrintStream log = System.out;

    /** The endpoint checkBeforeStart() chose: --endpoint, else the gateway mode's default. */
    private Endpoint chosenEndpoint;

    /** True when spec() created the work directory (then it is ours to remove). */
    boolean createdWorkDir;

    /** A topology shipped under topologies/, found from XAF_HOME, the working directory or its parent. */
    static Path shippedTopology(String name) {
        for (String base : new String[]{System.getenv("XAF_HOME"), ".", ".."}) {
            if (base == null) continue;
            Path p = Path.of(base, "topologies", name);
            if (Files.exists(p)) return p;
        }
        throw new IllegalArgumentException("topologies/" + name + " not found (run from the XAForward directory or set XAF_HOME)");
    }

    /** {@code file} when it is a training checkpoint (model.ckpt, checkpoints/step-N.ckpt); one clear error otherwise. */
    static Path checkCheckpoint(Path file) {
        UserPaths.requireFile(file, "checkpoint");
        try {
            DataParallelTrainer.checkpointPreset(file);
            return file;
        } catch (IOException e) {
            String why = e.getMessage() == null || e.getMessage().endsWith("is not a checkpoint of this format") ? ""
                    : " (" + e.getMessage() + ")";
            throw new IllegalArgumentException("--resume " + file + " is not a training checkpoint of xaf train" + why
                    + ": give OUT/model.ckpt or OUT/checkpoints/step-N.ckpt (a .safetensors file from xaf export holds weights only)");
        }
    }

    /**
     * Checks everything the run needs (topology, preset, options, checkpoint, data, output directory) before anything
     * is created: a bad one is one clear error, with no namespace, work directory or output left behind.
     */
    void checkBeforeStart() throws Exception {
        if (topology == null) topology = shippedTopology("two-dc.yaml").toAbsolutePath().normalize(); // recorded in the settings
        if (!Files.exists(topology)) throw new IllegalArgumentException("topology file " + topology + " not found");
        Topology topo = Topology.load(topology); // a typo is named with its file and field, before any namespace
        ModelConfig model;
        try {
            model = ModelConfig.preset(loop.preset);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("--preset " + loop.preset + ": " + e.getMessage());
        }
        loop.checkSync();
        TrainJobSpec.checkDatacenters(loop.sync, topo.datacenters().size());
        chosenEndpoint = Endpoint.resolve(endpoint, gatewayMode);
        Endpoint.checkFlows(chosenEndpoint, flows);
        if (resume != null) {
            String trained = DataParallelTrainer.checkpointPreset(checkCheckpoint(resume));
            if (!trained.equals(model.name())) {
                throw new IllegalArgumentException("--resume " + resume + " was trained with preset " + trained + ", not " + loop.preset
                        + " (give --preset " + trained + ")");
            }
        }
        if (data != null && !Files.exists(data)) throw new IllegalArgumentException("data " + data + " not found");
        TrainData.checkTokenizer(loop.tokenizer, loop.preset);
        if (out != null) checkWritableDirectory("--out", out);
        if (workDir != null) checkWritableDirectory("--work-dir", workDir);
        if (!Netns.isRoot()) {
            throw new IllegalArgumentException(commandName + " needs root (network namespaces, XDP): run it as root or with sudo");
        }
    }

    /**
     * One clear error unless {@code dir} is (or can be made) a directory this process can write into. Probes by
     * creating it and a file in it, then removes whatever the probe created: nothing is left behind.
     */
    static void checkWritableDirectory(String option, Path dir) {
        if (Files.exists(dir) && !Files.isDirectory(dir)) {
            throw new IllegalArgumentException(option + " " + dir + " is a file, not a directory");
        }
        Path created = dir.toAbsolutePath().normalize();
        while (created.getParent() != null && !Files.exists(created.getParent())) created = created.getParent();
        boolean existed = Files.exists(dir);
        try {
            Files.createDirectories(dir);
            Files.delete(Files.createTempFile(dir, ".xaf-probe-", ""));
        } catch (IOException | UnsupportedOperationException e) {
            throw new IllegalArgumentException(option + " " + dir + " cannot be written: " + UserPaths.describe(e));
        } finally {
            if (!existed) {
                try {
                    DataCommand.deleteTree(created);
                } catch (IOException ignored) {
                    // best effort: it is empty, and the error above says why
                }
            }
        }
    }

    TrainJobSpec spec() throws Exception {
        checkBeforeStart();
        // The trainer and collective parts as xaf worker fills them; built (and so checked) before the work directory
        // is made.
        TrainerConfig trainer = loop.trainer().build();
        CollectiveSettings collective = loop.collective(this.collective.settings());
        createdWorkDir = workDir == null;
        Path dir = workDir != null ? Files.createDirectories(workDir) : Files.createTempDirectory("xaf-train-");
        Path dataPath;
        try {
            dataPath = TrainData.resolve(data, loop.tokenizer, loop.preset, dir);
        } catch (Exception e) {
            if (createdWorkDir) DataCommand.deleteTree(dir); // nothing of this run is worth keeping yet
            throw e;
        }
        String prefix = "t" + Integer.toHexString(new Random().nextInt(0x100, 0x1000));
        return TrainJobSpec.builder()
                .topology(topology).prefix(prefix).gatewayMode(gatewayMode).endpoint(chosenEndpoint).workDir(dir)
                .trainer(trainer).collective(collective)
                .data(dataPath).checksumEvery(loop.checksumEvery).checkpointEvery(checkpointEvery).resume(resume)
                .jobId(1).jobToken(new SecureRandom().nextInt()).flows(flows).wireSecurity(wireSecurity)
                .opTimeout(Duration.ofSeconds(opTimeoutSeconds))
                .build();
    }

    @Override
    public Integer call() throws Exception {
        if (python != null) return trainScript();
        if (!scriptArgs.isEmpty()) throw new IllegalArgumentException("arguments after -- go to a --python script; without"
                + " --python, xaf train takes none: " + String.join(" ", scriptArgs));
        inheritSettings();
        TrainJobSpec spec = spec();
        TrainResult r = TrainOutputs.run(spec, this, System.out);
        System.out.println();
        System.out.print(SummaryTable.render(r));
        TrainOutputs.finish(spec, this, r, System.out);
        return 0;
    }

    /** {@code xaf train --python}: the user's script on every rank of the topology, beside an agent. */
    int trainScript() throws Exception {
        if (resume != null) throw new IllegalArgumentException("--resume is for XAF's GPT; a --python script resumes from its own checkpoints");
        checkBeforeStart();
        Path script = UserPaths.requireFile(python, "--python script");
        createdWorkDir = workDir == null;
        Path dir = workDir != null ? Files.createDirectories(workDir) : Files.createTempDirectory("xaf-train-");
        String prefix = "p" + Integer.toHexString(new Random().nextInt(0x100, 0x1000));
        var cluster = new ClusterRun.Spec(topology, prefix, gatewayMode, 1, new SecureRandom().nextInt(), dir,
                chosenEndpoint, flows);
        var spec = new PythonTrainingJob.Spec(cluster, wireSecurity, script,
                scriptArgs, UserPaths.workingDirectory(), LaunchCommand::agentCommand,
                Duration.ofSeconds(opTimeoutSeconds), Duration.ofSeconds(120), false);
        var result = new PythonTrainingJob(spec, System.out, System.getenv()).run();
        boolean remove = result.ok() && createdWorkDir && !keepWorkDir;
        System.out.printf("xaf: %s in %.1f s%s%n", result.ok() ? "every rank finished" : "the job failed",
                result.wallSeconds(), remove ? "" : "; agent logs, cluster file and sockets in " + dir);
        if (remove) DataCommand.deleteTree(dir);
        return result.ok() ? 0 : 1;
    }
}
