package io.xaforward.cli;

import io.xaforward.bench.BenchReport;
import io.xaforward.bench.ForwardBench;
import io.xaforward.bench.fuzz.FuzzBench;
import io.xaforward.testbed.CpuBudget;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code xaf bench}: benchmarks; {@code forward} compares the gateway modes on one emulated testbed. */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = {"Benchmarks: forwarding per gateway mode, all-reduce bandwidth, training time, a soak under faults, compute per training step.",
                "Each writes a Markdown table, JSON and PNG plots under --out DIR (default: a new directory"
                        + " xaf-bench/KIND-TIME in the working directory). Needs root."},
        footerHeading = "%nExample:%n",
        footer = {"  xaf bench forward --quick --out bench-results"},
        subcommands = {BenchCommand.Forward.class, AllReduceBenchCommand.class, BenchTrainCommand.class,
                BenchWireSecurityCommand.class, BenchCommand.Fuzz.class, BenchSoakCommand.class, BenchComputeCommand.class})
public final class BenchCommand {
    /**
     * Where a benchmark writes: {@code given} (--out), else a new directory xaf-bench/KIND-TIME under the user's working
     * directory, so a run never overwrites the reports shipped in docs/bench (pass --out docs/bench to replace them).
     */
    static Path outputDirectory(Path given, String kind) {
        if (given != null) return given;
        return UserPaths.workingDirectory().resolve("xaf-bench").resolve(kind + "-"
                + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    }

    /** {@code xaf bench forward}: rate, loss, CPU per packet and RTT of every gateway mode; writes md, json and png. */
    @Command(name = "forward", mixinStandardHelpOptions = true,
            description = "Forwarding benchmark: xdp vs kernel vs user-space relay vs AF_XDP user-space gateway vs a bare XDP redirect, per form pair and payload size.",
            footerHeading = "%nExample:%n",
            footer = {"  xaf bench forward --quick --out bench-results"})
    public static final class Forward implements Callable<Integer> {
        @Option(names = "--quick", description = "low paced rate, one run, two sizes: a correctness check under a minute")
        boolean quick;

        @Option(paramLabel = "N", names = "--runs", description = "runs per figure: median, min, max (default: 5)")
        int runs = 5;

        @Option(paramLabel = "LIST", hideParamSyntax = true, names = "--sizes", split = ",", description = "XAF payload sizes in bytes, comma separated; 0 = the largest the MTU allows (default: 64,512,1400,0)")
        List<Integer> sizes = new ArrayList<>(List.of(64, 512, 1400, 0));

        @Option(paramLabel = "LIST", hideParamSyntax = true, names = "--modes", split = ",", converter = Words.ForwardModeWord.class,
                description = "modes among reference, xdp, kernel, relay, afxdp, comma separated (default: all)")
        List<ForwardBench.Mode> modes;

        @Option(paramLabel = "MS", names = "--duration-ms", description = "traffic per sample in milliseconds (default: 1000)")
        long durationMs = 1000;

        @Option(paramLabel = "MS", names = "--warmup-ms", description = "unrecorded warm-up traffic per flow and mode before its samples, so gateway processes (the JVM relay) are measured warmed up (default: 1500)")
        long warmupMs = ForwardBench.Options.DEFAULT_WARMUP_MS;

        @Option(paramLabel = "PERCENT", names = "--gateway-cpu", description = "budget the gateway's CPU for every mode alike, "
                + "e.g. 25%%: a real-time duty-cycle thread on the gateway's CPU takes the rest, which holds the ports' NAPI "
                + "kernel threads and gateway processes the same way (default: 100%%, no budget)")
        String gatewayCpu = "100%";

        @Option(paramLabel = "DIR", names = "--out", description = "output directory (default: xaf-bench/forward-TIME in the working directory; docs/bench holds the shipped reports)")
        Path out;

        @Override
        public Integer call() throws Exception {
            System.setProperty("java.awt.headless", "true");
            double share = CpuBudget.parseShare(gatewayCpu);
            out = outputDirectory(out, "forward");
            if (runs < 1) throw new IllegalArgumentException("--runs must be >= 1");
            List<ForwardBench.Mode> m = modes == null ? List.of(ForwardBench.Mode.values()) : modes;
            ForwardBench.Options o = quick ? ForwardBench.Options.quick(m)
                    : new ForwardBench.Options(false, runs, List.copyOf(sizes), m, durationMs, 0, warmupMs);
            if (share < 1) o = o.withGatewayCpu(share);
            StringBuilder cmd = new StringBuilder("xaf bench forward");
            if (quick) cmd.append(" --quick");
            else cmd.append(" --runs ").append(runs).append(" --sizes ").append(String.join(",", sizes.stream().map(String::valueOf).toList()))
                    .append(" --duration-ms ").append(durationMs).append(" --warmup-ms ").append(warmupMs);
            cmd.append(" --modes ").append(String.join(",", m.stream().map(ForwardBench.Mode::configName).toList()));
            if (share < 1) cmd.append(" --gateway-cpu ").append(gatewayCpu);
            cmd.append(" --out ").append(out);
            ForwardBench.Result r = new ForwardBench(o, System.out).run(cmd.toString());
            BenchReport.write(r, out);
            System.out.println("bench: wrote " + out.resolve("forward.md") + ", forward.json, forward-pps.png, forward-cpu.png");
            return 0;
        }
    }

    /** {@code xaf bench fuzz}: generated frames through the XDP program against the Java reference; writes fuzz.md. */
    @Command(name = "fuzz", mixinStandardHelpOptions = true,
            description = "Fuzz the gateway decision: mutated, truncated and random frames through the XDP program "
                    + "(BPF_PROG_TEST_RUN) and the Java reference; every outcome and forwarded byte must agree and every "
                    + "drop must be counted. Writes OUT/fuzz.md; exit status 1 on any disagreement. Needs root.",
            footerHeading = "%nExample:%n",
            footer = {"  xaf bench fuzz --frames 100000 --out bench-results"})
    public static final class Fuzz implements Callable<Integer> {
        @Option(paramLabel = "N", names = "--frames", defaultValue = "1000000", description = "frames to fuzz (default: ${DEFAULT-VALUE})")
        long frames;

        @Option(paramLabel = "N", names = "--seed", defaultValue = "1", description = "seed of the frame generator (default: ${DEFAULT-VALUE})")
        long seed;

        @Option(paramLabel = "DIR", names = "--out", description = "output directory (default: xaf-bench/fuzz-TIME in the working directory; docs/bench holds the shipped reports)")
        Path out;

        @Override
        public Integer call() throws Exception {
            out = outputDirectory(out, "fuzz");
            if (frames < 1) throw new IllegalArgumentException("--frames must be >= 1");
            String command = "xaf bench fuzz --frames " + frames + " --seed " + seed;
            var report = FuzzBench.run(frames, seed, UserPaths.resolve(out.toString()), command, System.out);
            System.out.println("bench: wrote " + UserPaths.resolve(out.toString()).resolve("fuzz.md"));
            return report.clean() ? 0 : 1;
        }
    }
}
