package io.xaforward.gateway;

/**
 * What the gateway's reloads have done since it started, for its metrics ({@link GatewayMetricsText}): reloads
 * applied, rejected and refused, whether the last one was applied, and when.
 *
 * <p>Thread-safe: the file watcher, SIGHUP, a route registry and the metrics text reach it from their own threads.
 * Each update changes its numbers together and {@link #snapshot()} reads them together, so a scrape never sees a
 * failure counted without its timestamp.
 */
final class ReloadCounters {

    /** The counters at one moment. */
    record Snapshot(int reloads, int failures, int fileRefusals, boolean lastSuccessful,
                    double lastAttemptEpochSeconds, double lastSuccessEpochSeconds) {
    }

    private int reloads;
    private int failures;
    /** Reloads refused because the config file failed its owner, mode or link check (also counted as failures). */
    private int fileRefusals;
    private boolean lastSuccessful = true;
    /** 0 until the first reload attempt. */
    private double lastAttemptEpochSeconds;
    /** The config applied at start counts as the first good one. */
    private double lastSuccessEpochSeconds = nowEpochSeconds();

    /** A new config was applied. */
    synchronized void applied() {
        reloads++;
        record(true);
    }

    /** A reload was rejected: the file did not parse, or the data plane could not take it; the running config stays. */
    synchronized void rejected() {
        record(false);
    }

    /** A reload was refused because the file failed its owner, mode or symbolic-link check (also a rejection). */
    synchronized void refused() {
        fileRefusals++;
        record(false);
    }

    synchronized int reloads() {
        return reloads;
    }

    synchronized Snapshot snapshot() {
        return new Snapshot(reloads, failures, fileRefusals, lastSuccessful, lastAttemptEpochSeconds,
                lastSuccessEpochSeconds);
    }

    private void record(boolean success) {
        lastSuccessful = success;
        lastAttemptEpochSeconds = nowEpochSeconds();
        if (success) lastSuccessEpochSeconds = lastAttemptEpochSeconds; else failures++;
    }

    private static double nowEpochSeconds() {
        return System.currentTimeMillis() / 1000.0;
    }
}
