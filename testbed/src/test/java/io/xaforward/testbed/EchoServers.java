package io.xaforward.testbed;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/** UDP echo servers ({@link UdpEcho}) in namespaces, and probes from other namespaces; closes kill the servers. */
final class EchoServers implements AutoCloseable {
    /** The XAF UDP port: the one UDP port the gateways' edge firewall lets through between data centers. */
    static final int PORT = io.xaforward.protocol.XafHeader.UDP_PORT;
    private static final List<String> JVM = List.of("-XX:TieredStopAtLevel=1", "-Xmx32m", "-XX:+UseSerialGC");
    private final List<Process> servers = new ArrayList<>();

    EchoServers(String... namespaces) throws Exception {
        for (String ns : namespaces) {
            Process p = Netns.javaProcessBuilder(ns, JVM, UdpEcho.class.getName(), List.of("serve", Integer.toString(PORT)))
                    .redirectErrorStream(true).start();
            servers.add(p);
            BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            String line = CompletableFuture.supplyAsync(() -> {
                try {
                    return r.readLine();
                } catch (Exception e) {
                    return e.toString();
                }
            }).get(30, TimeUnit.SECONDS);
            if (!"ready".equals(line)) fail("echo server in " + ns + " did not start: " + line);
        }
    }

    /** Runs a probe in {@code fromNs}; fails unless every address echoes. */
    static void probe(String fromNs, String... addresses) throws Exception {
        List<String> args = new ArrayList<>(List.of("probe", Integer.toString(PORT)));
        args.addAll(List.of(addresses));
        Process p = Netns.javaProcessBuilder(fromNs, JVM, UdpEcho.class.getName(), args).redirectErrorStream(true).start();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("probe from " + fromNs + " timed out");
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), "probe from " + fromNs + " to " + List.of(addresses) + ": " + out);
    }

    @Override
    public void close() throws InterruptedException {
        for (Process p : servers) p.destroyForcibly();
        for (Process p : servers) p.waitFor(10, TimeUnit.SECONDS);
    }
}
