package io.xaforward.dataplane.xsk;

import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.XafDataplane;
import io.xaforward.dataplane.XdpAttachment;

import java.util.Objects;

/**
 * Makes an endpoint receive its XAF frames in user space: loads the XAF XDP program on the socket's interface,
 * registers the socket in the program's {@code xsks} map for its queue and installs LOCAL routes for the given
 * network index identifiers. XAF frames for those networks (with the right job id and token) go to the socket;
 * every non-XAF frame still passes to the kernel, and XAF frames for other networks are dropped and counted.
 *
 * <p>The interface becomes gateway port slot {@value #PORT_SLOT}; routes accept frames only from it. The XDP program
 * delivers each frame as it arrived (padding trimmed): a LOCAL route neither checks nor decrements the hop limit
 * (PROTOCOL.md §7). {@link #close} detaches the program and unloads it but leaves
 * the socket open. Control plane only; use it from the thread that created it (XafDataplane is thread-confined), in
 * the interface's network namespace.
 */
public final class XskRedirect implements AutoCloseable {
    /** Port slot the interface gets in the program's {@code ports} map. */
    public static final int PORT_SLOT = 0;

    private final XafDataplane dataplane;
    private final XskSocket socket;
    private final int jobId, jobToken;
    private final XdpAttachment attachment;

    private XskRedirect(XafDataplane dataplane, XskSocket socket, int form, int jobId, int jobToken, int[] networkIds,
                        boolean allowGenericFallback) {
        this.dataplane = dataplane;
        this.socket = socket;
        this.jobId = jobId;
        this.jobToken = jobToken;
        dataplane.setPort(socket.ifindex(), PORT_SLOT, form);
        dataplane.setXsk(socket.queue(), socket.fd());
        for (int id : networkIds) addNetwork(id);
        this.attachment = dataplane.attach(socket.ifname(), allowGenericFallback);
    }

    /**
     * Loads the XAF program, routes {@code networkIds} of job {@code jobId}/{@code jobToken} arriving on the
     * socket's interface in network form {@code form} (SharedLayouts.FORM_*) to {@code socket}, and attaches the
     * program to the interface (native XDP; generic only if {@code allowGenericFallback}).
     */
    public static XskRedirect install(XskSocket socket, int form, int jobId, int jobToken, boolean allowGenericFallback,
                                      int... networkIds) {
        Objects.requireNonNull(socket, "socket");
        Objects.requireNonNull(networkIds, "networkIds");
        XafDataplane dp = XafDataplane.load();
        try {
            return new XskRedirect(dp, socket, form, jobId, jobToken, networkIds.clone(), allowGenericFallback);
        } catch (RuntimeException | Error e) {
            dp.close();
            throw e;
        }
    }

    /** Routes one more network index identifier to the socket. */
    public void addNetwork(int networkId) {
        dataplane.putRoute(networkId, Route.local(1L << PORT_SLOT, jobId, jobToken));
    }

    /** Stops delivering {@code networkId}; false when it was not routed. */
    public boolean removeNetwork(int networkId) { return dataplane.deleteRoute(networkId); }

    /** The loaded program, for its counters (TO_LOCAL, PASS_NON_XAF, drops). */
    public XafDataplane dataplane() { return dataplane; }

    public XskSocket socket() { return socket; }

    public XdpAttachment attachment() { return attachment; }

    /** Detaches and unloads the program; the socket stays open. */
    @Override
    public void close() {
        try {
            dataplane.deleteXsk(socket.queue());
        } finally {
            dataplane.close();
        }
    }
}
