package io.xaforward.collective;

/** How an all-reduce moves data; docs/TRANSPORT.md ("Collectives") compares them. */
public enum Algorithm {
    /** One ring over all ranks: reduce-scatter then all-gather; crosses the WAN on every ring edge between DCs. */
    RING,
    /** Ring reduce-scatter inside each DC, shard exchange between DCs, ring all-gather inside each DC. */
    HIERARCHICAL,
    /** Per bucket one server rank per DC: members push, servers combine across DCs, members pull. */
    PARAMETER_SERVER
}
