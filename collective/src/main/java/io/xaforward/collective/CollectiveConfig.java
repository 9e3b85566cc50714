package io.xaforward.collective;

import java.time.Duration;
import java.util.Objects;

/**
 * Settings of {@link Collectives}: the bucket size that tensors are split into (buckets travel pipelined, each on its
 * own message ids), the default all-reduce algorithm, and how long one operation may take before it fails with a
 * {@link CollectiveTimeoutException} naming the ranks it still waits for, and the number format of all-reduce
 * payloads on the wire ({@link WireDtype}).
 */
public record CollectiveConfig(long bucketBytes, Algorithm algorithm, Duration operationTimeout, WireDtype wireDtype) {
    public static final long DEFAULT_BUCKET_BYTES = 4L << 20;
    public static final Duration DEFAULT_OPERATION_TIMEOUT = Duration.ofSeconds(60);

    public CollectiveConfig {
        Objects.requireNonNull(algorithm, "algorithm");
        Objects.requireNonNull(wireDtype, "wireDtype");
        if (wireDtype != WireDtype.FP32 && algorithm == Algorithm.PARAMETER_SERVER) {
            throw new IllegalArgumentException(wireDtype.configName() + " on the wire is implemented for the ring "
                    + "and hierarchical all-reduce, not the parameter server");
        }
        Objects.requireNonNull(operationTimeout, "operationTimeout");
        if (bucketBytes < 4 || bucketBytes % 4 != 0 || bucketBytes > (1L << 30)) {
            throw new IllegalArgumentException("bucketBytes must be a positive multiple of 4 up to 1 GiB, was "
                    + bucketBytes);
        }
        if (operationTimeout.isNegative() || operationTimeout.isZero()) {
            throw new IllegalArgumentException("operationTimeout must be positive, was " + operationTimeout);
        }
    }

    /** float32 on the wire. */
    public CollectiveConfig(long bucketBytes, Algorithm algorithm, Duration operationTimeout) {
        this(bucketBytes, algorithm, operationTimeout, WireDtype.FP32);
    }

    /** 4 MB buckets, hierarchical all-reduce, 60 s per operation. */
    public static CollectiveConfig defaults() {
        return new CollectiveConfig(DEFAULT_BUCKET_BYTES, Algorithm.HIERARCHICAL, DEFAULT_OPERATION_TIMEOUT);
    }

    public CollectiveConfig withBucketBytes(long bytes) {
        return new CollectiveConfig(bytes, algorithm, operationTimeout, wireDtype);
    }

    public CollectiveConfig withAlgorithm(Algorithm a) {
        return new CollectiveConfig(bucketBytes, a, operationTimeout, wireDtype);
    }

    public CollectiveConfig withOperationTimeout(Duration timeout) {
        return new CollectiveConfig(bucketBytes, algorithm, timeout, wireDtype);
    }

    public CollectiveConfig withWireDtype(WireDtype dtype) {
        return new CollectiveConfig(bucketBytes, algorithm, operationTimeout, dtype);
    }

    int bucketFloats() {
        return (int) (bucketBytes / Float.BYTES);
    }
}
