package io.xaforward.cluster;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.WireDtype;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.training.TrainerConfig;
import io.xaforward.transport.WireSecurity;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Locale;
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
 * @param wireDtype    number format of gradients on the wire: fp32 or bf16
 * @param endpoint     the workers' {@link Endpoint}: afxdp or udp (null: the gateway mode's default)
 * @param evalWindows  validation windows per evaluation when the split holds more (the whole split otherwise)
 */
public record TrainJobSpec(Path topology, String prefix, GatewayMode gatewayMode, Algorithm algorithm, String preset,
                           long steps, int globalBatch, long seed, double learningRate, long warmupSteps,
                           long evalEvery, long checksumEvery, Path data, int jobId, int jobToken,
                           int threadsPerWorker, long bucketBytes, long pacingBytesPerSecond, Path workDir,
                           String rateLimit, long checkpointEvery, Path resume, boolean overlap,
                           WireDtype wireDtype, WireSecurity wireSecurity, Endpoint endpoint, int evalWindows) {

    public TrainJobSpec {
        Objects.requireNonNull(gatewayMode, "gatewayMode");
        Objects.requireNonNull(algorithm, "algorithm");
        Objects.requireNonNull(wireDtype, "wireDtype");
        Objects.requireNonNull(wireSecurity, "wireSecurity");
        endpoint = Endpoint.resolve(endpoint, gatewayMode);
        if (evalWindows <= 0) {
            throw new IllegalArgumentException("--eval-windows must be positive, was " + evalWindows);
        }
    }

    /** The default protection of a job's datagrams: authenticated with a per-job secret. */
    public static final String DEFAULT_WIRE_SECURITY = "mac";

    private static final WireSecurity DEFAULT_WIRE = WireSecurity.fromName(DEFAULT_WIRE_SECURITY);

    /** The default number of validation windows. */
    public TrainJobSpec(Path topology, String prefix, GatewayMode gatewayMode, Algorithm algorithm, String preset,
                        long steps, int globalBatch, long seed, double learningRate, long warmupSteps,
                        long evalEvery, long checksumEvery, Path data, int jobId, int jobToken,
                        int threadsPerWorker, long bucketBytes, long pacingBytesPerSecond, Path workDir,
                        String rateLimit, long checkpointEvery, Path resume, boolean overlap,
                        WireDtype wireDtype, WireSecurity wireSecurity, Endpoint endpoint) {
        this(topology, prefix, gatewayMode, algorithm, preset, steps, globalBatch, seed, learningRate, warmupSteps,
                evalEvery, checksumEvery, data, jobId, jobToken, threadsPerWorker, bucketBytes, pacingBytesPerSecond,
                workDir, rateLimit, checkpointEvery, resume, overlap, wireDtype, wireSecurity, endpoint,
                TrainerConfig.DEFAULT_EVAL_WINDOWS);
    }

    /** The gateway mode's default endpoint. */
    public TrainJobSpec(Path topology, String prefix, GatewayMode gatewayMode, Algorithm algorithm, String preset,
                        long steps, int globalBatch, long seed, double learningRate, long warmupSteps,
                        long evalEvery, long checksumEvery, Path data, int jobId, int jobToken,
                        int threadsPerWorker, long bucketBytes, long pacingBytesPerSecond, Path workDir,
                        String rateLimit, long checkpointEvery, Path resume, boolean overlap,
                        WireDtype wireDtype, WireSecurity wireSecurity) {
        this(topology, prefix, gatewayMode, algorithm, preset, steps, globalBatch, seed, learningRate, warmupSteps,
                evalEvery, checksumEvery, data, jobId, jobToken, threadsPerWorker, bucketBytes, pacingBytesPerSecond,
                workDir, rateLimit, checkpointEvery, resume, overlap, wireDtype, wireSecurity, null);
    }
    /** The default wire security. */
    public TrainJobSpec(Path topology, String prefix, GatewayMode gatewayMode, Algorithm algorithm, String preset,
                        long steps, int globalBatch, long seed, double learningRate, long warmupSteps,
                        long evalEvery, long checksumEvery, Path data, int jobId, int jobToken,
                        int threadsPerWorker, long bucketBytes, long pacingBytesPerSecond, Path workDir,
                        String rateLimit, long checkpointEvery, Path resume, boolean overlap, WireDtype wireDtype) {
        this(topology, prefix, gatewayMode, algorithm, preset, steps, globalBatch, seed, learningRate, warmupSteps,
                evalEvery, checksumEvery, data, jobId, jobToken, threadsPerWorker, bucketBytes, pacingBytesPerSecond,
                workDir, rateLimit, checkpointEvery, resume, overlap, wireDtype, DEFAULT_WIRE);
    }

    /** Overlap on, float32 on the wire, the default wire security. */
    public TrainJobSpec(Path topology, String prefix, GatewayMode gatewayMode, Algorithm algorithm, String preset,
                        long steps, int globalBatch, long seed, double learningRate, long warmupSteps,
                        long evalEvery, long checksumEvery, Path data, int jobId, int jobToken,
                        int threadsPerWorker, long bucketBytes, long pacingBytesPerSecond, Path workDir,
                        String rateLimit, long checkpointEvery, Path resume) {
        this(topology, prefix, gatewayMode, algorithm, preset, steps, globalBatch, seed, learningRate, warmupSteps,
                evalEvery, checksumEvery, data, jobId, jobToken, threadsPerWorker, bucketBytes, pacingBytesPerSecond,
                workDir, rateLimit, checkpointEvery, resume, true, WireDtype.FP32, DEFAULT_WIRE);
    }

    /** A job that neither resumes nor writes periodic checkpoints. */
    public TrainJobSpec(Path topology, String prefix, GatewayMode gatewayMode, Algorithm algorithm, String preset,
                        long steps, int globalBatch, long seed, double learningRate, long warmupSteps,
                        long evalEvery, long checksumEvery, Path data, int jobId, int jobToken,
                        int threadsPerWorker, long bucketBytes, long pacingBytesPerSecond, Path workDir,
                        String rateLimit) {
        this(topology, prefix, gatewayMode, algorithm, preset, steps, globalBatch, seed, learningRate, warmupSteps,
                evalEvery, checksumEvery, data, jobId, jobToken, threadsPerWorker, bucketBytes, pacingBytesPerSecond,
                workDir, rateLimit, 0, null);
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
        p.setProperty("topology", topology.toAbsolutePath().toString());
        p.setProperty("prefix", prefix);
        p.setProperty("gatewayMode", gatewayMode.configName());
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
        p.setProperty("jobId", Integer.toString(jobId));
        p.setProperty("jobToken", Integer.toString(jobToken));
        p.setProperty("threadsPerWorker", Integer.toString(threadsPerWorker));
        p.setProperty("bucketBytes", Long.toString(bucketBytes));
        p.setProperty("pacingBytesPerSecond", Long.toString(pacingBytesPerSecond));
        p.setProperty("workDir", workDir.toAbsolutePath().toString());
        p.setProperty("rateLimit", rateLimit);
        p.setProperty("checkpointEvery", Long.toString(checkpointEvery));
        if (resume != null) p.setProperty("resume", resume.toAbsolutePath().toString());
        p.setProperty("overlap", Boolean.toString(overlap));
        p.setProperty("wireDtype", wireDtype.name().toLowerCase(Locale.ROOT));
        p.setProperty("wireSecurity", wireSecurity.cliName());
        p.setProperty("endpoint", endpoint.configName());
        p.setProperty("evalWindows", Integer.toString(evalWindows));
        JobProperties.write(p, file, "XAForward training job");
    }

    public static TrainJobSpec read(Path file) throws IOException {
        Properties p = JobProperties.read(file);
        return new TrainJobSpec(Path.of(p.getProperty("topology")), p.getProperty("prefix"),
                GatewayMode.fromName(p.getProperty("gatewayMode")), Algorithm.fromName(p.getProperty("algorithm")), p.getProperty("preset"), Long.parseLong(p.getProperty("steps")),
                Integer.parseInt(p.getProperty("globalBatch")), Long.parseLong(p.getProperty("seed")),
                Double.parseDouble(p.getProperty("learningRate")), Long.parseLong(p.getProperty("warmupSteps")),
                Long.parseLong(p.getProperty("evalEvery")), Long.parseLong(p.getProperty("checksumEvery")),
                Path.of(p.getProperty("data")), Integer.parseInt(p.getProperty("jobId")),
                Integer.parseInt(p.getProperty("jobToken")), Integer.parseInt(p.getProperty("threadsPerWorker")),
                Long.parseLong(p.getProperty("bucketBytes")), Long.parseLong(p.getProperty("pacingBytesPerSecond")),
                Path.of(p.getProperty("workDir")), p.getProperty("rateLimit"),
                Long.parseLong(p.getProperty("checkpointEvery", "0")),
                p.getProperty("resume") == null ? null : Path.of(p.getProperty("resume")),
                Boolean.parseBoolean(p.getProperty("overlap", "true")), WireDtype.parse(p.getProperty("wireDtype", "fp32")),
                WireSecurity.fromName(p.getProperty("wireSecurity", DEFAULT_WIRE_SECURITY)),
                p.getProperty("endpoint") == null ? null : Endpoint.fromName(p.getProperty("endpoint")),
                Integer.parseInt(p.getProperty("evalWindows", Integer.toString(TrainerConfig.DEFAULT_EVAL_WINDOWS))));
    }
}
