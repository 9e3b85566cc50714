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

    /** ddp or diloco, as the trainer's outer loop says ({@link SyncMode#of}). */
    public SyncMode sync() {
        return SyncMode.of(trainer.diloco());
    }

    public Path workDir() {
        return cluster.workDir();
    }

    /**
     * The check of the synchronisation settings before anything starts (the trainer's own, made early): DiLoCo's
     * fragments must fit the model's layers. ddp has no outer loop to check.
     */
    public static void checkSync(DilocoConfig diloco, String preset) {
        if (diloco != null) diloco.checkModel(ModelConfig.preset(preset));
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

    /**
     * Builds a {@link TrainJobSpec}; see {@link #builder()} for the defaults. The trainer part is held whole, as a
     * {@link TrainerConfig.Builder}: {@link #trainer} takes one, and the trainer setters here change it in place
     * (another preset keeps every other setting). Whether the job is ddp or diloco is the trainer's outer loop
     * alone ({@link #diloco}; {@link SyncMode#of}).
     */
    public static final class Builder {
        private Path topology;
        private String prefix;
        private GatewayMode gatewayMode;
        private Algorithm algorithm;
        private long checksumEvery;
        private Path data;
        private int jobId;
        private int jobToken;
        private long bucketBytes;
        private long pacingBytesPerSecond;
        private Path workDir;
        private String rateLimit = "none";
        private Path resume;
        private WireDtype wireDtype = WireDtype.FP32;
        private WireSecurity wireSecurity = DEFAULT_WIRE;
        private Endpoint endpoint;
        private int flows = 1;
        private OuterDtype outerDtype = OuterDtype.DEFAULT;
        private Duration opTimeout = Duration.ofSeconds(DEFAULT_OP_TIMEOUT_SECONDS);
        /**
         * The trainer part; its preset is set by {@link #preset} or {@link #trainer}. What a job must say (steps,
         * batch, seed, learning rate, warm-up, threads) starts unset, at 0, as the job's own fields always did.
         */
        private TrainerConfig.Builder trainer = TrainerConfig.builder(null).steps(0).globalBatch(0).seed(0)
                .learningRate(0).warmupSteps(0).threads(0).evalEvery(0).overlap(true);

        private Builder() {}

        /** The cluster's fields: topology, prefix, gateway mode, job id and token, work directory, endpoint. */
        public Builder cluster(ClusterRun.Spec c) {
            return topology(c.topology()).prefix(c.prefix()).gatewayMode(c.gatewayMode()).jobId(c.jobId())
                    .jobToken(c.jobToken()).workDir(c.workDir()).endpoint(c.endpoint()).flows(c.flows());
        }

        /**
         * The trainer part, whole (its outer loop, and so the job's sync mode, included). Its checkpoint directory
         * is not taken: a job's checkpoints always go to checkpoints/ in its work directory.
         */
        public Builder trainer(TrainerConfig t) {
            trainer = t.toBuilder();
            return this;
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
        /** Another preset for the trainer part; its other settings are kept. */
        public Builder preset(String v) { trainer.preset(v); return this; }
        public Builder steps(long v) { trainer.steps(v); return this; }
        public Builder globalBatch(int v) { trainer.globalBatch(v); return this; }
        public Builder seed(long v) { trainer.seed(v); return this; }
        public Builder learningRate(double v) { trainer.learningRate(v); return this; }
        public Builder warmupSteps(long v) { trainer.warmupSteps(v); return this; }
        public Builder evalEvery(long v) { trainer.evalEvery(v); return this; }
        public Builder checksumEvery(long v) { checksumEvery = v; return this; }
        public Builder data(Path v) { data = v; return this; }
        public Builder jobId(int v) { jobId = v; return this; }
        public Builder jobToken(int v) { jobToken = v; return this; }
        public Builder threadsPerWorker(int v) { trainer.threads(v); return this; }
        public Builder bucketBytes(long v) { bucketBytes = v; return this; }
        public Builder pacingBytesPerSecond(long v) { pacingBytesPerSecond = v; return this; }
        public Builder workDir(Path v) { workDir = v; return this; }
        /** Informational: the inter-DC link rate of the topology ("none" by default). */
        public Builder rateLimit(String v) { rateLimit = v; return this; }
        public Builder checkpointEvery(long v) { trainer.checkpointEvery(v); return this; }
        public Builder resume(Path v) { resume = v; return this; }
        public Builder overlap(boolean v) { trainer.overlap(v); return this; }
        public Builder wireDtype(WireDtype v) { wireDtype = v; return this; }
        public Builder wireSecurity(WireSecurity v) { wireSecurity = v; return this; }
        /** null: the gateway mode's default. */
        public Builder endpoint(Endpoint v) { endpoint = v; return this; }
        public Builder evalWindows(int v) { trainer.evalWindows(v); return this; }
        public Builder flows(int v) { flows = v; return this; }
        /** DiLoCo's outer loop (diloco), or null (ddp, the default): the trainer's, the one source of the mode. */
        public Builder diloco(DilocoConfig v) { trainer.diloco(v); return this; }
        public Builder outerDtype(OuterDtype v) { outerDtype = v; return this; }
        public Builder opTimeout(Duration v) { opTimeout = v; return this; }

        public TrainJobSpec build() {
            ClusterRun.Spec cluster = new ClusterRun.Spec(topology, prefix, gatewayMode, jobId, jobToken, workDir,
                    endpoint, flows);
            CollectiveSettings collective = new CollectiveSettings(algorithm, bucketBytes, wireDtype,
                    pacingBytesPerSecond, outerDtype);
            // A job's checkpoints go to checkpoints/ in its work directory, and a job without periodic ones names none.
            TrainerConfig built = trainer.checkpointDir(workDir == null ? null : CheckpointNames.jobDirectory(workDir))
                    .build();
            if (built.checkpointEvery() == 0) built = built.toBuilder().checkpointDir(null).build();
            return new TrainJobSpec(cluster, built, collective, wireSecurity, data, checksumEvery, resume, rateLimit,
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
