package io.xaforward.bench;

import io.xaforward.common.Json;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.data.category.DefaultCategoryDataset;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * Turns a {@link ForwardBench.Result} into docs: forward.md (tables of medians with min-max, RTT, the ratios against
 * the project's targets), forward.json (every raw sample) and two PNG charts.
 */
public final class BenchReport {
    /** Median, min and max of one figure over the runs. */
    public record Stat(double median, double min, double max) {
        static Stat of(List<Double> v) {
            double[] s = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            if (s.length == 0) return new Stat(Double.NaN, Double.NaN, Double.NaN);
            double med = s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
            return new Stat(med, s[0], s[s.length - 1]);
        }
    }

    /** The samples of one row (mode, sender, flow, payload), aggregated over runs. */
    public record Row(ForwardBench.Mode mode, ForwardBench.Sender sender, String flow, int payload, List<ForwardBench.Sample> runs) {
        public Stat stat(ToDoubleFunction<ForwardBench.Sample> f) {
            return Stat.of(runs.stream().map(f::applyAsDouble).toList());
        }
        String label() {
            return mode.label() + " (" + sender.name().toLowerCase() + ")";
        }
    }

    public static List<Row> rows(ForwardBench.Result r) {
        Map<String, List<ForwardBench.Sample>> m = new LinkedHashMap<>();
        for (ForwardBench.Sample s : r.samples())
            m.computeIfAbsent(s.mode() + "|" + s.sender() + "|" + s.flow() + "|" + s.payload(), k -> new ArrayList<>()).add(s);
        List<Row> rows = new ArrayList<>();
        for (List<ForwardBench.Sample> l : m.values()) {
            ForwardBench.Sample f = l.getFirst();
            rows.add(new Row(f.mode(), f.sender(), f.flow(), f.payload(), l));
        }
        return rows;
    }

    public static void write(ForwardBench.Result r, Path dir) throws IOException {
        Files.createDirectories(dir);
        List<Row> rows = rows(r);
        Files.writeString(dir.resolve("forward.json"), json(r));
        Files.writeString(dir.resolve("forward.md"), markdown(r, rows));
        chart(rows, "Delivered packets per second (median of runs)", "kpps", s -> s.pps() / 1000, dir.resolve("forward-pps.png"));
        chart(rows, "Gateway CPU per packet (median of runs)", "ns per packet", ForwardBench.Sample::gatewayNsPerPacket,
                dir.resolve("forward-cpu.png"));
    }

    static String markdown(ForwardBench.Result r, List<Row> rows) {
        StringBuilder md = new StringBuilder();
        md.append("# Forwarding benchmark\n\n");
        md.append("Command: `").append(r.command()).append("`  \nMachine: ").append(r.machine()).append("  \n");
        md.append("Runs: ").append(r.options().runs()).append(" (modes interleaved per run), ")
                .append(r.options().durationMs()).append(" ms of traffic per sample")
                .append(r.options().lowRatePps() > 0 ? ", socket senders paced at " + r.options().lowRatePps() + " pps" : ", senders flat out")
                .append(r.options().gatewayCpuShare() < 1 ? String.format(Locale.ROOT,
                        ", gateway CPU budgeted to %.0f%% (a SCHED_FIFO duty-cycle thread on the gateway's CPU takes the rest)",
                        r.options().gatewayCpuShare() * 100) : "")
                .append(". Figures: median [min-max] over runs.\n\n");
        md.append("Senders: **live** = the kernel's XDP generator (BPF_PROG_TEST_RUN live frames, xaf_trafficgen, XDP_TX out of the ")
                .append("sender's veth: frames reach the gateway as XDP frames, no skb); **skb** = an AF_PACKET socket in the sender ")
                .append("(one sendto per frame: frames reach the gateway as skbs, which veth copies before XDP). The live generator ")
                .append("cannot drive the kernel IP stack, so kernel, relay and afxdp modes only have skb rows; xdp has both. Receiver: ")
                .append("xaf_sink (XDP, counts and drops). Gateway CPU = threaded-NAPI kthreads of the gateway ports + the gateway ")
                .append("process's threads; softirq = machine-wide /proc/stat softirq time (includes sender and receiver work). ")
                .append("Pinning per sample: sender thread and the hosts' NAPI kthreads on CPU0, the gateway (port kthreads and ")
                .append("any gateway process) on CPU1; the live generator makes one or two long test_run calls per sample. ")
                .append("Program ns/pkt = the kernel's run-time statistics (run_time_ns / run_cnt) of the XDP program on the gateway's ")
                .append("ingress port: the program alone, without the driver and redirect work that gateway CPU also holds; the statistics ")
                .append("are on for the whole bench, so every mode pays their two clock reads per program run. ")
                .append(r.options().warmupMs() > 0 ? "Before its samples, each flow of each mode gets " + r.options().warmupMs()
                        + " ms of unrecorded warm-up traffic (a gateway process, e.g. the JVM relay, is measured warmed up).\n\n" : "\n\n");
        if (r.liveFramesRefused() != null) {
            md.append("**No live rows in this run:** ").append(r.liveFramesRefused())
                    .append(". The reference and xdp modes were measured with skb senders alone, and the targets that compare live")
                    .append(" rows say 'not measured'.\n\n");
        }
        md.append("| mode | sender | flow | payload B | delivered kpps | Gbit/s | loss % | gateway CPU ns/pkt | program ns/pkt | softirq ns/pkt | gaps | reordered |\n");
        md.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Row row : rows) {
            md.append("| ").append(row.mode().label()).append(" | ").append(row.sender().name().toLowerCase()).append(" | ")
                    .append(row.flow()).append(" | ").append(row.payload()).append(" | ")
                    .append(fmt(row.stat(s -> s.pps() / 1000), "%.0f")).append(" | ")
                    .append(fmt(row.stat(ForwardBench.Sample::gbps), "%.2f")).append(" | ")
                    .append(fmt(row.stat(s -> s.loss() * 100), "%.2f")).append(" | ")
                    .append(fmt(row.stat(ForwardBench.Sample::gatewayNsPerPacket), "%.0f")).append(" | ")
                    .append(row.runs().stream().allMatch(x -> x.programRuns() == 0) ? "-" : fmt(row.stat(ForwardBench.Sample::programNsPerPacket), "%.0f")).append(" | ")
                    .append(fmt(row.stat(ForwardBench.Sample::softirqNsPerPacket), "%.0f")).append(" | ")
                    .append(row.runs().stream().mapToLong(ForwardBench.Sample::gaps).sum()).append(" | ")
                    .append(row.runs().stream().mapToLong(ForwardBench.Sample::reordered).sum()).append(" |\n");
        }
        md.append("\n## Round-trip time (UDP ping-pong of XAF control packets through the gateway)\n\n");
        md.append("| mode | flow | median us | p99 us |\n|---|---|---:|---:|\n");
        Map<String, List<ForwardBench.RttSample>> rtt = new LinkedHashMap<>();
        for (ForwardBench.RttSample s : r.rtts()) rtt.computeIfAbsent(s.mode().label() + " | " + s.flow(), k -> new ArrayList<>()).add(s);
        for (var e : rtt.entrySet())
            md.append("| ").append(e.getKey()).append(" | ")
                    .append(fmt(Stat.of(e.getValue().stream().map(x -> x.rtt().medianUs()).toList()), "%.1f")).append(" | ")
                    .append(fmt(Stat.of(e.getValue().stream().map(x -> x.rtt().p99Us()).toList()), "%.1f")).append(" |\n");
        md.append("\n## Ratios against the targets (64-byte payload, medians)\n\n");
        for (String line : ratios(rows)) md.append("- ").append(line).append('\n');
        md.append("\n![pps](forward-pps.png)\n\n![cpu](forward-cpu.png)\n\nRaw samples: forward.json.\n");
        return md.toString();
    }

    /** The target ratios the project set, computed from the 64-byte rows; missing rows are said to be missing. */
    static List<String> ratios(List<Row> rows) {
        List<String> out = new ArrayList<>();
        int size = rows.stream().mapToInt(Row::payload).min().orElse(64);
        Double ref = median(rows, ForwardBench.Mode.REFERENCE, ForwardBench.Sender.LIVE, "ipv4->ipv4", size, ForwardBench.Sample::pps);
        Double xdpSame = median(rows, ForwardBench.Mode.XDP, ForwardBench.Sender.LIVE, "ipv4->ipv4", size, ForwardBench.Sample::pps);
        for (String cross : List.of("ipv4->ipv6", "id->ipv4")) {
            Double x = median(rows, ForwardBench.Mode.XDP, ForwardBench.Sender.LIVE, cross, size, ForwardBench.Sample::pps);
            out.add(ratio("xdp " + cross + " (live) / bare-XDP reference pps", x, ref, 0.85));
        }
        out.add(0, ratio("xdp ipv4->ipv4 (live) / bare-XDP reference pps", xdpSame, ref, 0.95));
        Double refCpu = median(rows, ForwardBench.Mode.REFERENCE, ForwardBench.Sender.LIVE, "ipv4->ipv4", size, ForwardBench.Sample::gatewayNsPerPacket);
        Double xdpLiveCpu = median(rows, ForwardBench.Mode.XDP, ForwardBench.Sender.LIVE, "ipv4->ipv4", size, ForwardBench.Sample::gatewayNsPerPacket);
        out.add(1, ratioInv("xdp ipv4->ipv4 (live) / bare-XDP reference gateway CPU per packet", xdpLiveCpu, refCpu, 1.15));
        Double refProg = median(rows, ForwardBench.Mode.REFERENCE, ForwardBench.Sender.LIVE, "ipv4->ipv4", size, ForwardBench.Sample::programNsPerPacket);
        Double xdpProg = median(rows, ForwardBench.Mode.XDP, ForwardBench.Sender.LIVE, "ipv4->ipv4", size, ForwardBench.Sample::programNsPerPacket);
        out.add(2, difference("xdp ipv4->ipv4 (live) program ns/packet over the bare redirect's", xdpProg, refProg));
        Double xdpSkb = median(rows, ForwardBench.Mode.XDP, ForwardBench.Sender.SKB, "ipv4->ipv4", size, ForwardBench.Sample::pps);
        Double relay = median(rows, ForwardBench.Mode.RELAY, ForwardBench.Sender.SKB, "ipv4->ipv4", size, ForwardBench.Sample::pps);
        Double kernel = median(rows, ForwardBench.Mode.KERNEL, ForwardBench.Sender.SKB, "ipv4->ipv4", size, ForwardBench.Sample::pps);
        Double xdpCpu = median(rows, ForwardBench.Mode.XDP, ForwardBench.Sender.SKB, "ipv4->ipv4", size, ForwardBench.Sample::gatewayNsPerPacket);
        Double relayCpu = median(rows, ForwardBench.Mode.RELAY, ForwardBench.Sender.SKB, "ipv4->ipv4", size, ForwardBench.Sample::gatewayNsPerPacket);
        Double kernelCpu = median(rows, ForwardBench.Mode.KERNEL, ForwardBench.Sender.SKB, "ipv4->ipv4", size, ForwardBench.Sample::gatewayNsPerPacket);
        out.add(ratio("xdp / relay pps (both skb senders, relay warmed up)", xdpSkb, relay, 8));
        out.add(ratioInv("xdp / relay gateway CPU per packet", xdpCpu, relayCpu, 0.1));
        out.add(ratio("xdp / kernel pps (both skb senders)", xdpSkb, kernel, 1.3));
        out.add(ratioInv("xdp / kernel gateway CPU per packet", xdpCpu, kernelCpu, 1.0));
        Double xdpLive = xdpSame;
        out.add(ratio("xdp (live generator, no veth copy) / kernel (skb) pps", xdpLive, kernel, 2.0));
        Double afxdp = median(rows, ForwardBench.Mode.AFXDP, ForwardBench.Sender.SKB, "ipv4->ipv4", size, ForwardBench.Sample::pps);
        Double afxdpCpu = median(rows, ForwardBench.Mode.AFXDP, ForwardBench.Sender.SKB, "ipv4->ipv4", size, ForwardBench.Sample::gatewayNsPerPacket);
        out.add(compare("xdp / afxdp pps (both skb senders)", xdpSkb, afxdp));
        out.add(compare("xdp / afxdp gateway CPU per packet", xdpCpu, afxdpCpu));
        out.add(compare("afxdp / relay pps (both skb senders)", afxdp, relay));
        return out;
    }

    private static String ratio(String what, Double a, Double b, double target) {
        if (a == null || b == null || b == 0) return what + ": not measured in this run";
        double r = a / b;
        return String.format(Locale.ROOT, "%s: %.2fx (target >= %.2fx) %s", what, r, target, r >= target ? "MET" : "MISSED by " + pct(target, r));
    }

    /** A ratio without a project target (for context). */
    private static String compare(String what, Double a, Double b) {
        if (a == null || b == null || b == 0) return what + ": not measured in this run";
        return String.format(Locale.ROOT, "%s: %.2fx (no target)", what, a / b);
    }

    /** The extra nanoseconds of {@code a} over {@code b}, with the ratio (context for a CPU target). */
    private static String difference(String what, Double a, Double b) {
        if (a == null || b == null || b.isNaN() || a.isNaN() || b == 0) return what + ": not measured in this run";
        return String.format(Locale.ROOT, "%s: %.0f vs %.0f ns, +%.0f ns (%.2fx)", what, a, b, a - b, a / b);
    }

    private static String ratioInv(String what, Double a, Double b, double target) {
        if (a == null || b == null || b == 0) return what + ": not measured in this run";
        double r = a / b;
        return String.format(Locale.ROOT, "%s: %.2fx (target <= %.2fx) %s", what, r, target, r <= target ? "MET" : "MISSED by " + pct(r, target));
    }

    private static String pct(double want, double got) {
        return String.format(Locale.ROOT, "%.0f%%", (want - got) / want * 100);
    }

    static Double median(List<Row> rows, ForwardBench.Mode m, ForwardBench.Sender s, String flow, int payload,
                         ToDoubleFunction<ForwardBench.Sample> f) {
        return rows.stream().filter(r -> r.mode() == m && r.sender() == s && r.flow().equals(flow) && r.payload() == payload)
                .findFirst().map(r -> r.stat(f).median()).orElse(null);
    }

    private static String fmt(Stat s, String f) {
        return String.format(Locale.ROOT, f + " [" + f + "-" + f + "]", s.median(), s.min(), s.max());
    }

    private static void chart(List<Row> rows, String title, String axis, ToDoubleFunction<ForwardBench.Sample> f, Path file) throws IOException {
        DefaultCategoryDataset data = new DefaultCategoryDataset();
        for (Row r : rows) data.addValue(r.stat(f).median(), r.label(), r.flow() + " " + r.payload() + "B");
        JFreeChart chart = ChartFactory.createBarChart(title, "flow and payload", axis, data, PlotOrientation.VERTICAL, true, false, false);
        ChartUtils.saveChartAsPNG(file.toFile(), chart, 1400, 700);
    }

    /** Every raw sample and RTT measurement, snake_case keys. */
    static String json(ForwardBench.Result r) {
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("command", r.command());
        j.put("machine", r.machine());
        j.put("runs", r.options().runs());
        j.put("duration_ms", r.options().durationMs());
        j.put("low_rate_pps", r.options().lowRatePps());
        j.put("warmup_ms", r.options().warmupMs());
        j.put("live_frames_refused", r.liveFramesRefused());
        j.put("gateway_cpu_budget", r.options().gatewayCpuShare());
        List<Map<String, Object>> samples = new ArrayList<>();
        for (ForwardBench.Sample s : r.samples()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("mode", s.mode().label());
            m.put("sender", s.sender().name().toLowerCase(Locale.ROOT));
            m.put("flow", s.flow());
            m.put("payload", s.payload());
            m.put("frame_bytes", s.frameBytes());
            m.put("run", s.run());
            m.put("sent", s.sent());
            m.put("delivered", s.delivered());
            m.put("gaps", s.gaps());
            m.put("reordered", s.reordered());
            m.put("seconds", s.seconds());
            m.put("gateway_cpu_ns", s.gatewayCpuNs());
            m.put("softirq_ns", s.softirqNs());
            m.put("program_run_ns", s.programRunNs());
            m.put("program_runs", s.programRuns());
            samples.add(m);
        }
        j.put("samples", samples);
        List<Map<String, Object>> rtts = new ArrayList<>();
        for (ForwardBench.RttSample s : r.rtts()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("mode", s.mode().label());
            m.put("flow", s.flow());
            m.put("run", s.run());
            m.put("median_us", s.rtt().medianUs());
            m.put("p99_us", s.rtt().p99Us());
            m.put("samples", s.rtt().samples());
            rtts.add(m);
        }
        j.put("rtt", rtts);
        return Json.pretty(j);
    }

}
