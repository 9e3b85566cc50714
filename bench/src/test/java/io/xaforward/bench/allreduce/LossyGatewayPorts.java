package io.xaforward.bench.allreduce;

import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.TestbedState;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Loss between data centers for the tests, outside the gateway: the veth peer of every gateway port, where each frame
 * a gateway forwards arrives, gets xaf_lossy_pass.bpf.o (bench/src/test/bpf, compiled into the test classes only)
 * instead of the testbed's XDP_PASS program. It drops one XAF frame in 50 at random and passes everything else.
 * The namespaces it is attached in go with the testbed, and the program with them.
 */
final class LossyGatewayPorts {
    private static final String OBJECT = "/bpf/xaf_lossy_pass.bpf.o";

    private LossyGatewayPorts() {
    }

    static void attach(TestbedState state) {
        Path obj = extract();
        try {
            for (Node port : state.gatewayPorts()) {
                Netns.exec(null, "ip", "-force", "-n", port.peerNamespace(), "link", "set", "dev", port.peerIface(),
                        "xdpdrv", "object", obj.toString(), "section", "xdp.frags");
                String link = Netns.exec(null, "ip", "-n", port.peerNamespace(), "-d", "link", "show", "dev",
                        port.peerIface()).stdout();
                if (!link.contains("xaf_lossy_pass")) {
                    throw new IllegalStateException("the lossy program is not on " + port.peerIface() + ": " + link);
                }
            }
        } finally {
            try {
                Files.deleteIfExists(obj);
            } catch (IOException ignored) {
                // a leftover temp file is harmless
            }
        }
    }

    private static Path extract() {
        try (InputStream in = LossyGatewayPorts.class.getResourceAsStream(OBJECT)) {
            if (in == null) throw new IllegalStateException(OBJECT + " is not in the test classes: build the bench module's tests (needs clang)");
            Path tmp = Files.createTempFile("xaf_lossy_pass", ".bpf.o");
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            return tmp;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
