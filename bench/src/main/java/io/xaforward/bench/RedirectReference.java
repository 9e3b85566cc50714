package io.xaforward.bench;

import io.xaforward.dataplane.BpfObject;
import io.xaforward.dataplane.LibBpf;
import io.xaforward.dataplane.XdpAttachment;
import io.xaforward.dataplane.sys.NetworkNamespace;
import io.xaforward.testbed.Netns;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The bare-XDP reference forwarder: xaf_redirect_ref (every frame to one devmap slot, no parsing) attached to the
 * gateway's ingress port and redirecting to its egress port, owned by a platform thread in the gateway namespace
 * (devmap ifindexes resolve in the namespace of the updating thread). Stands in for {@code xdp-bench
 * redirect-map}, which does not load on kernel 6.18.
 */
public final class RedirectReference implements AutoCloseable {
    private final CountDownLatch stop = new CountDownLatch(1);
    private final CompletableFuture<Void> ready = new CompletableFuture<>();
    private final Thread owner;

    public RedirectReference(String ns, String in, String out) {
        Netns.exec(null, "ip", "-n", ns, "link", "set", "dev", in, "xdpdrv", "off");
        owner = NetworkNamespace.start(ns, "xdp-ref-" + in, () -> {
            try (BpfObject obj = BpfObject.openResource("bpf/xaf_redirect_ref.bpf.o").load()) {
                obj.map("tx_port").updateInt(0, LibBpf.ifNameToIndex(out), 0);
                XdpAttachment a = XdpAttachment.attach(obj.programFd("xaf_redirect_ref"), in, false);
                try {
                    ready.complete(null);
                    stop.await();
                } finally {
                    a.detach();
                }
            } catch (Throwable t) {
                ready.completeExceptionally(t);
            }
        });
        try {
            ready.get(20, TimeUnit.SECONDS);
        } catch (Exception e) {
            close();
            throw new IllegalStateException("cannot start the XDP redirect reference " + in + " -> " + out + " in " + ns + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        stop.countDown();
        try {
            owner.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
