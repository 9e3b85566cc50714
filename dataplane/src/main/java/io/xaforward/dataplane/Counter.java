package io.xaforward.dataplane;

/**
 * Outcome counters of the XDP gateway; the ordinal is the C value of enum xaf_counter (the index into the
 * {@code packets} and {@code bytes} arrays of struct xaf_counters, the per-CPU value of the {@code counters} map). Every XAF frame counts once as {@link #RX_XAF} and once as its
 * outcome; every other frame counts once as {@link #PASS_NON_XAF}. Bytes are ingress frame lengths.
 */
public enum Counter {
    RX_XAF, PASS_NON_XAF, FORWARDED, TO_LOCAL, DROP_MALFORMED, DROP_NO_ROUTE, DROP_HOP_LIMIT, DROP_BAD_TOKEN,
    DROP_INGRESS, DROP_REDIRECT, DROP_BAD_FORM,
    /**
     * The rebuilt frame does not fit the egress port's MTU or the egress form's 16-bit length fields (PROTOCOL.md §7),
     * or a local socket takes no fragments.
     */
    DROP_TOO_BIG,
    /** The route would send the frame back out of the port it arrived on, which its ingress list does not name. */
    DROP_HAIRPIN;

    /** The map key (C enum value). */
    public int code() { return ordinal(); }
}
