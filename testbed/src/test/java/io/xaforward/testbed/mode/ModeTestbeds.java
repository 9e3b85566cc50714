package io.xaforward.testbed.mode;

import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Testbed;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A testbed brought up under a unique prefix with a private state directory, removed on close. */
final class ModeTestbeds implements AutoCloseable {
    final String prefix;
    final Path stateDir;
    final Testbed testbed;
    final TestbedState state;

    ModeTestbeds(Path topologyFile) throws IOException {
        assertTrue(Netns.isRoot(), "these tests build network namespaces and must run as root");
        prefix = "m" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()).substring(0, 5);
        stateDir = Files.createTempDirectory("xaf-mode-state");
        testbed = new Testbed(stateDir);
        Topology t = Topology.load(topologyFile).withPrefix(prefix);
        TestbedState s;
        try {
            s = testbed.up(t);
        } catch (RuntimeException e) {
            testbed.down(prefix);
            throw e;
        }
        state = s;
    }

    /** Sum of the UDP InCsumErrors counter of a namespace (/proc/net/snmp and snmp6). */
    static long udpChecksumErrors(String ns) {
        long total = 0;
        for (String file : List.of("/proc/net/snmp", "/proc/net/snmp6")) {
            String text = Netns.exec(ns, "cat", file).stdout();
            String[] lines = text.split("\n");
            for (int i = 0; i < lines.length; i++) {
                if (lines[i].startsWith("Udp6InCsumErrors")) total += Long.parseLong(lines[i].split("\\s+")[1]);
                if (lines[i].startsWith("Udp:") && i + 1 < lines.length && lines[i + 1].startsWith("Udp:")) {
                    String[] names = lines[i].split("\\s+"), values = lines[i + 1].split("\\s+");
                    for (int k = 0; k < names.length; k++) if (names[k].equals("InCsumErrors")) total += Long.parseLong(values[k]);
                    i++;
                }
            }
        }
        return total;
    }

    @Override
    public void close() throws IOException {
        testbed.down(prefix);
        assertEquals(List.of(), Netns.list().stream().filter(n -> n.startsWith(prefix + "-")).toList());
        try (var files = Files.walk(stateDir)) {
            for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(p);
        }
    }
}
