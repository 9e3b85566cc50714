package io.xaforward.testbed;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;

import static org.junit.jupiter.api.Assertions.*;

/** {@code topo down PREFIX} removes what its state file lists, not every namespace that shares the prefix. */
class TestbedDownScopeTest {
    @Test
    void downLeavesNamespacesItDidNotCreate() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (network namespaces); CI runs as root");
        String prefix = "d" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()).substring(0, 5);
        String stranger = prefix + "-gw-a"; // named like a testbed namespace, but no testbed made it
        Testbed testbed = new Testbed(Files.createTempDirectory("xaf-down-scope"));
        Netns.add(stranger);
        try {
            testbed.down(prefix);
            assertTrue(Netns.exists(stranger), "down removed a namespace its state file does not list");
        } finally {
            Netns.delete(stranger);
        }
    }
}
