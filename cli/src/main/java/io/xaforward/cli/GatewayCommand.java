package io.xaforward.cli;

import io.xaforward.gateway.GatewayMain;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.net.URI;
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

    @Option(names = "--registry", paramLabel = "URL", description = "etcd endpoint to take the routes from (the file then gives the ports), e.g. http://10.0.0.5:2379")
    URI registry;

    @Option(names = "--registry-prefix", paramLabel = "PREFIX", description = "with --registry: the key prefix of this gateway's routes, e.g. /xaf/routes/gw1/")
    String registryPrefix;

    @Override
    public Integer call() {
        if (registry == null) return GatewayMain.run(config);
        if (registryPrefix == null) throw new IllegalArgumentException("--registry needs --registry-prefix (where this gateway's routes are)");
        return GatewayMain.run(config, registry, registryPrefix);
    }
}
