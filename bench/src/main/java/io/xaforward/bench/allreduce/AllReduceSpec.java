package io.xaforward.bench.allreduce;

import io.xaforward.cluster.ClusterRun;
import io.xaforward.cluster.JobProperties;
import io.xaforward.cluster.NetworkCpu;
import io.xaforward.cluster.RunKeys;
import io.xaforward.collective.Algorithm;
import io.xaforward.transport.WireSecurity;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.stream.Collectors;

/**
 * One all-reduce job across the emulated data centers, shared by the launcher ({@link AllReduceJob}) and every
 * worker JVM ({@link AllReduceWorkerMain}) through a properties file.
 *
 * <p>Each worker runs {@code runs} rounds; a round does, for every size and then every algorithm, {@code warmup}
 * untimed all-reduces (first round only), a barrier, {@code iterations} timed all-reduces (SUM; MEAN for long
 * series, which keeps values bounded) and, in the first {@code verifyRuns}
 * rounds, one more all-reduce (SUM) of freshly generated input that is checked against a reference (see
 * {@link InputPattern}). With {@code goodputBytes > 0}, rank 0 and the first rank of another data center then
 * exchange that many bytes in both directions, {@code goodputRepeats} times, to measure WAN goodput.
 *
 * @param cluster            testbed, gateway mode, job id and the token the gateways accept
 * @param sizesBytes         all-reduce sizes (rounded down to whole floats)
 * @param pattern            input values: random floats (checked within a bound) or integer-valued (checked exactly)
 * @param operationTimeout   how long one collective operation (and the start-up rendezvous) may take
 * @param pacingBytesPerSecond transport pacing of every rank, 0 = off
 * @param wireSecurity       how the ranks protect their datagrams; an authenticated mode uses the job secret that
 *                           the launcher writes beside the properties file ({@link #SECRET_FILE})
 */
public record AllReduceSpec(ClusterRun.Spec cluster, List<Long> sizesBytes, List<Algorithm> algorithms, int warmup,
                            int iterations, int runs, int verifyRuns, InputPattern.Kind pattern, long seed,
                            long bucketBytes, Duration operationTimeout, long pacingBytesPerSecond,
                            long goodputBytes, int goodputRepeats, WireSecurity wireSecurity) {
    /** The job secret of an authenticated wire-security mode, in the job's work directory (mode 0600). */
    public static final String SECRET_FILE = "job.secret";

    /** A job with the transport's default protection for a job without a secret (crc32c). */
    public AllReduceSpec(ClusterRun.Spec cluster, List<Long> sizesBytes, List<Algorithm> algorithms, int warmup,
                         int iterations, int runs, int verifyRuns, InputPattern.Kind pattern, long seed,
                         long bucketBytes, Duration operationTimeout, long pacingBytesPerSecond,
                         long goodputBytes, int goodputRepeats) {
        this(cluster, sizesBytes, algorithms, warmup, iterations, runs, verifyRuns, pattern, seed, bucketBytes,
                operationTimeout, pacingBytesPerSecond, goodputBytes, goodputRepeats, WireSecurity.CRC32C);
    }

    public AllReduceSpec {
        Objects.requireNonNull(wireSecurity, "wireSecurity");
        Objects.requireNonNull(cluster, "cluster");
        sizesBytes = List.copyOf(sizesBytes);
        algorithms = List.copyOf(algorithms);
        for (long s : sizesBytes) {
            if (s < Float.BYTES || s / Float.BYTES > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("all-reduce size must be 4 bytes .. 8 GiB, was " + s);
            }
        }
        if (algorithms.isEmpty() && !sizesBytes.isEmpty()) throw new IllegalArgumentException("no algorithm given");
        if (iterations < 1 || warmup < 0 || runs < 1 || verifyRuns < 0) {
            throw new IllegalArgumentException("need iterations >= 1, runs >= 1, warmup >= 0, verifyRuns >= 0");
        }
        if (operationTimeout.isZero() || operationTimeout.isNegative()) throw new IllegalArgumentException("operation timeout must be positive");
        if (goodputBytes < 0 || goodputRepeats < 0) throw new IllegalArgumentException("goodput bytes and repeats must not be negative");
    }

    /**
     * Which threads' CPU is the emulated network's ({@link NetworkCpu}), written by the launcher
     * once the job is up and placed; rank 0 reads it around its timed all-reduces.
     */
    public Path networkCpuFile() {
        return cluster.workDir().resolve("network-cpu.properties");
    }

    /** A copy with another cluster (prefix, mode, ...), e.g. for the next run of a benchmark. */
    public AllReduceSpec withCluster(ClusterRun.Spec c) {
        return new AllReduceSpec(c, sizesBytes, algorithms, warmup, iterations, runs, verifyRuns, pattern, seed, bucketBytes,
                operationTimeout, pacingBytesPerSecond, goodputBytes, goodputRepeats, wireSecurity);
    }

    /** Where the job secret of an authenticated mode lies. */
    public Path secretFile() {
        return cluster.workDir().resolve(SECRET_FILE);
    }

    /** The run nonce the launcher draws for this run (32 hex digits, not secret; the wire keys depend on it). */
    public Path runNonceFile() {
        return cluster.workDir().resolve("allreduce.run");
    }

    /** The secret and run nonce files together: what the launcher issues and every worker reads. */
    public RunKeys runKeys() {
        return new RunKeys(secretFile(), runNonceFile());
    }

    public void write(Path file) throws IOException {
        Properties p = new Properties();
        cluster.writeTo(p);
        p.setProperty("sizesBytes", sizesBytes.stream().map(String::valueOf).collect(Collectors.joining(",")));
        p.setProperty("algorithms", algorithms.stream().map(Algorithm::configName).collect(Collectors.joining(",")));
        p.setProperty("warmup", Integer.toString(warmup));
        p.setProperty("iterations", Integer.toString(iterations));
        p.setProperty("runs", Integer.toString(runs));
        p.setProperty("verifyRuns", Integer.toString(verifyRuns));
        p.setProperty("pattern", pattern.name());
        p.setProperty("seed", Long.toString(seed));
        p.setProperty("bucketBytes", Long.toString(bucketBytes));
        p.setProperty("operationTimeoutMs", Long.toString(operationTimeout.toMillis()));
        p.setProperty("pacingBytesPerSecond", Long.toString(pacingBytesPerSecond));
        p.setProperty("goodputBytes", Long.toString(goodputBytes));
        p.setProperty("goodputRepeats", Integer.toString(goodputRepeats));
        p.setProperty("wireSecurity", wireSecurity.configName());
        JobProperties.write(p, file, "XAForward all-reduce job");
    }

    public static AllReduceSpec read(Path file) throws IOException {
        Properties p = JobProperties.read(file);
        ClusterRun.Spec c = ClusterRun.Spec.readFrom(p);
        return new AllReduceSpec(c,
                split(p.getProperty("sizesBytes")).stream().map(Long::parseLong).toList(),
                split(p.getProperty("algorithms")).stream().map(Algorithm::fromName).toList(),
                Integer.parseInt(p.getProperty("warmup")), Integer.parseInt(p.getProperty("iterations")),
                Integer.parseInt(p.getProperty("runs")), Integer.parseInt(p.getProperty("verifyRuns")),
                InputPattern.Kind.valueOf(p.getProperty("pattern")), Long.parseLong(p.getProperty("seed")),
                Long.parseLong(p.getProperty("bucketBytes")), Duration.ofMillis(Long.parseLong(p.getProperty("operationTimeoutMs"))),
                Long.parseLong(p.getProperty("pacingBytesPerSecond")), Long.parseLong(p.getProperty("goodputBytes")),
                Integer.parseInt(p.getProperty("goodputRepeats")),
                WireSecurity.fromName(p.getProperty("wireSecurity", WireSecurity.CRC32C.configName())));
    }

    private static List<String> split(String s) {
        if (s == null || s.isBlank()) return List.of();
        return Arrays.stream(s.split(",")).map(String::trim).filter(x -> !x.isEmpty()).toList();
    }
}
