package io.xaforward.gateway.afxdp;

import java.util.LinkedHashMap;
import java.util.Map;
import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.GatewayConfigParser;
import io.xaforward.dataplane.xsk.XskConfig;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The AF_XDP user-space gateway as a process: {@code AfXdpGatewayMain --config FILE} inside the gateway namespace,
 * with the same gateway config file as the XDP gateway and the relay. Opens an AF_XDP socket and the
 * {@code xsk_all} XDP program on every port, prints one line per port and then {@value #READY_LINE}, forwards
 * until its standard input ends (a line "counters" prints the counters meanwhile), then prints its counters as
 * {@value #COUNTERS_PREFIX}{@code forwarded=N drop_malformed=N ...}, detaches and exits.
 */
public final class AfXdpGatewayMain {
    public static final String READY_LINE = "xaf afxdp: ready";
    public static final String COUNTERS_PREFIX = "xaf afxdp: counters ";

    private AfXdpGatewayMain() {}

    /** Reads a {@value #COUNTERS_PREFIX} line back into counter name -> value. */
    public static Map<String, Long> parseCounters(String line) {
        Map<String, Long> values = new LinkedHashMap<>();
        for (String kv : line.substring(COUNTERS_PREFIX.length()).trim().split(" ")) {
            int eq = kv.indexOf('=');
            if (eq > 0) values.put(kv.substring(0, eq), Long.parseLong(kv.substring(eq + 1)));
        }
        return values;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !args[0].equals("--config")) {
            System.err.println("usage: AfXdpGatewayMain --config FILE");
            System.exit(2);
        }
        GatewayConfig config = GatewayConfigParser.parse(Path.of(args[1]));
        AfXdpGatewayForwarder forwarder;
        try {
            forwarder = new AfXdpGatewayForwarder(config, XskConfig.defaults());
        } catch (RuntimeException e) {
            // on standard error, not only the log: the reason must reach whoever started it, however logging is set up
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
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.strip().equals("counters")) {
                System.out.println(COUNTERS_PREFIX + forwarder.counterText());
                System.out.flush();
            }
        }
        forwarder.close();
        System.out.println(COUNTERS_PREFIX + forwarder.counterText());
        System.out.flush();
        System.exit(0);
    }
}
