package io.xaforward.testbed.mode;

import io.xaforward.gateway.EngineMetrics;
import io.xaforward.gateway.GatewayMetrics;
import io.xaforward.testbed.GatewayFirewall;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A gateway mode whose forwarding runs in a process of its own in the gateway namespace (xdp, relay, afxdp): the
 * start and stop of such a mode, and its counters. Every engine serves its counters on the metrics endpoint of its
 * gateway config ({@link EngineMetrics}), here 127.0.0.1:{@value #METRICS_PORT} inside the
 * gateway namespace; {@link #counters} reads them from there while the gateway runs, and {@link #close} reads them
 * once more before it stops the process, so they stay readable afterwards.
 */
abstract class ProcessGatewayRunner implements GatewayRunner {
    /** Port of the gateway's metrics endpoint on 127.0.0.1 inside its namespace. */
    public static final int METRICS_PORT = 9464;

    /** The gateway process once started; kept after it stopped, for its output. */
    protected GatewayProcess process;
    /** The gateway namespace, once started. */
    protected String namespace;
    private Path configFile;
    private boolean stopped;
    private Map<String, Long> finalCounters = Map.of();

    @Override
    public List<Long> processIds() {
        return process == null || stopped ? List.of() : List.of(process.pid());
    }

    /** Everything the gateway process printed so far. */
    public List<String> processOutput() {
        return process == null ? List.of() : process.output();
    }

    /**
     * The gateway's counters from its metrics endpoint ("xaf_packets_total{forwarded}" -> value,
     * "xaf_port_tx_packets_total{IFACE}", ...): live while it runs, as they were when it was stopped after
     * {@link #close}; empty before it started.
     */
    @Override
    public Map<String, Long> counters() {
        if (process == null) return Map.of();
        if (stopped) return finalCounters;
        return GatewayMetrics.scrape(namespace, "127.0.0.1", METRICS_PORT);
    }

    /** The gateway process a mode runs: its main class, the line it prints once it forwards, how it is stopped. */
    protected record Launch(Class<?> mainClass, String readyLine, boolean stopWithStdin) {}

    /**
     * Starts gateway {@code gateway} of {@code state} in this mode: the edge firewall ({@link #closeTheEdge}), what the
     * mode installs first ({@link #beforeStart}), the config of {@code plan} in a temp file, then the process, waited for until it prints its ready line. When any step
     * fails, closes what the steps before it set up and rethrows (an {@link IOException} as
     * {@link UncheckedIOException}).
     */
    protected void startProcess(TestbedState state, IdentifierPlan plan, String gateway, Launch launch) {
        namespace = state.gatewayNamespace(gateway);
        try {
            closeTheEdge(state, gateway);
            beforeStart(state, gateway);
            configFile = Files.createTempFile("xaf-" + mode().name().toLowerCase(Locale.ROOT) + "-" + gateway, ".yaml");
            Files.writeString(configFile, plan.gatewayYaml(gateway, "127.0.0.1:" + METRICS_PORT));
            GatewayProcess p = GatewayProcess.start(namespace, launch.mainClass().getName(),
                    List.of("--config", configFile.toString()), launch.readyLine(), START_TIMEOUT);
            process = launch.stopWithStdin() ? p.stopWithStdin() : p;
        } catch (IOException e) {
            close();
            throw new UncheckedIOException(e);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);

    /** What the mode installs before its process starts (programs on the ports' peers); nothing by default. */
    protected void beforeStart(TestbedState state, String gateway) {}

    /**
     * Non-XAF frames are not this mode's business: they fall through to the gateway namespace's kernel, whose edge
     * firewall ({@link GatewayFirewall}, loaded by {@code topo up}) forwards what the kernel mode forwards. Loading it
     * again here also covers a testbed brought up before the firewall was part of {@code topo up}; it stays after
     * the mode closes (XDP redirects and AF_XDP never reach netfilter; the relay's sockets are INPUT).
     */
    private void closeTheEdge(TestbedState state, String gateway) {
        GatewayFirewall.install(state.gatewayNamespace(gateway), state.gatewayPorts(gateway));
    }

    /**
     * Reads the counters one last time, stops the process, then removes what the mode installed besides it
     * ({@link #afterStop}) and the config file.
     */
    @Override
    public final void close() {
        try {
            if (process != null && !stopped) {
                try {
                    if (process.isAlive()) finalCounters = GatewayMetrics.scrape(namespace, "127.0.0.1", METRICS_PORT);
                } catch (RuntimeException e) {
                    // a gateway that cannot answer any more still has to be stopped
                } finally {
                    stopped = true;
                    process.close();
                }
            }
        } finally {
            try {
                afterStop();
            } finally {
                deleteConfig();
            }
        }
    }

    /** Removes what {@link #beforeStart} installed (and what the process may have left); runs on every close. */
    protected void afterStop() {}

    private void deleteConfig() {
        try {
            if (configFile != null) Files.deleteIfExists(configFile);
        } catch (IOException ignored) {
            // a leftover temp file is harmless
        }
        configFile = null;
    }
}
