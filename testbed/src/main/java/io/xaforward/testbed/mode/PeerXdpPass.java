package io.xaforward.testbed.mode;

import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * XDP_PASS on the veth peers of gateway ports, for gateways that redirect frames between veths with XDP (the XDP
 * gateway's devmap, an AF_XDP gateway's TX): a veth only accepts redirected XDP frames when its peer runs an XDP
 * program. {@link #close()} removes exactly what {@link #attach} added.
 */
final class PeerXdpPass implements AutoCloseable {
    private final List<Node> attached = new ArrayList<>();

    /** Attaches XDP_PASS (native mode) to the peer of every port in {@code gatewayPorts}. */
    void attach(List<Node> gatewayPorts) {
        try {
            Path obj = Files.createTempFile("xdp_pass", ".bpf.o");
            try (InputStream in = PeerXdpPass.class.getResourceAsStream("/bpf/xdp_pass.bpf.o")) {
                if (in == null) throw new IllegalStateException("bpf/xdp_pass.bpf.o is not on the class path: build the dataplane module");
                Files.copy(in, obj, StandardCopyOption.REPLACE_EXISTING);
                for (Node p : gatewayPorts) {
                    Netns.exec(null, "ip", "-force", "-n", p.peerNamespace(), "link", "set", "dev", p.peerIface(),
                            "xdpdrv", "object", obj.toString(), "section", "xdp.frags");
                    attached.add(p);
                }
            } finally {
                Files.deleteIfExists(obj);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        for (Node p : attached)
            if (Netns.exists(p.peerNamespace()))
                Netns.tryExec(null, Netns.DEFAULT_TIMEOUT, null,
                        List.of("ip", "-n", p.peerNamespace(), "link", "set", "dev", p.peerIface(), "xdpdrv", "off"));
        attached.clear();
    }
}
