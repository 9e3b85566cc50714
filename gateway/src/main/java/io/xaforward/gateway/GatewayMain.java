package io.xaforward.gateway;

import io.xaforward.common.EtcdClient;
import io.xaforward.common.EtcdSecurity;
import io.xaforward.gateway.registry.JobRoutes;
import io.xaforward.gateway.registry.RouteRegistryWatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;
import sun.misc.SignalHandler;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Runs a gateway until SIGTERM or SIGINT: {@code GatewayMain --config FILE}; SIGHUP reloads the routes (the file,
 * or with a registry a full re-read of the registry) and never stops the gateway. Prints
 * {@code xaf gateway: ready} on stdout once every interface is attached, so launchers can wait for that line;
 * with {@code $NOTIFY_SOCKET} set (systemd's {@code Type=notify}) it also sends {@code READY=1} there;
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
     * SIGHUP re-reads the routes, as daemons do (the JVM's default would run the shutdown hooks and stop the
     * gateway): {@code reload} is the file reload or the registry's full re-sync. The reload runs on its own thread:
     * the signal thread must not block on the reload lock.
     */
    @SuppressWarnings("removal")
    static void reloadOnSighup(Runnable reload, String what) {
        var previous = Signal.handle(new Signal("HUP"), signal -> Thread.ofPlatform().name("xaf-gateway-sighup").start(() -> {
            LOG.info("SIGHUP, reloading {}", what);
            try {
                reload.run();
            } catch (RuntimeException e) {
                LOG.warn("reload rejected, keeping the running routes: {}", e.getMessage());
            }
        }));
        if (previous == SignalHandler.SIG_IGN) {
            // The JVM leaves a signal that the parent ignored (nohup) ignored, without a word: say so.
            LOG.warn("SIGHUP is ignored in this process (started under nohup?), so it will not reload {};"
                    + " changes still reach the gateway without it", what);
        }
    }

    /**
     * Tells systemd (a {@code Type=notify} unit, see docs/DEPLOY.md) about the gateway's state; a failure is logged,
     * never fatal: the gateway forwards whether or not its supervisor hears it.
     */
    static void notifySystemd(String state) {
        try {
            if (SdNotify.notify(state)) LOG.debug("notified systemd: {}", state.replace('\n', ' '));
        } catch (RuntimeException e) {
            LOG.warn("{}", e.getMessage());
        }
    }

    /** Starts the gateway, blocks until a signal stops it, returns the process exit status. */
    public static int run(Path config) {
        return run(config, null, null);
    }

    /**
     * As {@link #run(Path)}; with a {@code registry} (etcd endpoint) the routes come from the keys under
     * {@code prefix} there and follow their changes, and the file gives the ports.
     */
    public static int run(Path config, URI registry, String prefix) {
        return run(config, registry, prefix, null);
    }

    /**
     * As {@link #run(Path, URI, String)}; a non-null {@code pinName} pins the gateway (and adopts what a previous
     * gateway of that name pinned), see {@link GatewayService#start(Path, String)}.
     */
    public static int run(Path config, URI registry, String prefix, String pinName) {
        return run(config, registry, EtcdSecurity.NONE, prefix, pinName);
    }

    /** As {@link #run(Path, URI, String, String)}, reaching the registry with {@code security} (TLS, credentials). */
    public static int run(Path config, URI registry, EtcdSecurity security, String prefix, String pinName) {
        return run(config, registry, security, prefix, false, pinName);
    }

    /**
     * As above; with {@code followJobs} the prefix holds the jobs' rank registrations ({@code /xaf/jobs/} or
     * {@code /xaf/jobs/JOB/}) and the routes are derived from them ({@link JobRoutes}): the config file's ports name
     * the data centers they face.
     */
    public static int run(Path config, URI registry, EtcdSecurity security, String prefix, boolean followJobs, String pinName) {
        return run(config, registry, security, prefix, followJobs, JobRoutes.DEFAULT_MAX_RANKS_PER_JOB, pinName);
    }

    /** As above, each job getting routes for at most {@code maxRanksPerJob} ranks ({@link JobRoutes}, quotas). */
    public static int run(Path config, URI registry, EtcdSecurity security, String prefix, boolean followJobs,
                          int maxRanksPerJob, String pinName) {
        return run(config, registry, security, prefix, followJobs, maxRanksPerJob, pinName, null);
    }

    /** As above; a non-null {@code attach} replaces the file's {@code attach:} word ({@code xaf gateway --attach}). */
    public static int run(Path config, URI registry, EtcdSecurity security, String prefix, boolean followJobs,
                          int maxRanksPerJob, String pinName, GatewayConfig.AttachMode attach) {
        GatewayService service;
        try {
            service = GatewayService.start(config, pinName, registry != null, attach);
        } catch (RuntimeException e) {
            LOG.error("cannot start: {}", e.getMessage());
            return 1;
        }
        RouteRegistryWatch watch = null;
        if (registry != null) {
            try {
                service.stopWatchingFile();
                RouteRegistryWatch.Entries reader = null;
                if (followJobs) {
                    if (service.config().ports().stream().allMatch(p -> p.datacenter().isEmpty())) {
                        throw new IllegalArgumentException(config + ": --follow-jobs needs ports that name the data center"
                                + " they face (datacenter: NAME)");
                    }
                    reader = new JobRoutes(JobRoutes.SYSTEM, maxRanksPerJob);
                }
                watch = new RouteRegistryWatch(service, new EtcdClient(registry, Duration.ofSeconds(5), security), prefix,
                        reader).start();
                LOG.info(followJobs ? "routes follow the rank registrations under {}{}" : "routes from the registry {}{}",
                        registry, prefix);
            } catch (RuntimeException e) {
                service.close(); // detach: a gateway that cannot read its routes leaves nothing attached
                LOG.error("cannot start: {}", e.getMessage());
                return 1;
            }
        }
        // The JVM runs shutdown hooks on SIGTERM and SIGINT: detach there so nothing stays attached.
        Thread hook = new Thread(() -> {
            notifySystemd("STOPPING=1");
            service.close();
        }, "xaf-gateway-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        // Every mode installs the handler: without one, the JVM's default for SIGHUP stops the gateway.
        if (watch == null) reloadOnSighup(service::reload, "the config file");
        else reloadOnSighup(watch::resyncNow, "the routes from the registry");
        System.out.println(READY);
        System.out.flush();
        notifySystemd("READY=1\nSTATUS=forwarding (" + (watch == null ? "routes from " + config : "routes from " + registry + prefix)
                + ")\nMAINPID=" + ProcessHandle.current().pid());
        try {
            service.awaitStop();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }
}
