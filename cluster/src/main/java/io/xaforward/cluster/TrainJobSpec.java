package io.xaforward.cluster;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.OuterDtype;
import io.xaforward.collective.WireDtype;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.training.DilocoConfig;
import io.xaforward.training.ModelConfig;
import io.xaforward.training.TrainerConfig;
import io.xaforward.transport.WireSecurity;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * Everything a distributed training run needs, shared by the launcher and every worker process, composed of parts
 * (as Aeron nests its contexts): the emulated cluster it runs on ({@link ClusterRun.Spec}), the trainer's
 * hyper-parameters ({@link TrainerConfig}), how gradients are reduced and sent ({@link CollectiveSettings}) and the
 * wire security, plus what belongs to the run alone (its data, resume file, checksum period). {@code xaf worker}
 * fills the same trainer and collective parts ({@link io.xaforward.cluster.deploy.WorkerOptions}). Written to the
 * worker's job.properties by {@link TrainJobCodec}. Defaults make {@code xaf demo} a few-minute run on two cores.
 *
 * @param cluster       topology, namespace prefix, gateway mode, job id and token, work directory, endpoint, flows
 * @param trainer       preset, steps, batch, seed, learning rate, warm-up, evaluation, threads, overlap, periodic
 *                      checkpoints (into {@link #checkpointDir()}) and DiLoCo's outer loop (null under ddp)
 * @param collective    algorithm, bucket bytes, wire format, pacing, DiLoCo's outer format
 * @param wireSecurity  how datagrams are protected: crc32c, mac or encrypt (the authenticated ones read the job
 *                      secret that the launcher writes to {@link #secretFile()})
 * @param data          training data: a prepared directory, a .bin token file or a text file (byte-level tokens);
 *                      see TrainingData
 * @param checksumEvery every rank's weight checksum every N steps, compared across the ranks (0 = never)
 * @param resume        checkpoint file every rank starts from (its step, weights and optimizer state), or null
 * @param rateLimit     informational: the inter-DC link rate of the topology, or "none"
 * @param opTimeout     how long a worker's all-reduce waits for a peer before the job fails
 */
public record TrainJobSpec(ClusterRun.Spec cluster, TrainerConfig trainer, CollectiveSettings collective,
                           WireSecurity wireSecurity, Path data, long checksumEvery, Path resume, String rateLimit,
                           Duration opTimeout) {

    /** How long an all-reduce waits for a peer unless --op-timeout says otherwise. */
    public static final long DEFAULT_OP_TIMEOUT_SECONDS = 120;

    public TrainJobSpec {
        Objects.requireNonNull(cluster, "cluster");
        Objects.requireNonNull(trainer, "trainer");
        Objects.requireNonNull(collective, "collective");
        Objects.requireNonNull(wireSecurity, "wireSecurity");
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(rateLimit, "rateLimit");
        Objects.requireNonNull(opTimeout, "opTimeout");
        if (opTimeout.toSeconds() < 1) {
            throw new IllegalArgumentException("--op-timeout must be at least 1 second, was " + opTimeout.toSeconds());
        }
        if (trainer.checkpointEvery() > 0 && !CheckpointNames.jobDirectory(cluster.workDir()).equals(trainer.checkpointDir())) {
            throw new IllegalArgumentException("a job's checkpoints go to checkpoints/ in its work directory, not "
                    + trainer.checkpointDir());
        }
    }

    /** ddp or diloco: diloco exactly when the trainer has DiLoCo's outer loop. */
    public SyncMode sync() {
        return trainer.diloco() == null ? SyncMode.DDP : SyncMode.DILOCO;
    }

    public Path workDir() {
        return cluster.workDir();
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
        return new Builder().cluster(cluster).trainer(trainer).collective(collective).wireSecurity(wireSecurity)
                .data(data).checksumEvery(checksumEvery).resume(resume).rateLimit(rateLimit).opTimeout(opTimeout);
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
        private Duration opTimeout = Duration.ofSeconds(DEFAULT_OP_TIMEOUT_SECONDS);

        /** Where the trainer's settings that have no setter here come from. */
        private TrainerConfig trainerDefaults;

        private Builder() {}

        /** The cluster's fields: topology, prefix, gateway mode, job id and token, work directory, endpoint. */
        public Builder cluster(ClusterRun.Spec c) {
            return topology(c.topology()).prefix(c.prefix()).gatewayMode(c.gatewayMode()).jobId(c.jobId())
                    .jobToken(c.jobToken()).workDir(c.workDir()).endpoint(c.endpoint()).flows(c.flows());
        }

        /**
         * The trainer's fields. Its checkpoint directory is not taken: a job's checkpoints always go to checkpoints/
         * in its work directory. What the job file does not carry (minimum learning rate, weight decay, gradient
         * clipping) is kept as given.
         */
        public Builder trainer(TrainerConfig t) {
            trainerDefaults = t;
            return preset(t.preset()).steps(t.steps()).globalBatch(t.globalBatch()).seed(t.seed())
                    .learningRate(t.learningRate()).warmupSteps(t.warmupSteps()).evalEvery(t.evalEvery())
                    .evalWindows(t.evalWindows()).threadsPerWorker(t.threads()).overlap(t.overlap())
                    .checkpointEvery(t.checkpointEvery()).sync(t.diloco() == null ? SyncMode.DDP : SyncMode.DILOCO)
                    .diloco(t.diloco());
        }

        /** The collective fields: algorithm, bucket bytes, wire format, pacing, outer format. */
        public Builder collective(CollectiveSettings c) {
            return algorithm(c.algorithm()).bucketBytes(c.bucketBytes()).wireDtype(c.wireDtype())
                    .pacingBytesPerSecond(c.pacingBytesPerSecond()).outerDtype(c.outerDtype());
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
        public Builder opTimeout(Duration v) { opTimeout = v; return this; }

        public TrainJobSpec build() {
            Objects.requireNonNull(preset, "preset");
            Objects.requireNonNull(sync, "sync");
            ClusterRun.Spec cluster = new ClusterRun.Spec(topology, prefix, gatewayMode, jobId, jobToken, workDir,
                    endpoint, flows);
            if (evalWindows <= 0) {
                throw new IllegalArgumentException("--eval-windows must be positive, was " + evalWindows);
            }
            CollectiveSettings collective = new CollectiveSettings(algorithm, bucketBytes, wireDtype,
                    pacingBytesPerSecond, outerDtype);
            checkSync(sync, diloco, outerDtype, preset);
            TrainerConfig.Builder t = trainerDefaults != null && trainerDefaults.preset().equals(preset)
                    ? trainerDefaults.toBuilder() : TrainerConfig.builder(preset);
            TrainerConfig trainer = t.steps(steps).globalBatch(globalBatch).seed(seed).learningRate(learningRate)
                    .warmupSteps(warmupSteps).evalEvery(evalEvery).evalWindows(evalWindows).threads(threadsPerWorker)
                    .overlap(overlap).checkpointEvery(checkpointEvery)
                    .checkpointDir(checkpointEvery > 0 ? CheckpointNames.jobDirectory(workDir) : null).diloco(diloco)
                    .build();
            return new TrainJobSpec(cluster, trainer, collective, wireSecurity, data, checksumEvery, resume, rateLimit,
                    opTimeout);
        }
    }

    /** Where periodic checkpoints go: checkpoints/ in the work directory. */
    public Path checkpointDir() {
        return CheckpointNames.jobDirectory(workDir());
    }

    /** The job secret the launcher generates for this run (readable by its owner only). */
    public Path secretFile() {
        return workDir().resolve("job.secret");
    }

    /**
     * The run nonce the launcher generates for this run (32 hex digits, not secret): every worker of the run derives
     * its wire keys from the job secret, the job id and it.
     */
    public Path runNonceFile() {
        return workDir().resolve("job.run");
    }

    /** The secret and run nonce files together: what the launcher issues and every worker reads. */
    public RunKeys runKeys() {
        return new RunKeys(secretFile(), runNonceFile());
    }
}
