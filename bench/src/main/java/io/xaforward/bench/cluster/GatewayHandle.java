package io.xaforward.bench.cluster;

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
}
