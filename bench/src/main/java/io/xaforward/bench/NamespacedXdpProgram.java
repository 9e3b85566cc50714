package io.xaforward.bench;

import io.xaforward.dataplane.BpfObject;
import io.xaforward.dataplane.XdpAttachment;
import io.xaforward.dataplane.sys.NetworkNamespace;
import io.xaforward.testbed.Netns;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A bench XDP program (from the classpath) attached in native mode to one interface of a namespace, owned by a
 * platform thread inside that namespace for as long as it is attached: map updates that name ifindexes (devmaps)
 * resolve in the namespace of the updating thread, so setup runs there too. {@link #close()} detaches it.
 */
final class NamespacedXdpProgram implements AutoCloseable {
    private final CountDownLatch stop = new CountDownLatch(1);
    private final CompletableFuture<BpfObject> loaded = new CompletableFuture<>();
    private final Thread owner;

    /**
     * Replaces any XDP program on {@code ifname} in {@code ns} with {@code program} from {@code resource}, after
     * {@code setup} ran on the loaded object inside the namespace. {@code what} names it in errors.
     */
    NamespacedXdpProgram(String ns, String ifname, String resource, String program, Consumer<BpfObject> setup, String what) {
        Netns.exec(null, "ip", "-n", ns, "link", "set", "dev", ifname, "xdpdrv", "off");
        owner = NetworkNamespace.start(ns, program + "-" + ifname, () -> {
            try (BpfObject obj = BpfObject.openResource(resource).load()) {
                setup.accept(obj);
                XdpAttachment a = XdpAttachment.attach(obj.programFd(program), ifname, false);
                try {
                    loaded.complete(obj);
                    stop.await();
                } finally {
                    a.detach();
                }
            } catch (Throwable t) {
                loaded.completeExceptionally(t);
            }
        });
        try {
            loaded.get(20, TimeUnit.SECONDS);
        } catch (Exception e) {
            close();
            throw new IllegalStateException("cannot attach the " + what + " to " + ifname + " in " + ns + ": " + e.getMessage(), e);
        }
    }

    /** The loaded object (its maps), valid until {@link #close()}. */
    BpfObject object() {
        return loaded.join();
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
