package io.xaforward.collective;

import java.util.Locale;

/** How an all-reduce moves data; docs/TRANSPORT.md ("Collectives") compares them. */
public enum Algorithm {
    /** One ring over all ranks: reduce-scatter then all-gather; crosses the WAN on every ring edge between DCs. */
    RING("ring"),
    /** Ring reduce-scatter inside each DC, shard exchange between DCs, ring all-gather inside each DC. */
    HIERARCHICAL("hierarchical"),
    /** Per bucket one server rank per DC: members push, servers combine across DCs, members pull. */
    PARAMETER_SERVER("ps");

    private final String configName;

    Algorithm(String configName) {
        this.configName = configName;
    }

    /** The command-line name: hierarchical, ring or ps. */
    public String configName() {
        return configName;
    }

    /**
     * Parses a command-line name (any case): hierarchical (or hier), ring, ps (or parameter-server). An unknown name
     * is an error, never a silent default.
     */
    public static Algorithm fromName(String name) {
        if (name == null) throw new IllegalArgumentException("no all-reduce algorithm given; expected hierarchical, ring or ps");
        return switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "hierarchical", "hier" -> HIERARCHICAL;
            case "ring" -> RING;
            case "ps", "parameter-server", "parameter_server" -> PARAMETER_SERVER;
            default -> throw new IllegalArgumentException("unknown all-reduce algorithm '" + name
                    + "'; expected hierarchical, ring or ps");
        };
    }
}
