package io.xaforward.bench.allreduce;

import io.xaforward.common.Json;
import io.xaforward.collective.Algorithm;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Writes the result of {@link AllReduceBenchmark} as {@code allreduce.md} (tables), {@code allreduce.json} (every
 * run's time, for later analysis) and {@code allreduce.png} (busbw against size, one line per mode and algorithm,
 * rendered headless with JFreeChart).
 */
public final class AllReduceReport {
    private AllReduceReport() {}

    /** Writes the three files into {@code dir}; returns the markdown. */
    public static String write(AllReduceBenchmark.Result r, Path dir, String command, String machine) throws IOException {
        Files.createDirectories(dir);
        String md = markdown(r, command, machine);
        Files.writeString(dir.resolve("allreduce.md"), md);
        Files.writeString(dir.resolve("allreduce.json"), json(r, command, machine));
        plot(r, dir.resolve("allreduce.png"));
        if (profiled(r)) plotAgainstRoundTrip(r, dir.resolve(RTT_PNG));
        return md;
    }

    public static String markdown(AllReduceBenchmark.Result r, String command, String machine) {
        StringBuilder b = new StringBuilder();
        b.append("# All-reduce across emulated data centers\n\n");
        b.append("Command: `").append(command).append("`  \n");
        b.append("Machine: ").append(machine).append("  \n");
        b.append(String.format(Locale.ROOT, "Topology: `%s`, %d ranks (one worker JVM per host namespace), wall time %.0f s.%n%n",
                r.options().topology(), r.ranks(), r.wallSeconds()));
        b.append("algbw = bytes / time of one all-reduce (slowest rank); busbw = algbw · 2(n−1)/n, as nccl-tests ")
                .append("defines them; GB/s = 1e9 bytes/s. Median over runs, [min–max] of busbw over the same runs. ")
                .append(String.format(Locale.ROOT, "Each run times %d back-to-back all-reduces after a barrier; ", r.options().iterations()))
                .append(String.format(Locale.ROOT, "sizes below %s: %d runs, from %s on: %d runs. ",
                        AllReduceBenchmark.mb(List.of(r.options().bigSizeBytes())), r.options().runs(),
                        AllReduceBenchmark.mb(List.of(r.options().bigSizeBytes())), r.options().bigRuns()))
                .append("The first run of every cell also checks the result against a double-precision reference ")
                .append("(random floats, bound n·2^-23·Σ|x|) on every rank. ")
                .append("Every job is placed as `xaf bench train` places it: every veth of the testbed runs NAPI in a ")
                .append("kernel thread of its own; the gateway ports' threads are pinned to the gateway CPU, the workers, ")
                .append("their transport threads and the other veths' threads (hosts', switches', WAN: the emulated ")
                .append("fabric) to the worker CPU. ")
                .append("CPU per datagram: CPU time over the timed all-reduces divided by the datagrams the ranks sent ")
                .append("and received (data and ACKs, summed over ranks; each datagram counts at both ends, so sending ")
                .append("plus receiving one costs twice the figure). Endpoint: the worker JVMs' process CPU (user and ")
                .append("kernel time in their own threads: the system calls, the transport, the reduction). Fabric: ")
                .append("the emulated network's NAPI threads (bridging, WAN shaping, delivery up to the receiving ")
                .append("socket), what switches and NICs would do on real machines. Gateway: its ports' NAPI threads ")
                .append("and forwarding processes. Median over runs; '-' where not measured (Gloo reports no ")
                .append("datagram count).\n\n");
        b.append("| size | mode | algorithm | time median (ms) | algbw (GB/s) | busbw (GB/s) | busbw [min–max] | runs "
                + "| endpoint CPU per datagram sent or received (us) | fabric CPU per datagram (us) | gateway CPU per datagram (us) |\n");
        b.append("|---:|---|---|---:|---:|---:|---|---:|---:|---:|---:|\n");
        for (AllReduceBenchmark.Cell c : r.cells()) {
            b.append(String.format(Locale.ROOT, "| %s | %s | %s | %.1f | %.4f | %.4f | %.4f–%.4f | %d | %s | %s | %s |%n",
                    AllReduceBenchmark.mb(List.of(c.bytes())), c.mode(), c.algorithm(),
                    c.medianSeconds() * 1e3, c.algbw(), c.busbw(), c.busbwMin(), c.busbwMax(), c.seconds().length,
                    micros(c.medianCpuMicrosPerDatagram()), micros(c.medianFabricMicrosPerDatagram()),
                    micros(c.medianGatewayMicrosPerDatagram())));
        }
        if (profiled(r)) b.append(profileSection(r));
        AllReduceBenchmark.GoodputResult g = r.goodput();
        if (g != null && !g.rateLimited()) {
            b.append("\n## Goodput of one message stream each way, no rate limit\n\n");
            b.append(String.format(Locale.ROOT, "Topology `%s`: no rate-limited link. Rank 0 (DC a) and rank 2 (DC b) send each other %d MB at "
                            + "once through the XDP gateway (one XAF message each way, crc32c, unpaced), %d times. Goodput = payload bytes "
                            + "per direction / time.%n%n", g.topology(), g.bytes() >> 20, g.bitsPerSecond().length));
            b.append("| goodput median (Mbit/s) | runs (Mbit/s) | retransmits |\n|---:|---|---:|\n");
            b.append(String.format(Locale.ROOT, "| %.1f | %s | %d |%n", g.medianBitsPerSecond() / 1e6,
                    runsMbps(g),
                    g.retransmits()));
        } else if (g != null) {
            b.append("\n## Goodput on a rate-limited WAN\n\n");
            b.append(String.format(Locale.ROOT, "Topology `%s`: both gateway links limited to %.0f Mbit/s by HTB. Rank 0 (DC a) and rank 2 "
                            + "(DC b) send each other %d MB at once through the XDP gateway, %d times; every rank's transport is paced to "
                            + "%.1f Mbit/s (%.0f%% of the link, leaving room for headers). Goodput = payload bytes per direction / time.%n%n",
                    g.topology(), g.linkBitsPerSecond() / 1e6, g.bytes() >> 20, g.bitsPerSecond().length,
                    g.pacingBytesPerSecond() * 8 / 1e6, 100.0 * g.pacingBytesPerSecond() * 8 / g.linkBitsPerSecond()));
            b.append("| goodput median (Mbit/s) | fraction of link rate | runs (Mbit/s) | retransmits |\n|---:|---:|---|---:|\n");
            b.append(String.format(Locale.ROOT, "| %.1f | %.3f | %s | %d |%n", g.medianBitsPerSecond() / 1e6, g.fraction(),
                    runsMbps(g),
                    g.retransmits()));
        }
        b.append("\n![busbw against size](allreduce.png)\n");
        return b.toString();
    }

    public static String json(AllReduceBenchmark.Result r, String command, String machine) {
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("command", command);
        j.put("machine", machine);
        j.put("topology", r.options().topology().toString());
        j.put("ranks", r.ranks());
        j.put("iterations_per_run", r.options().iterations());
        j.put("wall_seconds", r.wallSeconds());
        List<Map<String, Object>> cells = new ArrayList<>();
        for (AllReduceBenchmark.Cell c : r.cells()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("bytes", c.bytes());
            m.put("mode", c.mode());
            m.put("algorithm", c.algorithm());
            m.put("seconds", c.seconds());
            m.put("median_seconds", c.medianSeconds());
            m.put("algbw_gbps", c.algbw());
            m.put("busbw_gbps", c.busbw());
            m.put("busbw_min_gbps", c.busbwMin());
            m.put("busbw_max_gbps", c.busbwMax());
            if (!Double.isNaN(c.medianCpuMicrosPerDatagram())) {
                m.put("endpoint_cpu_us_per_datagram", c.medianCpuMicrosPerDatagram());
            }
            if (!Double.isNaN(c.medianFabricMicrosPerDatagram())) {
                m.put("fabric_cpu_us_per_datagram", c.medianFabricMicrosPerDatagram());
            }
            if (!Double.isNaN(c.medianGatewayMicrosPerDatagram())) {
                m.put("gateway_cpu_us_per_datagram", c.medianGatewayMicrosPerDatagram());
            }
            if (c.profile() != null) {
                m.put("wan_profile", c.profile().name());
                m.put("round_trip_ms", c.profile().roundTripMs());
            }
            m.put("retransmits_per_job", c.retransmits());
            cells.add(m);
        }
        j.put("cells", cells);
        AllReduceBenchmark.GoodputResult g = r.goodput();
        if (g != null) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("topology", g.topology().toString());
            m.put("link_bps", g.linkBitsPerSecond());
            m.put("pacing_bytes_per_second", g.pacingBytesPerSecond());
            m.put("bytes_each_way", g.bytes());
            m.put("bps", g.bitsPerSecond());
            m.put("median_bps", g.medianBitsPerSecond());
            m.put("fraction_of_link", g.rateLimited() ? g.fraction() : null);
            m.put("retransmits", g.retransmits());
            j.put("goodput", m);
        }
        return Json.pretty(j);
    }

    static void plot(AllReduceBenchmark.Result r, Path png) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Map<String, XYSeries> series = new LinkedHashMap<>();
        for (AllReduceBenchmark.Cell c : r.cells()) {
            String name = c.mode() + " / " + c.algorithm();
            series.computeIfAbsent(name, XYSeries::new).add(c.bytes() / (double) (1 << 20), c.busbw());
        }
        XYSeriesCollection data = new XYSeriesCollection();
        series.values().forEach(data::addSeries);
        JFreeChart chart = ChartFactory.createXYLineChart("All-reduce busbw, " + r.ranks() + " ranks across data centers",
                "size (MB)", "busbw (GB/s, median)", data, PlotOrientation.VERTICAL, true, false, false);
        XYPlot plot = chart.getXYPlot();
        LogAxis x = new LogAxis("size (MB, log scale)");
        x.setBase(2);
        plot.setDomainAxis(x);
        plot.setRenderer(new XYLineAndShapeRenderer(true, true));
        ChartUtils.saveChartAsPNG(png.toFile(), chart, 900, 540);
    }

    static final String RTT_PNG = "allreduce-rtt.png";

    /** Whether the cells ran over WAN profiles ({@code --wan-profile}). */
    static boolean profiled(AllReduceBenchmark.Result r) {
        return r.cells().stream().anyMatch(c -> c.profile() != null);
    }

    /** A profiled cell's row without its profile ("xdp @ metro" -> "xdp"). */
    static String rowWithoutProfile(AllReduceBenchmark.Cell c) {
        int at = c.mode().lastIndexOf(" @ ");
        return c.profile() == null || at < 0 ? c.mode() : c.mode().substring(0, at);
    }

    /** The profiled cells: busbw per profile and the retransmissions of every job, and the plot against round trip. */
    static String profileSection(AllReduceBenchmark.Result r) {
        StringBuilder b = new StringBuilder("\n## Across WAN profiles\n\n");
        Map<String, AllReduceBenchmark.Cell> seen = new LinkedHashMap<>();
        r.cells().stream().filter(c -> c.profile() != null).forEach(c -> seen.putIfAbsent(c.profile().name(), c));
        for (AllReduceBenchmark.Cell c : seen.values())
            b.append("- ").append(c.profile().describe()).append(": ").append(c.profile().emulates()).append('\n');
        b.append("\nEvery row over each profile's copy of the topology's WAN, profiles and rows taking turns job by job. ")
                .append("Retransmissions: every rank's in each job of the row (a job runs all sizes and algorithms of ")
                .append("its group); XAF's transports count chunks resent, Gloo's ranks TCP segments (/proc/net/snmp of ")
                .append("their namespaces).\n\n");
        b.append("| size | row | algorithm | WAN profile | round trip, ms | busbw (GB/s) | busbw [min–max] | retransmissions per job |\n");
        b.append("|---:|---|---|---|---:|---:|---|---|\n");
        for (AllReduceBenchmark.Cell c : r.cells()) {
            if (c.profile() == null) continue;
            b.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %.4f | %.4f–%.4f | %s |%n",
                    AllReduceBenchmark.mb(List.of(c.bytes())), rowWithoutProfile(c), c.algorithm(), c.profile().name(),
                    trimmed(c.profile().roundTripMs()), c.busbw(), c.busbwMin(), c.busbwMax(),
                    Arrays.stream(c.retransmits()).mapToObj(Long::toString).collect(Collectors.joining(", "))));
        }
        b.append("\n![busbw against round trip](").append(RTT_PNG).append(")\n");
        return b.toString();
    }

    private static String trimmed(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }

    /** busbw against the profiles' round trip, one line per row, algorithm and size. */
    static void plotAgainstRoundTrip(AllReduceBenchmark.Result r, Path png) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Map<String, XYSeries> series = new LinkedHashMap<>();
        for (AllReduceBenchmark.Cell c : r.cells()) {
            if (c.profile() == null) continue;
            String name = rowWithoutProfile(c) + " / " + c.algorithm() + " / " + AllReduceBenchmark.mb(List.of(c.bytes()));
            series.computeIfAbsent(name, XYSeries::new).add(c.profile().roundTripMs(), c.busbw());
        }
        XYSeriesCollection data = new XYSeriesCollection();
        series.values().forEach(data::addSeries);
        JFreeChart chart = ChartFactory.createXYLineChart("All-reduce busbw against the WAN's round trip, " + r.ranks() + " ranks",
                "round trip added by the WAN, ms", "busbw (GB/s, median)", data, PlotOrientation.VERTICAL, true, false, false);
        chart.getXYPlot().setRenderer(new XYLineAndShapeRenderer(true, true));
        ChartUtils.saveChartAsPNG(png.toFile(), chart, 900, 540);
    }

    /** Microseconds with two decimals, "-" when not measured. */
    private static String micros(double us) {
        return Double.isNaN(us) ? "-" : String.format(Locale.ROOT, "%.2f", us);
    }

    /** The goodput of every transfer in Mbit/s, comma separated. */
    private static String runsMbps(AllReduceBenchmark.GoodputResult g) {
        return Arrays.stream(g.bitsPerSecond()).mapToObj(v -> String.format(Locale.ROOT, "%.1f", v / 1e6)).collect(Collectors.joining(", "));
    }

    /** Algorithms by command-line name, for option parsing. */
    public static List<Algorithm> algorithms(String csv) {
        return Arrays.stream(csv.split(",")).map(Algorithm::fromName).toList();
    }
}
