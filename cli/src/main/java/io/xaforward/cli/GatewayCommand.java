package io.xaforward.cli;

import io.xaforward.gateway.GatewayMain;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code xaf gateway --config FILE}: runs an XAForward XDP gateway until SIGTERM/SIGINT. */
@Command(name = "gateway", mixinStandardHelpOptions = true,
        description = {"Run an XAForward XDP gateway until SIGTERM/SIGINT.",
                "Attaches the XDP program to the configured interfaces, programs the routes, serves counters on a Prometheus endpoint, applies route changes to the file without",
                "dropping traffic, and detaches on SIGTERM/SIGINT. See docs/GATEWAY.md for the file format."})
final class GatewayCommand implements Callable<Integer> {
    @Option(names = {"-c", "--config"}, required = true, paramLabel = "FILE", description = "gateway YAML config")
    Path config;

    @Override
    public Integer call() {
        return GatewayMain.run(config);
    }
}
