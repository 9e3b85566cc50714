package io.xaforward.gateway;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;

/**
 * Runs a gateway until SIGTERM or SIGINT: {@code GatewayMain --config FILE}; SIGHUP reloads the config. Prints
 * {@code xaf gateway: ready} on stdout once every interface is attached, so launchers can wait for that line;
 * everything else is logged through SLF4J (timestamped and levelled, on stderr). {@code xaf gateway} calls
 * {@link #run}.
 */
public final class GatewayMain {
    public static final String READY = "xaf gateway: ready";
    private static final Logger LOG = LoggerFactory.getLogger(GatewayMain.class);

    private GatewayMain() {}

    public static void main(String[] args) {
        if (args.length != 2 || !args[0].equals("--config")) {
            System.err.println("usage: GatewayMain --config FILE");
            System.exit(2);
        }
        System.exit(run(Path.of(args[1])));
    }

    /**
     * SIGHUP re-reads the config, as daemons do (the JVM's default would run the shutdown hooks and stop the
     * gateway). The reload runs on its own thread: the signal thread must not block on the reload lock.
     */
    @SuppressWarnings("removal")
    static void reloadOnSighup(GatewayService service) {
        sun.misc.Signal.handle(new sun.misc.Signal("HUP"), signal -> Thread.ofPlatform().name("xaf-gateway-sighup").start(() -> {
            LOG.info("SIGHUP, reloading the config");
            try {
                service.reload();
            } catch (RuntimeException e) {
                LOG.warn("reload rejected, keeping the running routes: {}", e.getMessage());
            }
        }));
    }

    /** Starts the gateway, blocks until a signal stops it, returns the process exit status. */
    public static int run(Path config) {
        GatewayService service;
        try {
            service = GatewayService.start(config);
        } catch (RuntimeException e) {
            LOG.error("cannot start: {}", e.getMessage());
            return 1;
        }
        // The JVM runs shutdown hooks on SIGTERM and SIGINT: detach there so nothing stays attached.
        Thread hook = new Thread(service::close, "xaf-gateway-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        reloadOnSighup(service);
        System.out.println(READY);
        System.out.flush();
        try {
            service.awaitStop();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }
}
