package io.xaforward.cluster;

import io.xaforward.testbed.mode.GatewayRunner;

import java.util.Map;

/**
 * A running gateway of some mode, as a cluster run needs it: its counters (read before teardown, also after a failed
 * job, so tests can see what the gateway dropped), then stop. Every mode implements it, whatever runs underneath
 * (an XDP program driven by a {@code xaf gateway} process, a user-space relay, the kernel's forwarding).
 */
public interface GatewayHandle extends AutoCloseable {
    /** Counter samples as "name" or "name{counter}" -> value. */
    Map<String, Long> counters();

    @Override
    void close();

    /** A handle over a testbed gateway runner of any mode. */
    static GatewayHandle of(GatewayRunner runner) {
        return new GatewayHandle() {
            @Override
            public Map<String, Long> counters() {
                return runner.counters();
            }

            @Override
            public void close() {
                runner.close();
            }
        };
    }
}
