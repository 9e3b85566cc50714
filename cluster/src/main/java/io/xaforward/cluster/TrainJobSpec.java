package io.xaforward.cluster;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.OuterDtype;
import io.xaforward.collective.WireDtype;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.training.DilocoConfig;
import io.xaforward.training.ModelConfig;
import io.xaforward.training.TrainerConfig;
import io.xaforward.transport.WireSecurity;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Properties;

/**
 * Everything a distributed training run needs, shared by the launcher and every worker process (written to a
 * properties file that each worker reads). Defaults make {@code xaf demo} a few-minute run on two cores.
 *
 * @param topology     topology file (data centers, gateways)
 * @param prefix       name prefix of the testbed's namespaces (unique per run)
 * @param gatewayMode  how the gateways forward (xdp, relay, afxdp, kernel, kernel-tunnel, direct)
 * @param algorithm    all-reduce algorithm: hierarchical, ring or ps
 * @param data         training data: a prepared directory, a .bin token file or a text file (byte-level tokens);
 *                     see TrainingData
 * @param rateLimit    informational: the inter-DC link rate of the topology, or "none"
 * @param checkpointEvery rank 0 writes a checkpoint into {@link #checkpointDir()} every N steps (0 = never)
 * @param resume       checkpoint file every rank starts from (its step, weights and optimizer state), or null
 * @param wireSecurity how datagrams are protected: crc32c, mac or encrypt (the authenticated ones read the job
 *                     secret that the launcher writes to {@link #secretFile()})
 * @param overlap      all-reduce gradients block by block during backward (see docs/TRAINING.md, "Overlap")
 * @param wireDtype    number format of gradients on the wire: fp32, bf16, int8 or int4
 * @param endpoint     the workers' {@link Endpoint}: afxdp or udp (null: the gateway mode's default)
 * @param evalWindows  validation windows per evaluation when the split holds more (the whole split otherwise)
 * @param flows        UDP flows each worker sends from ({@link ClusterRun.Spec#flows()}); 1 by default
 * @param sync         ddp (every step's gradient averaged over all ranks) or diloco (docs/TRAINING.md, "DiLoCo")
 * @param diloco       DiLoCo's outer loop (H, fragments, delay, outer lr and momentum): set iff {@code sync} is diloco
 * @param outerDtype   number format of DiLoCo's outer all-reduce (recorded under ddp too, where it is unused)
 */
public record TrainJobSpec(Path topology, String prefix, GatewayMode gatewayMode, Algorithm algorithm, String preset,
                           long steps, int globalBatch, long seed, double learningRate, long warmupSteps,
                           long evalEvery, long checksumEvery, Path data, int jobId, int jobToken,
                           int threadsPerWorker, long bucketBytes, long pacingBytesPerSecond, Path workDir,
                           String rateLimit, long checkpointEvery, Path resume, boolean overlap,
                           WireDtype wireDtype, WireSecurity wireSecurity, Endpoint endpoint, int evalWindows,
                           int flows, SyncMode sync, DilocoConfig diloco, OuterDtype outerDtype) {

    public TrainJobSpec {
        Objects.requireNonNull(topology, "topology");
        Objects.requireNonNull(prefix, "prefix");
        Objects.requireNonNull(preset, "preset");
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(workDir, "workDir");
        Objects.requireNonNull(rateLimit, "rateLimit");
        Objects.requireNonNull(gatewayMode, "gatewayMode");
        Objects.requireNonNull(algorithm, "algorithm");
        Objects.requireNonNull(wireDtype, "wireDtype");
        Objects.requireNonNull(wireSecurity, "wireSecurity");
        endpoint = Endpoint.resolve(endpoint, gatewayMode);
        Endpoint.checkFlows(endpoint, flows);
        if (evalWindows <= 0) {
            throw new IllegalArgumentException("--eval-windows must be positive, was " + evalWindows);
        }
        Objects.requireNonNull(sync, "sync");
        Objects.requireNonNull(outerDtype, "outerDtype");
        checkSync(sync, diloco, outerDtype, preset);
    }

    /**
     * The one check of the synchronisation settings, before anything starts: diloco needs its outer settings (and
     * ddp has none), fragments must fit the model's layers, and the outer format must be one this build can send.
     */
    public static void checkSync(SyncMode sync, DilocoConfig diloco, OuterDtype outerDtype, String preset) {
        if (sync == SyncMode.DDP && diloco != null) {
            throw new IllegalArgumentException("--sync ddp has no outer loop: --sync-every, --fragments and the outer"
                    + " settings need --sync diloco");
        }
        if (sync == SyncMode.DILOCO) {
            if (diloco == null) throw new IllegalArgumentException("--sync diloco needs its outer settings");
            diloco.checkModel(ModelConfig.preset(preset));
        }
    }

    /**
     * Refuses diloco on fewer than two data centers: with one, the all-reduce of every step already stays inside it
     * and there is nothing for an outer loop to save.
     */
    public static void checkDatacenters(SyncMode sync, int datacenters) {
        if (sync == SyncMode.DILOCO && datacenters < 2) {
            throw new IllegalArgumentException("--sync diloco needs at least two data centers, the topology has "
                    + datacenters + ": inside one data center every step's all-reduce never crosses a gateway"
                    + " (use --sync ddp)");
        }
    }

    /** The default protection of a job's datagrams: authenticated with a per-job secret. */
    public static final String DEFAULT_WIRE_SECURITY = "mac";

    /** {@link #DEFAULT_WIRE_SECURITY} as the mode. */
    public static final WireSecurity DEFAULT_WIRE = WireSecurity.fromName(DEFAULT_WIRE_SECURITY);

    /**
     * A builder with the defaults of a plain job: no periodic checkpoints, no resume, overlap on, float32 on the
     * wire, the default wire security, the gateway mode's default endpoint, the default number of validation
     * windows and no rate limit noted. Everything else is set by the caller.
     */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding this spec's values, to derive a spec that differs in a few. */
    public Builder toBuilder() {
        return new Builder().topology(topology).prefix(prefix).gatewayMode(gatewayMode).algorithm(algorithm)
                .preset(preset).steps(steps).globalBatch(globalBatch).seed(seed).learningRate(learningRate)
                .warmupSteps(warmupSteps).evalEvery(evalEvery).checksumEvery(checksumEvery).data(data).jobId(jobId)
                .jobToken(jobToken).threadsPerWorker(threadsPerWorker).bucketBytes(bucketBytes)
                .pacingBytesPerSecond(pacingBytesPerSecond).workDir(workDir).rateLimit(rateLimit)
                .checkpointEvery(checkpointEvery).resume(resume).overlap(overlap).wireDtype(wireDtype)
                .wireSecurity(wireSecurity).endpoint(endpoint).evalWindows(evalWindows).flows(flows)
                .sync(sync).diloco(diloco).outerDtype(outerDtype);
    }

    /** Builds a {@link TrainJobSpec}; see {@link #builder()} for the defaults. */
    public static final class Builder {
        private Path topology;
        private String prefix;
        private GatewayMode gatewayMode;
        private Algorithm algorithm;
        private String preset;
        private long steps;
        private int globalBatch;
        private long seed;
        private double learningRate;
        private long warmupSteps;
        private long evalEvery;
        private long checksumEvery;
        private Path data;
        private int jobId;
        private int jobToken;
        private int threadsPerWorker;
        private long bucketBytes;
        private long pacingBytesPerSecond;
        private Path workDir;
        private String rateLimit = "none";
        private long checkpointEvery;
        private Path resume;
        private boolean overlap = true;
        private WireDtype wireDtype = WireDtype.FP32;
        private WireSecurity wireSecurity = DEFAULT_WIRE;
        private Endpoint endpoint;
        private int evalWindows = TrainerConfig.DEFAULT_EVAL_WINDOWS;
        private int flows = 1;
        private SyncMode sync = SyncMode.DDP;
        private DilocoConfig diloco;
        private OuterDtype outerDtype = OuterDtype.DEFAULT;

        private Builder() {}

        /** The cluster's fields: topology, prefix, gateway mode, job id and token, work directory, endpoint. */
        public Builder cluster(ClusterRun.Spec c) {
            return topology(c.topology()).prefix(c.prefix()).gatewayMode(c.gatewayMode()).jobId(c.jobId())
                    .jobToken(c.jobToken()).workDir(c.workDir()).endpoint(c.endpoint()).flows(c.flows());
        }

        public Builder topology(Path v) { topology = v; return this; }
        public Builder prefix(String v) { prefix = v; return this; }
        public Builder gatewayMode(GatewayMode v) { gatewayMode = v; return this; }
        public Builder algorithm(Algorithm v) { algorithm = v; return this; }
        public Builder preset(String v) { preset = v; return this; }
        public Builder steps(long v) { steps = v; return this; }
        public Builder globalBatch(int v) { globalBatch = v; return this; }
        public Builder seed(long v) { seed = v; return this; }
        public Builder learningRate(double v) { learningRate = v; return this; }
        public Builder warmupSteps(long v) { warmupSteps = v; return this; }
        public Builder evalEvery(long v) { evalEvery = v; return this; }
        public Builder checksumEvery(long v) { checksumEvery = v; return this; }
        public Builder data(Path v) { data = v; return this; }
        public Builder jobId(int v) { jobId = v; return this; }
        public Builder jobToken(int v) { jobToken = v; return this; }
        public Builder threadsPerWorker(int v) { threadsPerWorker = v; return this; }
        public Builder bucketBytes(long v) { bucketBytes = v; return this; }
        public Builder pacingBytesPerSecond(long v) { pacingBytesPerSecond = v; return this; }
        public Builder workDir(Path v) { workDir = v; return this; }
        /** Informational: the inter-DC link rate of the topology ("none" by default). */
        public Builder rateLimit(String v) { rateLimit = v; return this; }
        public Builder checkpointEvery(long v) { checkpointEvery = v; return this; }
        public Builder resume(Path v) { resume = v; return this; }
        public Builder overlap(boolean v) { overlap = v; return this; }
        public Builder wireDtype(WireDtype v) { wireDtype = v; return this; }
        public Builder wireSecurity(WireSecurity v) { wireSecurity = v; return this; }
        /** null: the gateway mode's default. */
        public Builder endpoint(Endpoint v) { endpoint = v; return this; }
        public Builder evalWindows(int v) { evalWindows = v; return this; }
        public Builder flows(int v) { flows = v; return this; }
        /** ddp (the default) or diloco; diloco also needs {@link #diloco(DilocoConfig)}. */
        public Builder sync(SyncMode v) { sync = v; return this; }
        public Builder diloco(DilocoConfig v) { diloco = v; return this; }
        public Builder outerDtype(OuterDtype v) { outerDtype = v; return this; }

        public TrainJobSpec build() {
            return new TrainJobSpec(topology, prefix, gatewayMode, algorithm, preset, steps, globalBatch, seed,
                    learningRate, warmupSteps, evalEvery, checksumEvery, data, jobId, jobToken, threadsPerWorker,
                    bucketBytes, pacingBytesPerSecond, workDir, rateLimit, checkpointEvery, resume, overlap, wireDtype,
                    wireSecurity, endpoint, evalWindows, flows, sync, diloco, outerDtype);
        }
    }

    /** The emulated cluster this job runs on: what {@link TrainingJob} brings up. */
    public ClusterRun.Spec cluster() {
        return new ClusterRun.Spec(topology, prefix, gatewayMode, jobId, jobToken, workDir, endpoint, flows);
    }

    /** Where periodic checkpoints go: checkpoints/ in the work directory. */
    public Path checkpointDir() {
        return workDir.resolve("checkpoints");
    }

    /** The job secret the launcher generates for this run (readable by its owner only). */
    public Path secretFile() {
        return workDir.resolve("job.secret");
    }

    /**
     * The run nonce the launcher generates for this run (32 hex digits, not secret): every worker of the run derives
     * its wire keys from the job secret, the job id and it.
     */
    public Path runNonceFile() {
        return workDir.resolve("job.run");
    }

    /** The secret and run nonce files together: what the launcher issues and every worker reads. */
    public RunKeys runKeys() {
        return new RunKeys(secretFile(), runNonceFile());
    }

    public void write(Path file) throws IOException {
        Properties p = new Properties();
        cluster().writeTo(p);
        p.setProperty("algorithm", algorithm.configName());
        p.setProperty("preset", preset);
        p.setProperty("steps", Long.toString(steps));
        p.setProperty("globalBatch", Integer.toString(globalBatch));
        p.setProperty("seed", Long.toString(seed));
        p.setProperty("learningRate", Double.toString(learningRate));
        p.setProperty("warmupSteps", Long.toString(warmupSteps));
        p.setProperty("evalEvery", Long.toString(evalEvery));
        p.setProperty("checksumEvery", Long.toString(checksumEvery));
        p.setProperty("data", data.toAbsolutePath().toString());
        p.setProperty("threadsPerWorker", Integer.toString(threadsPerWorker));
        p.setProperty("bucketBytes", Long.toString(bucketBytes));
        p.setProperty("pacingBytesPerSecond", Long.toString(pacingBytesPerSecond));
        p.setProperty("rateLimit", rateLimit);
        p.setProperty("checkpointEvery", Long.toString(checkpointEvery));
        if (resume != null) p.setProperty("resume", resume.toAbsolutePath().toString());
        p.setProperty("overlap", Boolean.toString(overlap));
        p.setProperty("wireDtype", wireDtype.configName());
        p.setProperty("wireSecurity", wireSecurity.configName());
        p.setProperty("evalWindows", Integer.toString(evalWindows));
        p.setProperty("sync", sync.configName());
        p.setProperty("outerDtype", outerDtype.configName());
        if (diloco != null) {
            p.setProperty("syncEvery", Integer.toString(diloco.syncEvery()));
            p.setProperty("fragments", Integer.toString(diloco.fragments()));
            p.setProperty("fragmentSyncDelay", Integer.toString(diloco.fragmentSyncDelay()));
            p.setProperty("outerLr", Double.toString(diloco.outerLearningRate()));
            p.setProperty("outerMomentum", Double.toString(diloco.outerMomentum()));
        }
        JobProperties.write(p, file, "XAForward training job");
    }

    public static TrainJobSpec read(Path file) throws IOException {
        Properties p = JobProperties.read(file);
        Builder b = builder()
                .cluster(ClusterRun.Spec.readFrom(p))
                .algorithm(Algorithm.fromName(p.getProperty("algorithm")))
                .preset(p.getProperty("preset"))
                .steps(Long.parseLong(p.getProperty("steps")))
                .globalBatch(Integer.parseInt(p.getProperty("globalBatch")))
                .seed(Long.parseLong(p.getProperty("seed")))
                .learningRate(Double.parseDouble(p.getProperty("learningRate")))
                .warmupSteps(Long.parseLong(p.getProperty("warmupSteps")))
                .evalEvery(Long.parseLong(p.getProperty("evalEvery")))
                .checksumEvery(Long.parseLong(p.getProperty("checksumEvery")))
                .data(Path.of(p.getProperty("data")))
                .threadsPerWorker(Integer.parseInt(p.getProperty("threadsPerWorker")))
                .bucketBytes(Long.parseLong(p.getProperty("bucketBytes")))
                .pacingBytesPerSecond(Long.parseLong(p.getProperty("pacingBytesPerSecond")))
                .rateLimit(p.getProperty("rateLimit"))
                .checkpointEvery(Long.parseLong(p.getProperty("checkpointEvery", "0")))
                .resume(p.getProperty("resume") == null ? null : Path.of(p.getProperty("resume")))
                .overlap(Boolean.parseBoolean(p.getProperty("overlap", "true")))
                .wireDtype(WireDtype.fromName(p.getProperty("wireDtype", WireDtype.FP32.configName())))
                .wireSecurity(WireSecurity.fromName(p.getProperty("wireSecurity", DEFAULT_WIRE_SECURITY)));
        if (p.getProperty("evalWindows") != null) b.evalWindows(Integer.parseInt(p.getProperty("evalWindows")));
        SyncMode sync = SyncMode.fromName(p.getProperty("sync", SyncMode.DDP.configName()));
        b.sync(sync).outerDtype(OuterDtype.fromName(p.getProperty("outerDtype", OuterDtype.DEFAULT.configName())));
        if (sync == SyncMode.DILOCO) {
            b.diloco(new DilocoConfig(Integer.parseInt(p.getProperty("syncEvery")),
                    Integer.parseInt(p.getProperty("fragments")), Integer.parseInt(p.getProperty("fragmentSyncDelay")),
                    Double.parseDouble(p.getProperty("outerLr")), Double.parseDouble(p.getProperty("outerMomentum"))));
        }
        return b.build();
    }
}
