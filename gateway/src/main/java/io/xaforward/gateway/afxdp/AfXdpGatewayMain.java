package io.xaforward.gateway.afxdp;

import io.xaforward.gateway.EngineMetrics;
import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.GatewayConfigParser;
import io.xaforward.gateway.MetricsServer;
import io.xaforward.dataplane.xsk.XskConfig;

import java.nio.file.Path;

/**
 * The AF_XDP user-space gateway as a process: {@code AfXdpGatewayMain --config FILE} inside the gateway namespace,
 * with the same gateway config file as the XDP gateway and the relay. Opens an AF_XDP socket and the
 * {@code xsk_all} XDP program on every port, serves its counters on the config's metrics endpoint as every engine
 * does ({@link EngineMetrics}), prints one line per port and then {@value #READY_LINE}, forwards until its standard
 * input ends, then detaches and exits.
 */
public final class AfXdpGatewayMain {
    public static final String READY_LINE = "xaf afxdp: ready";

    private AfXdpGatewayMain() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !args[0].equals("--config")) {
            System.err.println("usage: AfXdpGatewayMain --config FILE");
            System.exit(2);
        }
        GatewayConfig config = GatewayConfigParser.parse(Path.of(args[1]));
        AfXdpGatewayForwarder forwarder;
        MetricsServer metrics;
        try {
            forwarder = new AfXdpGatewayForwarder(config, XskConfig.defaults());
        } catch (RuntimeException e) {
            // on standard error, not only the log: the reason must reach whoever started it, however logging is set up
            System.err.println("xaf afxdp: cannot start: " + e.getMessage());
            System.err.flush();
            System.exit(1);
            return;
        }
        try {
            metrics = EngineMetrics.serve(config, forwarder::metricsText);
        } catch (RuntimeException e) {
            forwarder.close();
            System.err.println("xaf afxdp: cannot start: " + e.getMessage());
            System.err.flush();
            System.exit(1);
            return;
        }
        // SIGTERM (the runner's fallback) must still detach the programs: XDP attachments outlive the process.
        Runtime.getRuntime().addShutdownHook(new Thread(forwarder::close, "afxdp-detach"));
        for (String port : forwarder.describePorts()) System.out.println("xaf afxdp: port " + port);
        forwarder.start();
        System.out.println(READY_LINE);
        System.out.flush();
        while (System.in.read() >= 0) {
            // input is not read for anything: its end stops the gateway
        }
        forwarder.close();
        if (metrics != null) metrics.close();
        System.exit(0);
    }
}
