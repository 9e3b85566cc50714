package io.xaforward.cli;

import io.xaforward.bench.WanProfile;
import io.xaforward.bench.allreduce.AllReduceBenchmark;
import io.xaforward.bench.allreduce.AllReduceReport;
import io.xaforward.bench.allreduce.GlooPeer;
import io.xaforward.cluster.Endpoint;
import io.xaforward.collective.Algorithm;
import io.xaforward.testbed.CpuBudget;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.transport.WireSecurity;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code xaf bench allreduce}: all-reduce bandwidth (algbw, busbw) across the emulated data centers per size x
 * gateway mode x algorithm, and WAN goodput on the rate-limited topology; writes allreduce.md/.json/.png.
 */
@Command(name = "allreduce", mixinStandardHelpOptions = true,
        description = {"All-reduce bandwidth across the data centers of a topology (nccl-tests' algbw and busbw).",
                "One worker JVM per host namespace, median of several runs; plus goodput over a 100 Mbit/s rate-limited WAN.",
                "Writes allreduce.md, allreduce.json and allreduce.png. Needs root."},
        footerHeading = "%nExample:%n",
        footer = {"  xaf bench allreduce --quick --modes xdp,kernel --out bench-results"})
final class AllReduceBenchCommand implements Callable<Integer> {

    @Option(names = "--quick", description = "a short run: sizes 1,4,16 MB, 2 runs, a small goodput transfer")
    boolean quick;

    @Option(paramLabel = "LIST", names = "--sizes", description = "sizes in MB, comma separated (default: 1,4,16,64,256)")
    String sizes;

    @Option(paramLabel = "LIST", hideParamSyntax = true, names = "--modes", defaultValue = "xdp", split = ",",
            converter = Words.GatewayModeWord.class, description = "gateway modes, comma separated (default: ${DEFAULT-VALUE})")
    List<GatewayMode> modes;

    @Option(names = "--peers", defaultValue = "xaf", paramLabel = "LIST",
            description = "what all-reduces, comma separated: xaf (the modes above) and gloo (PyTorch's Gloo over TCP "
                    + "through kernel forwarding, or the kernel tunnel across IP families; installs python3-torch "
                    + "if missing) (default: ${DEFAULT-VALUE})")
    String peers;

    @Option(names = "--wire-security", defaultValue = "crc32c", paramLabel = "LIST", hideParamSyntax = true, split = ",",
            converter = Words.WireSecurityWord.class, description = "how XAF ranks protect datagrams, comma separated: crc32c, mac, encrypt; each one other "
                    + "than crc32c adds rows labelled MODE+SECURITY (default: ${DEFAULT-VALUE})")
    List<WireSecurity> wireSecurity;

    @Option(paramLabel = "LIST", hideParamSyntax = true, names = "--algorithms", defaultValue = "hierarchical,ring,ps", split = ",",
            converter = Words.AlgorithmWord.class, description = "all-reduce algorithms, comma separated: hierarchical, ring, ps (default: ${DEFAULT-VALUE})")
    List<Algorithm> algorithms;

    @Option(paramLabel = "ENDPOINT", names = "--endpoint", converter = Words.EndpointWord.class,
            description = "workers' endpoint: afxdp or udp (default: udp)")
    Endpoint endpoint;

    @Option(paramLabel = "LIST", names = "--flows", defaultValue = "1", split = ",", hideParamSyntax = true,
            description = "UDP flows per worker, comma separated: each count above 1 adds rows labelled MODE (N flows); "
                    + "the xdp gateways keep a worker's flows apart (src-port-span) (default: ${DEFAULT-VALUE})")
    List<Integer> flows;

    @Option(paramLabel = "N", names = "--runs", description = "runs per cell (default: 5; 2 with --quick)")
    Integer runs;

    @Option(paramLabel = "N", names = "--big-runs", defaultValue = "2", description = "runs for sizes of 256 MB and more (default: ${DEFAULT-VALUE})")
    int bigRuns;

    @Option(paramLabel = "N", names = "--iterations", defaultValue = "2", description = "timed all-reduces per run (default: ${DEFAULT-VALUE})")
    int iterations;

    @Option(paramLabel = "FILE", names = "--topology", description = "topology (default: topologies/two-dc.yaml; with "
            + "--wan-profile topologies/two-dc-ipv4-wan.yaml, so that Gloo crosses the same gateway by kernel forwarding)")
    Path topology;

    @Option(paramLabel = "LIST", names = "--wan-profile",
            description = "run every row over each of these WANs, set on the topology's wan: section (rate, delay, loss), "
                    + "interleaved job by job: lan (0.1 ms round trip, no loss), metro (10 ms, 0.01%% loss), continental "
                    + "(50 ms, 0.1%% loss), all 200 Mbit/s; adds a table per profile with every job's retransmissions and a "
                    + "plot of busbw against round trip (default: none, the topology as it is)")
    String wanProfile;

    @Option(paramLabel = "FILE", names = "--goodput-topology", description = "topology for goodput: with rate-limited links, goodput as a fraction of the link rate; without, the "
            + "line rate of one unpaced stream each way (default: topologies/two-dc-ratelimited.yaml; 'none' skips it)")
    String goodputTopology;

    @Option(paramLabel = "MB", names = "--goodput-mb", description = "MB each way per goodput transfer (default: 16; 4 with --quick)")
    Integer goodputMb;

    @Option(paramLabel = "FRACTION", names = "--pacing-fraction", defaultValue = "0.92", description = "transport pacing as a fraction of the link rate (default: ${DEFAULT-VALUE})")
    double pacingFraction;

    @Option(paramLabel = "PERCENT", names = "--gateway-cpu", description = "budget the gateway's CPU for every mode alike, "
            + "e.g. 25%%: every job is placed (gateway on its own CPU) and a real-time duty-cycle thread on that CPU takes the "
            + "rest, which holds the ports' NAPI kernel threads and gateway processes the same way (default: 100%%, no budget)")
    String gatewayCpu = "100%";

    @Option(paramLabel = "DIR", names = "--out", description = "where the report goes (default: xaf-bench/allreduce-TIME in the working directory; docs/bench holds the shipped reports)")
    Path out;

    @Option(paramLabel = "TEXT", names = "--machine", description = "machine description for the report (default: from /proc)")
    String machine;

    @Override
    public Integer call() throws Exception {
        double share = CpuBudget.parseShare(gatewayCpu); // a bad budget fails before anything is set up
        List<WanProfile> profiles = wanProfile == null ? List.of() : WanProfile.parseList(wanProfile);
        out = BenchCommand.outputDirectory(out, "allreduce");
        List<Long> sizeList = Arrays.stream((sizes != null ? sizes : quick ? "1,4,16" : "1,4,16,64,256").split(","))
                .map(String::trim).map(s -> (long) (Double.parseDouble(s) * (1 << 20)) / 4 * 4).toList();
        List<String> peerList = Arrays.stream(peers.split(",")).map(String::trim).toList();
        for (String p : peerList) {
            if (!p.equals("xaf") && !p.equals("gloo")) throw new IllegalArgumentException("unknown peer '" + p + "': use xaf, gloo");
        }
        // A mode and endpoint pair that cannot work fails before any setup.
        List<GatewayMode> modeList = peerList.contains("xaf") ? modes : List.of();
        for (GatewayMode m : modeList) Endpoint.resolve(endpoint, m);
        Path goodput = goodputTopology == null ? TrainCommand.shippedTopology("two-dc-ratelimited.yaml")
                : goodputTopology.equals("none") ? null : Path.of(goodputTopology);
        AllReduceBenchmark.Options o = new AllReduceBenchmark.Options(
                topology != null ? topology : TrainCommand.shippedTopology(profiles.isEmpty() ? "two-dc.yaml" : "two-dc-ipv4-wan.yaml"), modeList,
                algorithms, sizeList, runs != null ? runs : quick ? 2 : 5,
                256L << 20, bigRuns, iterations, goodput, (goodputMb != null ? goodputMb : quick ? 4 : 16) * (1L << 20),
                3, pacingFraction, Files.createTempDirectory("xaf-bench-allreduce-"), endpoint, peerList.contains("gloo"),
                wireSecurity.stream().distinct().toList(),
                (flows == null ? List.of(1) : flows).stream().distinct().toList(), profiles);
        if (o.gloo()) GlooPeer.kernelModeFor(o.topology()); // a clear error before setup
        AllReduceBenchmark.Result r = new AllReduceBenchmark(o, System.out).withGatewayCpu(share).run();
        List<String> args = spec.commandLine().getParseResult().originalArgs();
        String command = "xaf " + (!args.isEmpty() && args.get(0).equals("bench") ? "" : "bench allreduce ") + String.join(" ", args);
        String md = AllReduceReport.write(r, out, command.strip(), machine != null ? machine : describeMachine());
        System.out.println();
        System.out.print(md);
        System.out.println("xaf: report written to " + out.resolve("allreduce.md") + ", .json and .png");
        return 0;
    }

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    static String describeMachine() {
        String cpu = "unknown CPU";
        try {
            cpu = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                    .findFirst().map(l -> l.substring(l.indexOf(':') + 1).trim()).orElse(cpu);
        } catch (IOException ignored) {
            // keep the default
        }
        long memGb = 0;
        try {
            memGb = Files.readAllLines(Path.of("/proc/meminfo")).stream().filter(l -> l.startsWith("MemTotal"))
                    .findFirst().map(l -> Long.parseLong(l.replaceAll("[^0-9]", "")) / (1024 * 1024)).orElse(0L);
        } catch (IOException ignored) {
            // keep 0
        }
        return String.format("%d vCPU (%s), %d GiB RAM, Linux %s, Java %s; veth pairs between network namespaces, shared with other builds",
                Runtime.getRuntime().availableProcessors(), cpu, memGb, System.getProperty("os.version"),
                System.getProperty("java.version"));
    }
}
