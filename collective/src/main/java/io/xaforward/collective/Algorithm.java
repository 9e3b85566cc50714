package io.xaforward.collective;

import io.xaforward.common.ConfigWord;

import java.util.Map;

/** How an all-reduce moves data; docs/TRANSPORT.md ("Collectives") compares them. */
public enum Algorithm implements ConfigWord {
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
    @Override
    public String configName() {
        return configName;
    }

    /** Reads a command-line name: hierarchical (or hier), ring, ps (or parameter-server; {@link ConfigWord#parse}). */
    public static Algorithm fromName(String name) {
        return ConfigWord.parse(Algorithm.class, "all-reduce algorithm", name, Map.of("hier", HIERARCHICAL,
                "parameter-server", PARAMETER_SERVER, "parameter_server", PARAMETER_SERVER));
    }
}
