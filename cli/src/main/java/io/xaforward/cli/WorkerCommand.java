package io.xaforward.cli;

import io.xaforward.cluster.deploy.ClusterWorker;
import io.xaforward.cluster.deploy.SchedulerEnvironment;
import io.xaforward.cluster.deploy.WorkerOptions;
import io.xaforward.cluster.deploy.WorldSource;
import io.xaforward.cluster.rendezvous.EtcdRendezvous;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainerConfig;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.WireSecurity;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
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
    @Option(paramLabel = "ID", names = "--job", description = "job id, 1..65535 (default: the cluster file's job, else under Slurm $SLURM_JOB_ID folded into 1..65535; with --etcd, one of them is required)")
    Integer job;

    @Option(paramLabel = "N", names = "--world", description = "number of ranks in the job (default: $WORLD_SIZE, else $SLURM_NTASKS, else the cluster file's number of ranks; with --etcd, one of them is required)")
    Integer world;

    @Option(paramLabel = "N", names = "--rank", description = "this process's rank, 0..world-1 (default: $RANK, else $SLURM_PROCID, else $JOB_COMPLETION_INDEX, a Kubernetes Indexed Job's pod index; with a cluster file one of them is required; with --etcd and none, the rendezvous assigns the lowest free rank)")
    Integer rank;

    @Option(paramLabel = "IFACE", names = "--interface", required = true, description = "the interface this rank sends on; a comma-separated list names one per local rank and $LOCAL_RANK (else $SLURM_LOCALID) picks it")
    String iface;

    @Option(paramLabel = "FORM", names = "--form", description = "network form of this host's data center: ipv4, ipv6 or id (default: the cluster file's, for this rank; with --etcd, required)")
    String form;

    /** Where torchrun's and Slurm's variables ({@link SchedulerEnvironment}) are read; tests give their own. */
    java.util.Map<String, String> environment = System.getenv();

    /**
     * Who this worker is, resolved: an option given wins, then torchrun's environment variable, then Slurm's, then
     * the cluster file (the job: the option, the cluster file, then Slurm's job id, since a cluster file's job is the
     * one its gateways' routes were written for).
     * {@code rank} is {@link #ASSIGNED} when the etcd rendezvous is to assign it.
     */
    record Identity(int job, int world, int rank, String iface, NetworkForm form) {
        Identity withRank(int r) {
            return new Identity(job, world, r, iface, form);
        }
    }

    /** The rank of an {@link Identity} whose rank the rendezvous assigns ({@code --etcd} without --rank or RANK). */
    static final int ASSIGNED = -1;

    private SchedulerEnvironment scheduler() {
        return new SchedulerEnvironment(environment);
    }

    Identity identity() {
        io.xaforward.cluster.world.World file = peers.cluster != null ? io.xaforward.cluster.world.ClusterFile.read(peers.cluster) : null;
        String where = file != null ? "" : " (with --etcd there is no cluster file to take it from)";
        SchedulerEnvironment env = scheduler();
        int j;
        if (job != null) j = job;
        else if (file != null) j = file.jobId();
        else if (env.slurmJob().isPresent()) j = env.slurmJob().get().value();
        else throw new IllegalArgumentException("give the job id: --job ID" + where);
        Integer w = world != null ? world : env.worldSize().map(SchedulerEnvironment.Value::value).orElse(null);
        if (w == null && file != null) w = file.worldSize();
        if (w == null) throw new IllegalArgumentException("give the number of ranks: --world N or WORLD_SIZE" + where);
        Integer r = rank != null ? rank : env.rank().map(SchedulerEnvironment.Value::value).orElse(null);
        if (r == null && file == null) r = ASSIGNED;
        if (r == null) {
            throw new IllegalArgumentException("give this worker's rank: --rank N or " + String.join(" or ", SchedulerEnvironment.RANK_VARIABLES)
                    + " (a cluster file names each rank's host; with --etcd instead, the rendezvous can assign ranks)");
        }
        if (r != ASSIGNED && (r < 0 || r >= w)) {
            throw new IllegalArgumentException((rank != null ? "--rank" : env.rank().orElseThrow().variable()) + " must be 0.."
                    + (w - 1) + ", was " + r);
        }
        NetworkForm f;
        if (form != null) f = NetworkForm.fromName(form);
        else if (file != null) f = file.rank(r).form();
        else throw new IllegalArgumentException("give this data center's network form: --form ipv4|ipv6|id" + where);
        return new Identity(j, w, r, localInterface(), f);
    }

    /** --interface, or with a comma-separated list the entry $LOCAL_RANK names. */
    private String localInterface() {
        if (!iface.contains(",")) return iface;
        java.util.List<String> list = java.util.Arrays.stream(iface.split(",")).map(String::strip).toList();
        var local = scheduler().localRank().orElseThrow(() -> new IllegalArgumentException("--interface " + iface
                + " lists " + list.size() + " interfaces: LOCAL_RANK picks this worker's (torchrun sets it, as srun"
                + " sets SLURM_LOCALID), or give one interface"));
        if (local.value() >= list.size()) {
            throw new IllegalArgumentException(local.variable() + "=" + local.value() + " but --interface lists "
                    + list.size() + " interfaces");
        }
        return list.get(local.value());
    }

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

    /** --etcd-first-node: the endpoint of the etcd on the allocation's first node, set as --etcd. */
    void resolveFirstNodeEtcd() throws IOException, InterruptedException {
        if (peers == null || peers.etcdFirstNode == null) return;
        int port = peers.etcdFirstNode;
        if (port < 1 || port > 65535) throw new IllegalArgumentException("--etcd-first-node must be a port, 1..65535, was " + port);
        String host = scheduler().firstNode();
        peers.etcd = URI.create((etcd.ca != null ? "https" : "http") + "://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port);
        log.println("xaf worker: the rendezvous is etcd on the allocation's first node, " + peers.etcd);
    }

    /** Under Slurm without --job or a cluster file: the job is Slurm's ({@link SchedulerEnvironment#slurmJob}). */
    void jobFromSlurm() {
        if (job != null || peers == null || peers.cluster != null) return;
        scheduler().slurmJob().ifPresent(j -> {
            job = j.value();
            log.println("xaf worker: job " + job + " from SLURM_JOB_ID=" + environment.get("SLURM_JOB_ID"));
        });
    }

    @Mixin
    TrainingLoopOptions loop = new TrainingLoopOptions();

    @Mixin
    EtcdOptions etcd = new EtcdOptions();

    @Option(paramLabel = "NAME", names = "--datacenter", description = "with --etcd: this host's data center")
    String datacenter;

    @Option(paramLabel = "ADDRESS", names = "--gateway", description = "with --etcd: the gateway port this data center sends to (IP, or MAC on the id form)")
    String gateway;

    @Option(paramLabel = "ID", names = "--identity", defaultValue = "0", description = "with --etcd on the id form: this host's 32-bit identity (default: ${DEFAULT-VALUE})")
    String identity;

    @Option(paramLabel = "SECONDS", names = "--rendezvous-timeout", defaultValue = "300", description = "with --etcd: seconds to wait for every rank to register (default: ${DEFAULT-VALUE})")
    long rendezvousTimeoutSeconds;

    @Option(paramLabel = "PATH", names = "--data", description = "the same on every rank: DIR (train.bin, val.bin, meta.json from "
            + "`xaf data prepare`), FILE.bin (uint16 ids) or a UTF-8 text file (required, here or as data: in the cluster file's training section)")
    Path data;

    @Option(paramLabel = "DIR", names = "--data-root", description = "a directory that a data: path from the cluster"
            + " file's or etcd's training section may lie in, repeatable; --data on this command line is not limited"
            + " (default: the directory xaf runs from)")
    java.util.List<Path> dataRoots = new java.util.ArrayList<>();

    /** Where the inherited settings are reported (standard error: standard output carries the progress lines). */
    java.io.PrintStream log = System.err;

    @Option(paramLabel = "DIR", names = "--checkpoint-dir", required = true, description = "where this rank's checkpoints go")
    Path checkpointDir;

    @Option(paramLabel = "N", names = "--checkpoint-every", defaultValue = "0", description = "checkpoint every N steps, 0 = only the final weights (default: ${DEFAULT-VALUE})")
    long checkpointEvery;

    @Option(names = "--resume", description = "continue from the newest checkpoint that every rank has")
    boolean resume;

    @Option(paramLabel = "SECONDS", names = "--op-timeout", defaultValue = "120", description = "seconds an all-reduce waits for a peer before the job fails (default: ${DEFAULT-VALUE})")
    long opTimeoutSeconds;

    @Option(paramLabel = "SECONDS", names = "--start-timeout", defaultValue = "300", description = "seconds to wait for every rank to come up (default: ${DEFAULT-VALUE})")
    long startTimeoutSeconds;

    @Option(names = "--wire-security", defaultValue = io.xaforward.cluster.TrainJobSpec.DEFAULT_WIRE_SECURITY, paramLabel = "MODE",
            description = "crc32c, mac or encrypt; mac and encrypt need --secret-file; the same on every rank (default: ${DEFAULT-VALUE})")
    String wireSecurity = io.xaforward.cluster.TrainJobSpec.DEFAULT_WIRE_SECURITY;

    @Option(paramLabel = "N", names = "--flows", defaultValue = "1", description = "UDP flows this rank sends from (its"
            + " port and the ones after it); the same on every rank, with src-port-span N on the gateways' routes (IP"
            + " forms; the id form has no ports) (default: ${DEFAULT-VALUE})")
    int flows = 1;

    @Option(names = "--secret-file", paramLabel = "FILE",
            description = "the job secret (64 hex digits, mode 600), the same file on every host; xaf launch writes one")
    Path secretFile;

    /** The job secret of the authenticated modes; there is no default secret, so a missing file is an error. */
    JobSecret secret(WireSecurity mode) throws IOException {
        if (!mode.authenticated()) return null;
        if (secretFile == null) {
            throw new IllegalArgumentException("--wire-security " + mode.configName() + " needs the job secret: give"
                    + " --secret-file FILE (the same file on every host; xaf launch writes one), or --wire-security"
                    + " crc32c for no authentication");
        }
        if (!Files.isRegularFile(secretFile)) {
            throw new IllegalArgumentException("--secret-file " + secretFile + " not found");
        }
        return JobSecret.readFrom(secretFile);
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

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec commandSpec;

    /**
     * With a cluster file that has a training section, every job setting not given on this command line takes the
     * file's value: the settings a training section may give ({@link io.xaforward.cluster.TrainJobCodec#SECTION_KEYS}:
     * the shared training options of {@link TrainingLoopOptions} and the job's own). A name that is none of them is an
     * error naming the file.
     */
    void applyClusterTraining() {
        if (peers == null || peers.cluster == null || commandSpec == null || !Files.exists(peers.cluster)) return;
        applyTraining(io.xaforward.cluster.world.ClusterFile.training(peers.cluster), peers.cluster.toString());
    }

    /** As {@link #applyClusterTraining}, with the settings etcd keeps for the job (/xaf/jobs/JOB/training). */
    void applyEtcdTraining() {
        if (peers == null || peers.etcd == null || commandSpec == null || job == null) return;
        applyTraining(EtcdRendezvous.training(peers.etcd, etcd.security(), job),
                "etcd " + peers.etcd + EtcdRendezvous.trainingKey(job));
    }

    private void applyTraining(java.util.Map<String, String> training, String source) {
        if (training.isEmpty()) return;
        // The names were checked by the codec that read the section (TrainJobCodec.SECTION_KEYS).
        java.util.Map<String, String> recorded = new java.util.TreeMap<>();
        for (var e : training.entrySet()) recorded.put("--" + e.getKey(), e.getValue());
        java.util.List<String> args = RunSettings.inherited(commandSpec, recorded, java.util.Set.of());
        if (args.isEmpty()) return;
        picocli.CommandLine fresh = new picocli.CommandLine(new WorkerCommand());
        fresh.registerConverter(Path.class, UserPaths::resolve);
        java.util.List<String> parse = new java.util.ArrayList<>(args);
        // the options this fresh parse requires; their values are not used
        parse.addAll(java.util.List.of("--interface", "-", "--token", "0", "--cluster", "-", "--checkpoint-dir", "-"));
        try {
            fresh.parseArgs(parse.toArray(String[]::new));
        } catch (picocli.CommandLine.ParameterException e) {
            throw new IllegalArgumentException(source + ": training: " + e.getMessage());
        }
        java.util.Map<String, Object> inherited = new java.util.LinkedHashMap<>();
        for (String a : args) {
            if (a.startsWith("--") && commandSpec.findOption(a) != null) {
                inherited.put(a, InheritedSettings.parsedValue(fresh.getCommandSpec(), a));
            }
        }
        // Checked whole before anything is set: a refused value leaves the command line's settings as they were.
        InheritedSettings.check(source, "training.", inherited, commandSpec, InheritedSettings.dataRoots(dataRoots));
        for (var e : inherited.entrySet()) commandSpec.findOption(e.getKey()).setValue(e.getValue());
        InheritedSettings.log(log, "xaf worker", source, inherited);
    }

    WorkerOptions options(Identity id) throws IOException {
        if (data == null) throw new IllegalArgumentException("give the training data: --data PATH, or data: in the cluster file's training section");
        WireSecurity mode = WireSecurity.fromName(wireSecurity);
        if (checkpointEvery < 0) throw new IllegalArgumentException("--checkpoint-every must not be negative");
        if (loop.steps < 1) throw new IllegalArgumentException("--steps must be at least 1");
        // The trainer and collective parts as xaf train fills them; this rank's checkpoints go to its own directory.
        TrainerConfig trainer = loop.trainer().checkpointEvery(checkpointEvery).checkpointDir(checkpointDir).build();
        return new WorkerOptions(id.job(), id.world(), token.resolve(), id.rank(), id.iface(), id.form(), trainer,
                loop.collective(), mode, secret(mode), flows, data,
                Tokenizer.byName(loop.tokenizer != null ? loop.tokenizer : TrainData.defaultTokenizer(loop.preset)),
                loop.checksumEvery, resume, Duration.ofSeconds(opTimeoutSeconds), Duration.ofSeconds(startTimeoutSeconds));
    }

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

    @Override
    public Integer call() throws Exception {
        resolveFirstNodeEtcd();
        jobFromSlurm();
        applyClusterTraining();
        // No secret, no job: said before anything else is read. etcd's training settings cannot make the secret
        // unnecessary, since they may raise the wire security but never lower it (InheritedSettings).
        secret(WireSecurity.fromName(wireSecurity));
        applyEtcdTraining();
        Identity id = identity();
        options(id.rank() == ASSIGNED ? id.withRank(0) : id); // every option checked before a rank is claimed
        if (id.rank() == ASSIGNED) {
            try (EtcdRendezvous rendezvous = rendezvous()) {
                id = id.withRank(rendezvous.claimRank(id.job(), id.world(), token.resolve(), id.iface(), id.form(), flows,
                        ranksRunHere()));
                run(options(id), rendezvous);
            }
        } else {
            try (WorldSource source = worldSource()) {
                run(options(id), source);
            }
        }
        return 0;
    }

    private void run(WorkerOptions o, WorldSource source) throws Exception {
        // The settings record what this worker resolved (from options, torchrun's variables, the cluster file or the
        // rendezvous); they are written once the rank has joined (a rank that never joins leaves no directory behind).
        job = o.jobId();
        world = o.worldSize();
        rank = o.rank();
        form = o.form().configName();
        new ClusterWorker(o, System.out, RunSettings.json("xaf worker", this)).run(source);
    }

    /** The ranks whose settings this checkpoint directory holds: ranks that ran with it before, asked for first. */
    private java.util.Set<Integer> ranksRunHere() throws IOException {
        java.util.Set<Integer> ranks = new java.util.TreeSet<>();
        if (!Files.isDirectory(checkpointDir)) return ranks;
        java.util.regex.Pattern settings = java.util.regex.Pattern.compile("config-rank(0|[1-9][0-9]{0,8})\\.json");
        try (var files = Files.list(checkpointDir)) {
            for (Path f : files.toList()) {
                var m = settings.matcher(f.getFileName().toString());
                if (m.matches()) ranks.add(Integer.parseInt(m.group(1)));
            }
        }
        return ranks;
    }
}
