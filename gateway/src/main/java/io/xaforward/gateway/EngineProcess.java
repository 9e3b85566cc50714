package io.xaforward.gateway;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * The start and stop of a Java gateway engine as its own process ({@code Main --config FILE}), the same for the relay
 * and the AF_XDP gateway: read the gateway config, open the engine, serve its counters on the config's metrics
 * endpoint ({@link EngineMetrics}), print what it opened and then the ready line, forward until standard input ends
 * (or SIGTERM), then stop the engine once and exit 0. A config or engine that cannot start is one line on standard
 * error ({@code xaf NAME: cannot start: ...}) and exit status 1; bad arguments exit 2.
 */
public final class EngineProcess {
    /** A Java gateway engine as the process runs it. */
    public interface Engine {
        /** Lines printed before the ready line (what was opened, e.g. one per port). */
        default List<String> describe() {
            return List.of();
        }

        /** Starts forwarding. */
        void start();

        /** The counters, as {@link EngineMetrics} shapes them. */
        String metricsText();

        /** Stops forwarding and releases what the engine opened; called once. */
        void close();
    }

    private EngineProcess() {}

    /**
     * Runs an engine: {@code name} as in its lines ("relay": {@code xaf relay: ready}), {@code mainClass} for the usage
     * line, {@code open} makes the engine of a config.
     */
    public static void run(String name, Class<?> mainClass, String[] args, Function<GatewayConfig, Engine> open) throws IOException {
        if (args.length != 2 || !args[0].equals("--config")) {
            System.err.println("usage: " + mainClass.getSimpleName() + " --config FILE");
            System.exit(2);
            return;
        }
        Engine engine;
        MetricsServer metrics;
        try {
            GatewayConfig config = GatewayConfigParser.parse(Path.of(args[1]));
            engine = open.apply(config);
            try {
                metrics = EngineMetrics.serve(config, engine::metricsText);
            } catch (RuntimeException e) {
                engine.close();
                throw e;
            }
        } catch (RuntimeException e) {
            // on standard error, not only the log: the reason must reach whoever started it, however logging is set up
            System.err.println("xaf " + name + ": cannot start: " + e.getMessage());
            System.err.flush();
            System.exit(1);
            return;
        }
        AtomicBoolean stopped = new AtomicBoolean();
        Runnable stop = () -> {
            if (!stopped.compareAndSet(false, true)) return;
            engine.close();
            if (metrics != null) metrics.close();
        };
        // SIGTERM (a runner's fallback) must still stop the engine: XDP attachments outlive the process.
        Runtime.getRuntime().addShutdownHook(new Thread(stop, name + "-stop"));
        for (String line : engine.describe()) System.out.println("xaf " + name + ": " + line);
        engine.start();
        System.out.println("xaf " + name + ": ready");
        System.out.flush();
        while (System.in.read() >= 0) {
            // input is not read for anything: its end stops the engine
        }
        stop.run();
        System.exit(0);
    }
}
