package io.xaforward.cluster;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.CollectiveConfig;
import io.xaforward.collective.OuterDtype;
import io.xaforward.collective.WireDtype;

import java.time.Duration;
import java.util.Objects;

/**
 * The collective part of a job ({@link TrainJobSpec}, {@link io.xaforward.cluster.deploy.JoinSpec}): how a rank's
 * gradients are reduced and put on the wire, the same on every rank. The operation timeout, which each spec holds
 * beside its start-up timeout, is given when the rank's {@link CollectiveConfig} is made ({@link #config}).
 *
 * @param algorithm            all-reduce algorithm: hierarchical, ring or ps
 * @param bucketBytes          gradient bytes per all-reduce bucket
 * @param wireDtype            number format of gradients on the wire: fp32, bf16, int8 or int4
 * @param pacingBytesPerSecond pace each rank's sending to this rate; 0 = unpaced
 * @param outerDtype           number format of DiLoCo's outer all-reduce (recorded under ddp too, where it is unused)
 */
public record CollectiveSettings(Algorithm algorithm, long bucketBytes, WireDtype wireDtype, long pacingBytesPerSecond,
                                 OuterDtype outerDtype) {
    public CollectiveSettings {
        Objects.requireNonNull(algorithm, "algorithm");
        Objects.requireNonNull(wireDtype, "wireDtype");
        Objects.requireNonNull(outerDtype, "outerDtype");
        if (pacingBytesPerSecond < 0) throw new IllegalArgumentException("--pacing-mbps must not be negative");
    }

    /** The given algorithm and bucket size; fp32 on the wire, unpaced, fp32 outer format. */
    public static CollectiveSettings of(Algorithm algorithm, long bucketBytes) {
        return new CollectiveSettings(algorithm, bucketBytes, WireDtype.FP32, 0, OuterDtype.DEFAULT);
    }

    public CollectiveSettings withWireDtype(WireDtype v) {
        return new CollectiveSettings(algorithm, bucketBytes, v, pacingBytesPerSecond, outerDtype);
    }

    public CollectiveSettings withPacing(long bytesPerSecond) {
        return new CollectiveSettings(algorithm, bucketBytes, wireDtype, bytesPerSecond, outerDtype);
    }

    public CollectiveSettings withOuterDtype(OuterDtype v) {
        return new CollectiveSettings(algorithm, bucketBytes, wireDtype, pacingBytesPerSecond, v);
    }

    /** The collectives' configuration of a rank whose every operation may wait {@code operationTimeout} for a peer. */
    public CollectiveConfig config(Duration operationTimeout) {
        return CollectiveConfig.defaults().withBucketBytes(bucketBytes).withAlgorithm(algorithm)
                .withOperationTimeout(operationTimeout).withWireDtype(wireDtype);
    }
}
