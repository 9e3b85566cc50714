package io.xaforward.cli;

import io.xaforward.cluster.CollectiveSettings;
import io.xaforward.collective.Algorithm;
import io.xaforward.collective.WireDtype;
import picocli.CommandLine.Option;

/**
 * How a rank's collectives run, the same on every rank: declared once, with one help text, for every command that
 * runs ranks: {@code xaf train} (its own mixin), {@code xaf worker} and {@code xaf agent} (through
 * {@link JoinOptions}), and so {@code xaf launch}, which passes them on.
 */
final class CollectiveOptions {
    @Option(paramLabel = "MB", names = "--bucket-mb", defaultValue = "4", description = "all-reduce bucket size in MB on the wire (default: ${DEFAULT-VALUE})")
    long bucketMb = 4;

    @Option(paramLabel = "ALGORITHM", names = "--algorithm", defaultValue = "hierarchical", converter = Words.AlgorithmWord.class,
            description = "hierarchical, ring or ps (default: ${DEFAULT-VALUE})")
    Algorithm algorithm = Algorithm.HIERARCHICAL;

    @Option(paramLabel = "fp32|bf16|int8|int4", names = "--wire-dtype", defaultValue = "fp32", converter = Words.WireDtypeWord.class, description = "all-reduce numbers on the wire, the same on every rank: fp32, "
            + "bf16 (half the bytes; rounded before sending, summed in fp32), or int8/int4 (blocks of 128 with one "
            + "scale, ~0.26/0.13 of fp32's bytes; coarse, made for DiLoCo's outer sync) (default: ${DEFAULT-VALUE})")
    WireDtype wireDtype = WireDtype.FP32;

    @Option(paramLabel = "MBPS", names = "--pacing-mbps", defaultValue = "0", description = "pace each rank's sending to this many Mbit/s (default: ${DEFAULT-VALUE}, off)")
    long pacingMbps = 0;

    /** The collective settings these options describe (fp32 as DiLoCo's outer format; a trainer sets its own). */
    CollectiveSettings settings() {
        if (bucketMb < 1) throw new IllegalArgumentException("--bucket-mb must be at least 1, was " + bucketMb);
        if (wireDtype != WireDtype.FP32 && algorithm == Algorithm.PARAMETER_SERVER) {
            throw new IllegalArgumentException("--wire-dtype " + wireDtype.configName() + " needs --algorithm hierarchical or ring");
        }
        return CollectiveSettings.of(algorithm, bucketMb << 20).withWireDtype(wireDtype)
                .withPacing(pacingMbps * 1_000_000 / 8);
    }
}
