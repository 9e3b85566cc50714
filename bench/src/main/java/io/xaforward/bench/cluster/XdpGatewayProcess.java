package io.xaforward.bench.cluster;

import io.xaforward.bench.train.GatewayMetrics;
import io.xaforward.dataplane.gateway.GatewayMain;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** {@code xaf gateway} (the XDP gateway) as a process in the gateway's namespace, configured from the plan. */
public final class XdpGatewayProcess implements GatewayHandle {
    private final Process process;
    private final String namespace;
    private final int metricsPort;

    private XdpGatewayProcess(Process process, String namespace, int metricsPort) {
        this.process = process;
        this.namespace = namespace;
        this.metricsPort = metricsPort;
    }

    /** Starts the gateway and waits (up to 60 s) until it says it is ready. */
    public static XdpGatewayProcess start(TestbedState state, IdentifierPlan plan, String gw, Path workDir, int metricsPort,
                                          int dropOneIn) throws Exception {
        Path config = workDir.resolve("gateway-" + gw + ".yaml");
        Files.writeString(config, plan.gatewayYaml(gw, "127.0.0.1:" + metricsPort, dropOneIn));
        String ns = state.gatewayNamespace(gw);
        ProcessBuilder pb = Netns.javaProcessBuilder(ns, List.of("-Xmx256m", "-XX:+UseSerialGC"), GatewayMain.class.getName(),
                List.of("--config", config.toString()));
        pb.redirectErrorStream(true);
        Process p = pb.start();
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()));
        StringBuilder log = new StringBuilder();
        long deadline = System.currentTimeMillis() + 60_000;
        String line;
        while ((line = r.readLine()) != null) {
            log.append(line).append('\n');
            if (line.equals(GatewayMain.READY)) break;
            if (System.currentTimeMillis() > deadline) break;
        }
        if (line == null || !line.equals(GatewayMain.READY)) {
            p.destroyForcibly();
            throw new IllegalStateException("gateway " + gw + " did not start:\n" + log);
        }
        Thread.ofPlatform().daemon(true).start(() -> r.lines().forEach(l -> { }));
        return new XdpGatewayProcess(p, ns, metricsPort);
    }

    @Override
    public Map<String, Long> counters() {
        return GatewayMetrics.scrape(namespace, "127.0.0.1", metricsPort);
    }

    @Override
    public void close() {
        if (!process.isAlive()) return;
        try {
            new ProcessBuilder("kill", "-TERM", Long.toString(process.pid())).start().waitFor();
            if (!process.waitFor(15, TimeUnit.SECONDS)) process.destroyForcibly();
        } catch (IOException | InterruptedException e) {
            process.destroyForcibly();
        }
    }
}
