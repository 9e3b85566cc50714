package io.xaforward.cli;

import io.xaforward.bench.wire.WireSecurityBench;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code xaf bench wire-security}: what crc32c, mac and encrypt cost per datagram and in all-reduce bandwidth. */
@Command(name = "wire-security", mixinStandardHelpOptions = true,
        description = "Cost of end-to-end protection: seal/open ns per datagram and ring all-reduce busbw over UDP "
                + "loopback for crc32c, mac and encrypt; writes OUT/wire-security.md.",
        footerHeading = "%nExample:%n",
        footer = {"  xaf bench wire-security --ranks 2 --size-mb 8 --out bench-results"})
final class BenchWireSecurityCommand implements Callable<Integer> {
    @Option(paramLabel = "N", names = "--ranks", defaultValue = "4", description = "ranks in the all-reduce (default: ${DEFAULT-VALUE})")
    int ranks;

    @Option(paramLabel = "MB", names = "--size-mb", defaultValue = "16", description = "all-reduce size in MB (default: ${DEFAULT-VALUE})")
    int sizeMb;

    @Option(paramLabel = "N", names = "--iterations", defaultValue = "5", description = "timed all-reduces per run (default: ${DEFAULT-VALUE})")
    int iterations;

    @Option(paramLabel = "N", names = "--runs", defaultValue = "3", description = "runs per mode, interleaved (default: ${DEFAULT-VALUE})")
    int runs;

    @Option(paramLabel = "N", names = "--datagrams", defaultValue = "200000", description = "datagrams sealed and opened per mode (default: ${DEFAULT-VALUE})")
    int datagrams;

    @Option(paramLabel = "DIR", names = "--out", description = "output directory (default: xaf-bench/wire-security-TIME in the working directory; docs/bench holds the shipped reports)")
    Path out;

    @Override
    public Integer call() throws Exception {
        out = BenchCommand.outputDirectory(out, "wire-security");
        if (ranks < 2 || sizeMb < 1 || iterations < 1 || runs < 1 || datagrams < 1) {
            throw new IllegalArgumentException("need --ranks >= 2 and positive --size-mb, --iterations, --runs, --datagrams");
        }
        System.setProperty("xaf.bench.command", "./xaf bench wire-security --ranks " + ranks + " --size-mb " + sizeMb
                + " --iterations " + iterations + " --runs " + runs + " --datagrams " + datagrams);
        new WireSecurityBench(new WireSecurityBench.Options(ranks, (long) sizeMb << 20, iterations, runs, datagrams,
                UserPaths.resolve(out.toString())), System.out).run();
        return 0;
    }
}
