package io.xaforward.cli;

import io.xaforward.bench.WanProfile;
import io.xaforward.bench.train.DilocoGlooPeer;
import io.xaforward.bench.train.TrainBench;
import io.xaforward.cluster.Endpoint;
import io.xaforward.cluster.SyncMode;
import io.xaforward.common.ConfigWord;
import io.xaforward.testbed.CpuBudget;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.training.DilocoConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code xaf bench train}: the endpoint x gateway ablation of one training job in a communication-bound and a
 * gateway-bound configuration, every job across the same emulated WAN and placed like real machines.
 */
@Command(name = "train", mixinStandardHelpOptions = true,
        description = "Training-time ablation: endpoint x gateway mode, comm-bound and gateway-bound; writes train.md, train.json and PNG plots.",
        footerHeading = "%nExample:%n",
        footer = {"  xaf bench train --quick --out bench-results",
                "  xaf bench train --sync ddp,diloco --configs comm-bound --modes xdp \\",
                "      --peers xaf,diloco-gloo --steps 200 --runs 1"})
final class BenchTrainCommand implements Callable<Integer> {
    static final List<String> CONFIGS = List.of("comm-bound", "gateway-bound", "edge");
    /** What runs without --configs. */
    static final List<String> DEFAULT_CONFIGS = List.of("comm-bound", "gateway-bound");

    @Option(paramLabel = "N", names = "--runs", defaultValue = "3", description = "runs per cell, interleaved (default: ${DEFAULT-VALUE})")
    int runs;

    @Option(paramLabel = "N", names = "--steps", defaultValue = "20", description = "training steps per job (default: ${DEFAULT-VALUE})")
    long steps;

    @Option(names = "--quick", description = "a smoke run for CI: xdp and direct, udp endpoint, 5 steps, one run")
    boolean quick;

    @Option(paramLabel = "LIST", hideParamSyntax = true, names = "--modes", split = ",", converter = Words.GatewayModeWord.class,
            description = "gateway modes (default: all: xdp,kernel,kernel-tunnel,relay,afxdp,direct, in that order)")
    List<GatewayMode> modes;

    @Option(paramLabel = "LIST", hideParamSyntax = true, names = "--endpoints", split = ",", converter = Words.EndpointWord.class,
            description = "worker endpoints, udp and/or afxdp (default: ${DEFAULT-VALUE})", defaultValue = "udp")
    List<Endpoint> endpoints;

    @Option(paramLabel = "LIST", hideParamSyntax = true, names = "--configs", split = ",",
            description = "configurations to run: comm-bound, gateway-bound, edge (default: comm-bound,gateway-bound)")
    List<String> configNames;

    @Option(paramLabel = "LIST", hideParamSyntax = true, names = "--peers", split = ",", defaultValue = "xaf",
            description = "trainers to run, interleaved run by run: xaf (XAF's workers, the modes and endpoints above) and/or "
                    + "ddp-gloo (PyTorch DDP over Gloo on Debian's python3-torch: kernel on the two-IPv4 topology, "
                    + "kernel-tunnel across the IPv4/IPv6 one; adds \"vs ddp-gloo\" columns), diloco-gloo (DiLoCo over Gloo, "
                    + "the same paths, with --sync-every and the outer settings below) and/or pytorch-xaf (the same PyTorch "
                    + "model through xaforward.torch and an xaf agent per rank, xdp) (default: ${DEFAULT-VALUE})")
    List<String> peers;

    @Option(paramLabel = "LIST", hideParamSyntax = true, names = "--sync", split = ",", defaultValue = "ddp", converter = Words.SyncModeWord.class,
            description = "how XAF's workers synchronise, each a cell of its own: ddp (every step's gradient through the gateway) "
                    + "and/or diloco (inside each data center every step, across every --sync-every steps); with diloco (or the "
                    + "diloco-gloo peer) every job evaluates the whole validation split every --sync-every steps and the report "
                    + "adds a DDP-against-DiLoCo table and a plot of validation loss against training time (default: ${DEFAULT-VALUE})")
    List<SyncMode> syncs;

    @Option(paramLabel = "H", names = "--sync-every", description = "DiLoCo: inner steps between outer steps, for XAF and "
            + "diloco-gloo alike (default: " + DilocoConfig.DEFAULT_SYNC_EVERY + ")")
    int syncEvery = DilocoConfig.DEFAULT_SYNC_EVERY;

    @Option(paramLabel = "LR", names = "--outer-lr", description = "DiLoCo: the outer Nesterov SGD's learning rate (default: "
            + DilocoConfig.DEFAULT_OUTER_LR + ")")
    double outerLr = DilocoConfig.DEFAULT_OUTER_LR;

    @Option(paramLabel = "M", names = "--outer-momentum", description = "DiLoCo: the outer SGD's Nesterov momentum, 0 for none "
            + "(default: " + DilocoConfig.DEFAULT_OUTER_MOMENTUM + ")")
    double outerMomentum = DilocoConfig.DEFAULT_OUTER_MOMENTUM;

    @Option(paramLabel = "DTYPE", names = "--outer-dtype", defaultValue = "fp32",
            description = "DiLoCo: number format of the outer all-reduce: fp32, bf16, int8 or int4 (default: ${DEFAULT-VALUE})")
    String outerDtype;

    @Option(paramLabel = "PERCENT", names = "--gateway-cpu", description = "budget the gateway's CPU for every mode alike, "
            + "e.g. 25%%: the job is placed (gateway on its own CPU) and a real-time duty-cycle thread on that CPU takes the "
            + "rest, which holds the ports' NAPI kernel threads and gateway processes the same way (default: 100%%, no budget)")
    String gatewayCpu = "100%";

    @Option(paramLabel = "LIST", names = "--wan-profile",
            description = "run every cell over each of these WANs, interleaved run by run, each set on the topologies' wan: "
                    + "section (rate, delay, loss): lan (0.1 ms round trip, no loss), metro (10 ms, 0.01%% loss), continental "
                    + "(50 ms, 0.1%% loss), all 200 Mbit/s; adds a table per profile and a plot of step time against round "
                    + "trip. Runs comm-bound only (chosen when --configs is not given), whose WAN rate the profiles share (default: none, the files' WAN)")
    String wanProfile;

    @Option(paramLabel = "DIR", names = "--out", description = "output directory (default: xaf-bench/train-TIME in the working directory; docs/bench holds the shipped reports)")
    Path out;

    @Override
    public Integer call() throws Exception {
        double share = CpuBudget.parseShare(gatewayCpu); // a bad budget fails before anything is set up
        List<WanProfile> profiles = wanProfile == null ? List.of() : WanProfile.parseList(wanProfile);
        List<String> wanted = configNames != null ? configNames : profiles.isEmpty() ? DEFAULT_CONFIGS : List.of("comm-bound");
        for (String c : wanted) {
            if (!CONFIGS.contains(c)) throw new IllegalArgumentException("unknown configuration '" + c + "' (known: " + String.join(", ", CONFIGS) + ")");
            // gateway-bound's WAN is wider than the delay line carries, and a profile's rate would make it comm-bound
            if (!profiles.isEmpty() && !c.equals("comm-bound"))
                throw new IllegalArgumentException("--wan-profile runs the comm-bound configuration only, not " + c);
        }
        TrainBench.checkPeers(peers); // an unknown peer fails before anything is set up
        TrainBench.checkSyncs(syncs);
        List<SyncMode> chosenSyncs = syncs;
        // DiLoCo's settings are checked when a DiLoCo cell will run; evaluations fall on its outer steps.
        boolean diloco = (peers.contains(TrainBench.XAF) && chosenSyncs.contains(SyncMode.DILOCO)) || peers.contains(DilocoGlooPeer.NAME);
        DilocoGlooPeer.Settings settings = diloco
                ? new DilocoGlooPeer.Settings(syncEvery, outerLr, outerMomentum, outerDtype, syncEvery) : null;
        out = BenchCommand.outputDirectory(out, "train");
        List<GatewayMode> chosen = modes != null ? modes
                : quick ? List.of(GatewayMode.XDP, GatewayMode.DIRECT) : List.of(GatewayMode.values());
        List<Endpoint> chosenEndpoints = endpoints;
        if (runs < 1 || steps < 2) throw new IllegalArgumentException("--runs must be >= 1 and --steps >= 2");
        Path cross = TrainCommand.shippedTopology("two-dc-wan.yaml"), same = TrainCommand.shippedTopology("two-dc-ipv4-wan.yaml");
        List<TrainBench.Config> configs = new ArrayList<>();
        if (quick) {
            configs.add(new TrainBench.Config("quick", cross, same, "200mbit", "tiny", 5, 8, chosenEndpoints, chosen,
                    "Smoke run: tiny GPT, 5 steps."));
        } else {
            if (wanted.contains("comm-bound")) configs.add(new TrainBench.Config("comm-bound", cross, same, "200mbit", "wide", steps, 8, chosenEndpoints, chosen,
                    "Wide one-layer GPT (1.9 M parameters, 7.5 MB gradient): the all-reduce across the WAN dominates a step."));
            if (wanted.contains("gateway-bound")) configs.add(new TrainBench.Config("gateway-bound", cross, same, "4gbit", "wide", steps, 8, chosenEndpoints, chosen,
                    "The same job with a WAN wider than any gateway here forwards: the gateway (and the endpoints) set"
                            + " the pace."));
            if (wanted.contains("edge")) configs.add(new TrainBench.Config("edge", TrainCommand.shippedTopology("two-dc-edge.yaml"),
                    TrainCommand.shippedTopology("two-dc-ipv4-edge.yaml"), TrainBench.NO_WAN, "wide", steps, 8, chosenEndpoints, chosen,
                    "Two ranks, one host per data center wired straight to the gateway: every gradient datagram crosses the"
                            + " gateway and nothing else forwards it (no switch, no emulated WAN), so the hosts' core pays"
                            + " only the ranks' compute and their sends and receives."));
        }
        Path work = Files.createTempDirectory("xaf-bench-train-");
        TrainBench bench = new TrainBench(configs, quick ? 1 : runs, out, work, System.out).withGatewayCpu(share).withPeers(peers)
                .withSync(chosenSyncs, settings)
                .withAgentCommand(LaunchCommand::agentCommand).withWanProfiles(profiles);
        System.setProperty("xaf.bench.command", "./xaf bench train" + (quick ? " --quick" : " --runs " + runs + " --steps " + steps)
                + (modes != null ? " --modes " + words(modes) : "")
                + (configNames != null ? " --configs " + String.join(",", configNames) : "") + " --endpoints " + words(endpoints)
                + (peers.equals(List.of(TrainBench.XAF)) ? "" : " --peers " + String.join(",", peers))
                + (syncs.equals(List.of(SyncMode.DDP)) ? "" : " --sync " + words(syncs))
                + (diloco ? " --sync-every " + syncEvery + " --outer-lr " + outerLr + " --outer-momentum " + outerMomentum
                        + " --outer-dtype " + outerDtype : "")
                + (gatewayCpu.equals("100%") ? "" : " --gateway-cpu " + gatewayCpu)
                + (profiles.isEmpty() ? "" : " --wan-profile " + String.join(",", profiles.stream().map(WanProfile::name).toList()))
                + " --out " + out);
        bench.run();
        return 0;
    }

    /** The command line's words for {@code constants}, comma separated. */
    private static String words(List<? extends ConfigWord> constants) {
        return String.join(",", constants.stream().map(ConfigWord::configName).toList());
    }
}
