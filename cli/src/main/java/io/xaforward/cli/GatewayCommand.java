package io.xaforward.cli;

import io.xaforward.common.EtcdSecurity;
import io.xaforward.dataplane.GatewayPins;
import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.GatewayInspector;
import io.xaforward.gateway.GatewayMain;
import io.xaforward.gateway.HostXdpStatus;
import io.xaforward.gateway.registry.JobRoutes;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code xaf gateway --config FILE}: runs an XAForward XDP gateway until SIGTERM/SIGINT; {@code status}, {@code routes}
 * and {@code unpin} look at or remove the gateway running (or left pinned) on the interfaces of a config.
 */
@Command(name = "gateway", mixinStandardHelpOptions = true,
        subcommands = {GatewayCommand.Status.class, GatewayCommand.Routes.class, GatewayCommand.Unpin.class},
        description = {"Run an XAForward XDP gateway until SIGTERM/SIGINT.",
                "Attaches the XDP program to the configured interfaces, programs the routes, serves counters on a"
                        + " Prometheus endpoint, applies route changes to the file without dropping traffic, and detaches on"
                        + " SIGTERM/SIGINT (or when killed). With --pin it stays attached on purpose, and a restarted gateway"
                        + " adopts it without dropping frames. Under systemd (Type=notify) it sends READY=1 once attached."
                        + " See docs/GATEWAY.md for the file format and docs/examples/gateway.yaml for a sample."},
        footerHeading = "%nExample:%n",
        footer = {"  ip netns exec thr253-gw xaf gateway --config docs/examples/gateway.yaml"})
final class GatewayCommand implements Callable<Integer> {
    @Option(names = {"-c", "--config"}, paramLabel = "FILE", description = "the gateway's YAML config (needed to run a gateway)")
    Path config;

    @Option(names = "--registry", paramLabel = "URL", description = "etcd endpoint to take the routes from (the file then gives the ports), e.g. https://10.0.0.5:2379 (TLS and credentials: --etcd-ca, --etcd-cert, --etcd-key, --etcd-user)")
    URI registry;

    @CommandLine.Mixin
    EtcdOptions etcd = new EtcdOptions();

    @Option(names = "--registry-prefix", paramLabel = "PREFIX", description = "with --registry: the key prefix of this gateway's routes, e.g. /xaf/routes/gw1/")
    String registryPrefix;

    @Option(names = "--follow-jobs", paramLabel = "PREFIX", description = "with --registry, instead of --registry-prefix:"
            + " derive the routes from the workers' rank registrations under PREFIX, /xaf/jobs/ (every job) or /xaf/jobs/JOB/"
            + " (one job); each port of the config names the data center it faces (datacenter: NAME). See docs/DEPLOY.md")
    String followJobs;

    @Option(names = "--max-ranks-per-job", paramLabel = "N", description = "with --follow-jobs: route at most N ranks of each job"
            + " (ranks 0..N-1; a job's registered world size bounds it further), so one job cannot fill the route map;"
            + " 1..65536 (default: ${DEFAULT-VALUE})")
    int maxRanksPerJob = JobRoutes.DEFAULT_MAX_RANKS_PER_JOB;

    @Option(names = "--pin", description = "pin the XDP links and maps under /sys/fs/bpf/xaforward/NAME/: the program keeps forwarding after the process ends,"
            + " and the next 'xaf gateway --pin' with the same name (and attach mode) adopts it without dropping frames ('xaf gateway unpin' removes it)")
    boolean pin;

    @Option(names = "--name", paramLabel = "NAME", description = "the gateway's name for --pin (default: the config file's name without its extension)")
    String name;

    @Option(names = "--attach", paramLabel = "MODE", converter = Words.AttachModeWord.class, description = "how to attach, instead of the config's 'attach:' word:"
            + " native (a BPF link of its own: the gateway owns each interface), native-or-generic, or dispatcher (through"
            + " libxdp's multiprog dispatcher, beside other XDP programs such as xdp-filter; needs libxdp and a kernel that"
            + " runs BPF extension programs). See docs/DEPLOY.md, Sharing the NIC (default: the config's word)")
    GatewayConfig.AttachMode attach;

    @Override
    public Integer call() {
        if (config == null) throw new IllegalArgumentException("missing --config FILE (or a subcommand: status, routes, unpin; see xaf gateway --help)");
        String pinName = pin ? nameOf(config, name) : null;
        if (registry == null) {
            if (followJobs != null) throw new IllegalArgumentException("--follow-jobs needs --registry URL");
            if (maxRanksPerJob != JobRoutes.DEFAULT_MAX_RANKS_PER_JOB) throw new IllegalArgumentException("--max-ranks-per-job needs --follow-jobs");
            if (etcd.given()) throw new IllegalArgumentException("--etcd-ca, --etcd-cert, --etcd-key, --etcd-user and --etcd-password-file need --registry URL");
            return GatewayMain.run(config, null, EtcdSecurity.NONE, null, false, JobRoutes.DEFAULT_MAX_RANKS_PER_JOB, pinName, attach);
        }
        if (followJobs != null) {
            if (registryPrefix != null) {
                throw new IllegalArgumentException("give --registry-prefix (routes written by the operator) or --follow-jobs"
                        + " (routes derived from the rank registrations), not both");
            }
            return GatewayMain.run(config, registry, etcd.security(), JobRoutes.checkPrefix(followJobs), true, maxRanksPerJob, pinName, attach);
        }
        if (maxRanksPerJob != JobRoutes.DEFAULT_MAX_RANKS_PER_JOB) throw new IllegalArgumentException("--max-ranks-per-job needs --follow-jobs");
        if (registryPrefix == null) {
            throw new IllegalArgumentException("--registry needs --registry-prefix (where this gateway's routes are) or"
                    + " --follow-jobs /xaf/jobs/ (routes derived from the workers' registrations)");
        }
        return GatewayMain.run(config, registry, etcd.security(), registryPrefix, false, JobRoutes.DEFAULT_MAX_RANKS_PER_JOB, pinName, attach);
    }

    /** {@code name}, or the config file's name without its extension. */
    static String nameOf(Path config, String name) {
        if (name != null) return name;
        String file = config.getFileName().toString();
        int dot = file.lastIndexOf('.');
        return dot > 0 ? file.substring(0, dot) : file;
    }

    @Command(name = "status", mixinStandardHelpOptions = true,
            description = {"Show the XAForward gateways on this host, or one gateway in detail.",
                    "Without --config: every XAForward XDP program attached on this host (each interface of this and every"
                            + " named network namespace, as xdp-loader status does for one), with its XDP link, the name it is"
                            + " pinned under and each gateway's route count and counters. With --config FILE: the gateway on"
                            + " that file's interfaces in detail (ports, attach mode, XDP links, MTUs, routes and counters, read"
                            + " from the program's maps); run it in the gateway's network namespace."},
            footerHeading = "%nExample:%n",
            footer = {"  xaf gateway status", "  ip netns exec thr253-gw \\", "      xaf gateway status --config docs/examples/gateway.yaml"})
    static final class Status implements Callable<Integer> {
        @Option(names = {"-c", "--config"}, paramLabel = "FILE", description = "the gateway's YAML config (default: list every XAForward program on the host)")
        Path config;

        @Option(names = "--name", paramLabel = "NAME", description = "with --config: the gateway's name, if it was pinned with --name (default: the config file's name without its extension)")
        String name;

        @Override
        public Integer call() {
            if (config == null) {
                if (name != null) throw new IllegalArgumentException("--name NAME needs --config FILE (without it, status lists every gateway on the host)");
                System.out.print(HostXdpStatus.scan().text());
                return 0;
            }
            try (GatewayInspector g = GatewayInspector.open(config, nameOf(config, name))) {
                System.out.print(g.statusText());
            }
            return 0;
        }
    }

    @Command(name = "routes", mixinStandardHelpOptions = true,
            description = {"List the routes the running (or pinned) gateway's route map holds: identifier -> action, egress port, form and next hop.",
                    "Run it in the gateway's network namespace."},
            footerHeading = "%nExample:%n",
            footer = {"  ip netns exec thr253-gw \\", "      xaf gateway routes --config docs/examples/gateway.yaml"})
    static final class Routes implements Callable<Integer> {
        @Option(names = {"-c", "--config"}, required = true, paramLabel = "FILE", description = "the gateway's YAML config")
        Path config;

        @Override
        public Integer call() {
            try (GatewayInspector g = GatewayInspector.open(config, null)) {
                System.out.print(g.routesText());
            }
            return 0;
        }
    }

    @Command(name = "unpin", mixinStandardHelpOptions = true,
            description = {"Remove the pins of a gateway started with --pin, detaching its XDP program.",
                    "The program is detached from every interface (at once, or when a still running gateway process of that"
                            + " name exits) and its maps are freed. A gateway pinned through libxdp's dispatcher is removed"
                            + " from the dispatchers of this network namespace's interfaces at once: run unpin in the gateway's"
                            + " namespace."},
            footerHeading = "%nExample:%n",
            footer = {"  nsenter --net=/run/netns/thr253-gw \\", "      xaf gateway unpin --config docs/examples/gateway.yaml"})
    static final class Unpin implements Callable<Integer> {
        @Option(names = {"-c", "--config"}, paramLabel = "FILE", description = "the gateway's YAML config, whose file name gives the gateway's name when --name is not given")
        Path config;

        @Option(names = "--name", paramLabel = "NAME", description = "the gateway's name (default: the config file's name without its extension)")
        String name;

        @Override
        public Integer call() {
            if (config == null && name == null) throw new IllegalArgumentException("give --config FILE or --name NAME");
            GatewayPins pins = GatewayPins.forGateway(config == null ? name : nameOf(config, name));
            List<String> removed = pins.remove();
            if (removed.isEmpty()) throw new IllegalStateException("nothing is pinned at " + pins.dir());
            System.out.println("removed " + pins.dir() + " (" + String.join(", ", removed) + ")");
            return 0;
        }
    }
}
