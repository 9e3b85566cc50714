package io.xaforward.cluster;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Worker JVMs get the job-wide settings the launching JVM was started with, and nothing else. */
class InheritedPropertiesTest {

    @Test
    void theWireCryptoLibraryReachesEveryWorkerJvm() {
        String before = System.getProperty("xaf.wire.crypto");
        try {
            System.clearProperty("xaf.wire.crypto");
            assertEquals(List.of(), ClusterRun.inheritedSystemProperties());
            System.setProperty("xaf.wire.crypto", "jdk");
            assertEquals(List.of("-Dxaf.wire.crypto=jdk"), ClusterRun.inheritedSystemProperties());
        } finally {
            if (before == null) System.clearProperty("xaf.wire.crypto");
            else System.setProperty("xaf.wire.crypto", before);
        }
    }
}
