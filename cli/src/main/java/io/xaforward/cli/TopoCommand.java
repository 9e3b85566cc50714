package io.xaforward.cli;

import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.Testbed;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code xaf topo up|down|show FILE}: builds, removes and inspects the emulated data centers of a topology file
 * (network namespaces, veths, bridges, rate limits) through {@link Testbed}.
 */
@Command(name = "topo",
        mixinStandardHelpOptions = true,
        description = "Emulated data centers from a topology file (network namespaces and veth pairs).",
        footerHeading = "%nExample:%n",
        footer = {"  xaf topo up --topology topologies/two-dc.yaml", "  xaf topo down --topology topologies/two-dc.yaml"},
        subcommands = {TopoCommand.Up.class, TopoCommand.Down.class, TopoCommand.Show.class})
public final class TopoCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** Options every subcommand shares. */
    abstract static class Base implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = "--topology", paramLabel = "FILE", description = "topology YAML, e.g. topologies/two-dc.yaml (also accepted as the one argument)")
        Path topologyOption;

        @Parameters(index = "0", arity = "0..1", paramLabel = "FILE", description = "the topology file, as --topology FILE")
        Path file;

        @Option(paramLabel = "PREFIX", names = "--prefix", description = "the name prefix to use instead of the topology's own (1-6 of [a-z0-9])")
        String prefix;

        @Option(paramLabel = "DIR", names = "--state-dir", description = "directory of state files (default: ${DEFAULT-VALUE})")
        Path stateDir = Testbed.DEFAULT_STATE_DIR;

        Topology topology() {
            if (file != null && topologyOption != null && !file.equals(topologyOption)) {
                throw new IllegalArgumentException("two topologies given: " + file + " and --topology " + topologyOption + "; give one");
            }
            Path f = topologyOption != null ? topologyOption : file;
            if (f == null) throw new IllegalArgumentException("missing the topology: --topology FILE (e.g. topologies/two-dc.yaml)");
            Topology t = Topology.load(f);
            return prefix == null ? t : t.withPrefix(prefix);
        }

        /** Exit code 1 with one clear line unless root; namespaces and tc need it. */
        boolean requireRoot(String verb) {
            if (Netns.isRoot()) return true;
            spec.commandLine().getErr().println("xaf topo " + verb + " needs root (network namespaces)");
            return false;
        }
    }

    @Command(name = "up", mixinStandardHelpOptions = true, description = "Create (or complete) the testbed; running it again is harmless.",
            footerHeading = "%nExample:%n", footer = {"  xaf topo up --topology topologies/three-dc-min.yaml --xdp-pass"})
    static final class Up extends Base {
        @Option(names = "--xdp-pass", description = "attach an XDP_PASS program to the peers of all gateway ports (XDP_REDIRECT into a veth needs one)")
        boolean xdpPass;

        @Override
        public Integer call() {
            Topology t = topology();
            if (!requireRoot("up")) return 1;
            Testbed testbed = new Testbed(stateDir);
            TestbedState state = testbed.up(t);
            if (xdpPass) testbed.attachXdpPass(state);
            var out = spec.commandLine().getOut();
            out.printf("up: %s (prefix %s): %d hosts, %d gateway ports, %d namespaces; state in %s%n", t.name(), t.prefix(),
                    state.hosts().size(), state.gatewayPorts().size(), state.namespaces().size(), testbed.stateFile(t.prefix()));
            for (Node n : state.hosts())
                out.printf("  host %-4s dc %-4s ns %-16s %s%n", n.name(), n.datacenter(), n.namespace(), n.ipText());
            out.flush();
            return 0;
        }
    }

    @Command(name = "down", mixinStandardHelpOptions = true,
            description = "Remove everything 'up' made (also without a state file: every namespace named PREFIX-*).",
            footerHeading = "%nExample:%n", footer = {"  xaf topo down --topology topologies/three-dc-min.yaml"})
    static final class Down extends Base {
        @Override
        public Integer call() {
            Topology t = topology();
            if (!requireRoot("down")) return 1;
            new Testbed(stateDir).down(t);
            spec.commandLine().getOut().printf("down: %s (prefix %s) removed%n", t.name(), t.prefix());
            return 0;
        }
    }

    @Command(name = "show", mixinStandardHelpOptions = true, description = "Print the topology and its live state.",
            footerHeading = "%nExample:%n", footer = {"  xaf topo show --topology topologies/three-dc-min.yaml"})
    static final class Show extends Base {
        @Override
        public Integer call() {
            Topology t = topology();
            if (!requireRoot("show")) return 1;
            spec.commandLine().getOut().print(new Testbed(stateDir).show(t));
            spec.commandLine().getOut().flush();
            return 0;
        }
    }
}
