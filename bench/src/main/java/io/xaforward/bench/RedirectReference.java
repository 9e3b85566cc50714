package io.xaforward.bench;

import io.xaforward.dataplane.LibBpf;

/**
 * The bare-XDP reference forwarder: xaf_redirect_ref (every frame to one devmap slot, no parsing) attached to the
 * gateway's ingress port and redirecting to its egress port, owned by a platform thread in the gateway namespace
 * (devmap ifindexes resolve in the namespace of the updating thread). Stands in for {@code xdp-bench
 * redirect-map}, which does not load on kernel 6.18.
 */
public final class RedirectReference implements AutoCloseable {
    private final NamespacedXdpProgram program;

    public RedirectReference(String ns, String in, String out) {
        program = new NamespacedXdpProgram(ns, in, "bpf/xaf_redirect_ref.bpf.o", "xaf_redirect_ref",
                obj -> obj.map("tx_port").updateInt(0, LibBpf.ifNameToIndex(out), 0), "XDP redirect reference to " + out);
    }

    @Override
    public void close() {
        program.close();
    }
}
