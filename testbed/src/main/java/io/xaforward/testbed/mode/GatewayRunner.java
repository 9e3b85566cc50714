package io.xaforward.testbed.mode;

import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.util.List;
import java.util.Map;

/**
 * Starts one gateway of a running testbed in one {@link GatewayMode} and stops it again. A runner is used once:
 * start, measure, close. {@link #close} restores the gateway namespace to plain forwarding without rules or
 * programs, so the next mode starts from the same state.
 */
public interface GatewayRunner extends AutoCloseable {
    GatewayMode mode();

    /** Brings gateway {@code gateway} of {@code state} up in this mode with the routes of {@code plan}; returns when it forwards. */
    void start(TestbedState state, IdentifierPlan plan, String gateway);

    /**
     * Process ids whose CPU time is gateway work (a user-space gateway process); empty when the gateway lives
     * entirely in the kernel.
     */
    default List<Long> processIds() {
        return List.of();
    }

    /** The gateway's own counters by name (e.g. the XDP program's per-CPU counters); empty when it has none. */
    default Map<String, Long> counters() {
        return Map.of();
    }

    /** Stops the gateway and removes what {@link #start} installed. Safe to call twice or after a failed start. */
    @Override
    void close();
}
