package io.xaforward.gateway;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.function.Consumer;

/**
 * Follows the gateway's config file: a thread polls its modification time and, when it changed, reads the file again
 * and hands the new config to the gateway; SIGHUP calls {@link #reload()} directly. A file that is still being
 * written is read again at the next poll; one that fails to parse, or fails its owner, mode or link check, is
 * rejected (counted in {@link ReloadCounters}) and the running routes stay.
 */
final class ConfigFileWatcher {
    // The gateway's log lines keep the name operators know them by, whichever class writes them.
    private static final Logger LOG = LoggerFactory.getLogger(GatewayService.class);

    private static final long RELOAD_POLL_MS = 500;
    /** A changed config file is read again after this long and applied only when both reads agree. */
    private static final long SETTLE_MS = 200;
    /** As SETTLE_MS, for a file rewritten in place (same inode), where a writer's pause shows a shorter file. */
    private static final long IN_PLACE_SETTLE_MS = 2000;
    /** How long one reload waits for a process that holds the file open for writing (the watcher then tries again). */
    private static final long WRITER_WAIT_MS = 60_000;

    private final Path configFile;
    private final StableFileReader configReader;
    /** The route map's capacity, which bounds the routes a file may hold. */
    private final int maxRoutes;
    private final ReloadCounters counters;
    /** Where a config that parsed goes: the gateway's all-or-nothing apply (which counts its own outcome). */
    private final Consumer<GatewayConfig> apply;
    private volatile boolean stopped;
    private Thread thread;

    ConfigFileWatcher(Path configFile, int maxRoutes, ReloadCounters counters, Consumer<GatewayConfig> apply) {
        this.configFile = configFile;
        this.configReader = new StableFileReader(configFile, SETTLE_MS, IN_PLACE_SETTLE_MS, WRITER_WAIT_MS);
        this.maxRoutes = maxRoutes;
        this.counters = counters;
        this.apply = apply;
    }

    /** Starts the thread that reloads the file whenever it changes ({@code reload: true} in the config). */
    synchronized void start() {
        thread = Thread.ofPlatform().daemon(true).name("xaf-gateway-reload").start(this::watch);
    }

    /** Stops following the file; {@link #reload()} still works (SIGHUP). */
    synchronized void stop() {
        stopped = true;
        if (thread != null) thread.interrupt();
    }

    /**
     * Re-reads the config file (waiting until it stops changing, see {@link StableFileReader} for the settle rule)
     * and applies it. Throws, after counting the rejection, when the file cannot be read, parsed or trusted.
     */
    void reload() {
        GatewayConfig next;
        try {
            next = GatewayConfigParser.parse(configReader.read(), configFile.toString(), maxRoutes);
        } catch (GatewayConfigParser.UnsafeConfigFile e) {
            // The file is checked at every reload, as at start: one that someone else could have written is not
            // applied, whatever it holds; the running config stays (the caller logs the reason).
            counters.refused();
            throw e;
        } catch (RuntimeException e) {
            counters.rejected();
            throw e;
        }
        apply.accept(next);
    }

    private void watch() {
        FileTime last = mtime();
        while (!stopped) {
            try {
                Thread.sleep(RELOAD_POLL_MS);
            } catch (InterruptedException e) {
                return;
            }
            FileTime now = mtime();
            if (now == null || now.equals(last)) continue;
            last = now;
            try {
                reload();
            } catch (StableFileReader.StillBeingWritten e) {
                LOG.warn("reload postponed, keeping the running routes: {}", e.getMessage());
                last = null; // the next poll tries again
            } catch (RuntimeException e) {
                LOG.warn("reload rejected, keeping the running routes: {}", e.getMessage());
            }
        }
    }

    private FileTime mtime() {
        try {
            return Files.getLastModifiedTime(configFile);
        } catch (IOException e) {
            return null;
        }
    }
}
