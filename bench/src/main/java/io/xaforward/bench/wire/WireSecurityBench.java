package io.xaforward.bench.wire;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.CollectiveConfig;
import io.xaforward.collective.CollectiveGroup;
import io.xaforward.collective.Collectives;
import io.xaforward.protocol.XafHeader;
import io.xaforward.transport.AddressBook;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.ReliableTransport;
import io.xaforward.transport.RunNonce;
import io.xaforward.transport.TransportConfig;
import io.xaforward.transport.UdpDatagramPort;
import io.xaforward.transport.WireSeal;
import io.xaforward.transport.WireSecurity;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * What end-to-end protection costs: for each {@link WireSecurity} mode, (1) the time to seal and to open one
 * 1400-byte datagram on one core, and (2) the bus bandwidth of a ring all-reduce between ranks in this process
 * over UDP on 127.0.0.1 (no gateways, so the transport's own work is the bottleneck). Writes a Markdown table.
 */
public final class WireSecurityBench {
    /** What to measure. */
    public record Options(int ranks, long bytes, int iterations, int runs, int sealDatagrams, Path out) {}

    /** One row of the table. */
    public record Row(WireSecurity mode, double sealNanos, double openNanos, double[] busGbps) {
        double medianBusGbps() {
            double[] s = busGbps.clone();
            Arrays.sort(s);
            return s[s.length / 2];
        }
    }

    private static final int PAYLOAD = 1400;
    /** The chunk payload on a 9000-byte MTU path (TransportConfig: 9000 - IPv6 40 - UDP 8 - XAF 48). */
    private static final int JUMBO_PAYLOAD = 8904;
    private final Options options;
    private final PrintStream out;

    public WireSecurityBench(Options options, PrintStream out) {
        this.options = options;
        this.out = out;
    }

    public List<Row> run() throws Exception {
        JobSecret secret = JobSecret.generate();
        List<Row> rows = new ArrayList<>();
        double[][] bus = new double[WireSecurity.values().length][options.runs()];
        // Runs interleave the modes so that drift of a shared machine spreads over all of them.
        for (int run = 0; run < options.runs(); run++) {
            for (WireSecurity mode : WireSecurity.values()) {
                bus[mode.ordinal()][run] = busBandwidthGbps(mode, secret);
                out.printf(Locale.ROOT, "xaf: %-8s run %d: busbw %.2f Gbit/s%n", mode.configName(), run + 1,
                        bus[mode.ordinal()][run]);
            }
        }
        for (WireSecurity mode : WireSecurity.values()) {
            double[] nanos = sealOpenNanos(mode, secret);
            rows.add(new Row(mode, nanos[0], nanos[1], bus[mode.ordinal()]));
        }
        out.printf(Locale.ROOT, "xaf: seal + open per library (a JVM each, %d runs) ...%n", options.runs());
        List<SealOpenCost.Row> libraries = SealOpenCost.measure(PAYLOAD, options.sealDatagrams(), options.runs());
        List<MacCandidates.Result> candidates = new ArrayList<>();
        for (int payload : new int[] {PAYLOAD, JUMBO_PAYLOAD}) {
            out.printf(Locale.ROOT, "xaf: MAC candidates at %d bytes (a JVM each, %d runs) ...%n", payload,
                    options.runs());
            candidates.addAll(MacCandidates.measure(payload, options.sealDatagrams(), options.runs()));
        }
        write(rows, libraries, candidates);
        return rows;
    }

    /** {seal, open} nanoseconds per datagram, after a warm-up of the same length. */
    double[] sealOpenNanos(WireSecurity mode, JobSecret secret) {
        RunNonce run = RunNonce.generate();
        try (WireSeal sender = WireSeal.of(mode, secret, 1, run, 2048);
             WireSeal receiver = WireSeal.of(mode, secret, 1, run, 2048)) {
            return sealOpenNanos(mode, sender, receiver);
        }
    }

    private double[] sealOpenNanos(WireSecurity mode, WireSeal sender, WireSeal receiver) {
        MemorySegment datagram = Arena.ofAuto().allocate(2048);
        for (int i = 0; i < PAYLOAD; i++) {
            datagram.set(ValueLayout.JAVA_BYTE, XafHeader.LENGTH + i, (byte) i);
        }
        int data = PAYLOAD - sender.trailerLength();
        long seq = 1;
        XafHeader header = new XafHeader().wrap(datagram, 0);
        double[] result = new double[2];
        for (int pass = 0; pass < 2; pass++) { // pass 0 warms the JIT up
            long sealNanos = 0;
            long openNanos = 0;
            for (int i = 0; i < options.sealDatagrams(); i++) {
                header.init().type(1).flags(sender.flags()).jobId(1).srcRank(0)
                        .dstRank(1).step(i).chunkCount(1).payloadLength(PAYLOAD);
                long t0 = System.nanoTime();
                sender.seal(datagram, data, seq++);
                long t1 = System.nanoTime();
                if (receiver.open(datagram, 0, PAYLOAD) != WireSeal.OPENED) {
                    throw new IllegalStateException(mode + ": a sealed datagram did not open");
                }
                long t2 = System.nanoTime();
                sealNanos += t1 - t0;
                openNanos += t2 - t1;
            }
            result[0] = (double) sealNanos / options.sealDatagrams();
            result[1] = (double) openNanos / options.sealDatagrams();
        }
        return result;
    }

    /** Median over the iterations of one all-reduce's bus bandwidth, 2 (n - 1) / n x bytes / time. */
    double busBandwidthGbps(WireSecurity mode, JobSecret secret) throws Exception {
        int n = options.ranks();
        int count = (int) (options.bytes() / Float.BYTES);
        RunNonce run = RunNonce.generate();
        UdpDatagramPort[] ports = new UdpDatagramPort[n];
        AddressBook.Builder book = AddressBook.builder();
        for (int r = 0; r < n; r++) {
            ports[r] = new UdpDatagramPort(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            book.add(r, 0x0A000000 + r, ports[r].localPeer());
        }
        AddressBook addresses = book.build();
        ReliableTransport[] transports = new ReliableTransport[n];
        Collectives[] collectives = new Collectives[n];
        int[] dcs = new int[n];
        CollectiveConfig config = CollectiveConfig.defaults().withAlgorithm(Algorithm.RING)
                .withOperationTimeout(Duration.ofSeconds(120));
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] buffers = new MemorySegment[n];
            for (int r = 0; r < n; r++) {
                TransportConfig tc = TransportConfig.builder(r, 9, 0x5ec).windowChunks(256)
                        .wireSecurity(mode, mode.authenticated() ? secret : null, run).build();
                transports[r] = new ReliableTransport(tc, addresses, ports[r]).start();
                collectives[r] = new Collectives(new CollectiveGroup(r, n, dcs), transports[r], config);
                buffers[r] = arena.allocate(options.bytes(), 64);
                buffers[r].fill((byte) 0);
            }
            double[] gbps = new double[options.iterations()];
            for (int it = -1; it < options.iterations(); it++) { // iteration -1 warms up
                int step = it + 2;
                List<Future<?>> done = new ArrayList<>();
                long start = System.nanoTime();
                for (int r = 0; r < n; r++) {
                    int rank = r;
                    done.add(pool.submit(() -> {
                        collectives[rank].allReduce(buffers[rank], count, Collectives.Op.SUM, step);
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get();
                }
                double seconds = (System.nanoTime() - start) / 1e9;
                if (it >= 0) {
                    gbps[it] = 2.0 * (n - 1) / n * options.bytes() * 8 / seconds / 1e9;
                }
            }
            Arrays.sort(gbps);
            return gbps[gbps.length / 2];
        } finally {
            pool.shutdownNow();
            for (int r = 0; r < n; r++) {
                if (collectives[r] != null) collectives[r].close();
                if (transports[r] != null) transports[r].close();
                else ports[r].close();
            }
        }
    }

    private void write(List<Row> rows, List<SealOpenCost.Row> libraries, List<MacCandidates.Result> candidates)
            throws IOException {
        StringBuilder md = new StringBuilder();
        md.append("# Cost of wire security\n\n");
        md.append(String.format(Locale.ROOT, "Command: `%s`. Machine: %d cores, %s.%n%n",
                System.getProperty("xaf.bench.command", "xaf bench wire-security"),
                Runtime.getRuntime().availableProcessors(), System.getProperty("os.arch")));
        md.append(String.format(Locale.ROOT, "Seal/open: one %d-byte payload, mean of %d datagrams on one thread "
                + "(after as many for warm-up). Bus bandwidth: ring all-reduce of %d MB between %d ranks in one "
                + "process over UDP on 127.0.0.1, median of %d iterations, runs interleaved across modes.%n%n",
                PAYLOAD, options.sealDatagrams(), options.bytes() >> 20, options.ranks(), options.iterations()));
        md.append("| mode | seal ns/datagram | open ns/datagram | busbw Gbit/s (median of runs) | runs |\n");
        md.append("|---|---:|---:|---:|---|\n");
        for (Row r : rows) {
            StringBuilder runs = new StringBuilder();
            for (double g : r.busGbps()) {
                runs.append(runs.isEmpty() ? "" : ", ").append(String.format(Locale.ROOT, "%.2f", g));
            }
            md.append(String.format(Locale.ROOT, "| %s | %.0f | %.0f | %.2f | %s |%n", r.mode().configName(),
                    r.sealNanos(), r.openNanos(), r.medianBusGbps(), runs));
        }
        md.append(String.format(Locale.ROOT, "%n## Seal + open by library%n%nOne %d-byte payload (trailer "
                + "included) sealed and opened again through WireSeal on one thread, in direct memory as a port holds "
                + "it: median of %d runs, each variant in a JVM of its own (-Dxaf.wire.crypto picks the library), of "
                + "the mean over %d datagrams after as many for warm-up, in the thread's CPU time (what a shared "
                + "machine's other processes do not inflate) and in wall time; bytes allocated per datagram as the "
                + "JVM counts them. \"mac before\" is the HMAC-SHA256 tag this mode carried until AES-256-GMAC replaced "
                + "it, computed as WireSeal did (two MessageDigests, nothing allocated), plus crc32c's work.%n%n",
                PAYLOAD, options.runs(), options.sealDatagrams()));
        md.append(SealOpenCost.table(libraries));
        md.append(String.format(Locale.ROOT, "%n## MAC candidates%n%nThe primitives a wire-security mode can be "
                + "built on, sealing a datagram in direct memory (as a port holds it) with a fresh nonce each, on one "
                + "core: median of %d runs, each in a JVM of its own, of the mean over %d datagrams after as many for "
                + "warm-up. Ciphers run through a heap array (copy in, seal in place, copy out), as the JDK's "
                + "intrinsics need; bytes allocated per datagram as the JVM counts them.%n%n", options.runs(),
                options.sealDatagrams()));
        md.append("| candidate | protects against | payload B | ns/datagram | GB/s | B allocated/datagram |\n");
        md.append("|---|---|---:|---:|---:|---:|\n");
        for (MacCandidates.Result c : candidates) {
            md.append(String.format(Locale.ROOT, "| %s | %s | %d | %.0f | %.2f | %.0f |%n", c.name(), c.protects(),
                    c.payload(), c.nanosPerDatagram(), c.gbPerSecond(), c.bytesAllocatedPerDatagram()));
        }
        Files.createDirectories(options.out());
        Path file = options.out().resolve("wire-security.md");
        Files.writeString(file, md.toString());
        out.print(md);
        out.println("xaf: wrote " + file);
    }
}
