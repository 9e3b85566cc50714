package io.xaforward.bench.soak;

import io.xaforward.bench.soak.SoakBench.FaultOutcome;
import io.xaforward.bench.soak.SoakBench.Result;
import io.xaforward.common.Json;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.plot.XYPlot;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The soak's report: soak.md (tables and the command), soak.json (every figure) and soak.png (steps over time). */
public final class SoakReport {
    private SoakReport() {}

    public static void write(Result r, Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("soak.md"), markdown(r));
        Files.writeString(dir.resolve("soak.json"), Json.pretty(json(r)));
        plot(r, dir.resolve("soak.png"));
    }

    /** What the console shows at the end: the report without its picture. */
    public static String summary(Result r) {
        String md = markdown(r);
        return md.substring(0, md.indexOf("\n![")).strip();
    }

    static String markdown(Result r) {
        SoakBench.Options o = r.options();
        StringBuilder md = new StringBuilder("# Soak under faults\n\n");
        md.append("```\n").append(o.command()).append("\n```\n\n");
        md.append(String.format(Locale.ROOT, "Four ranks (preset %s, batch 8, a checkpoint every %d steps, a weight checksum after every step) in"
                + " two emulated data centers (`%s`), deployed as on real hosts: etcd in the gateway host's namespace, the"
                + " XDP gateway (`xaf gateway --follow-jobs`) taking its routes from the ranks' etcd registrations, one"
                + " `xaf launch --max-restarts` per host. The job trained for %.0f s while the schedule `%s` (seed %d)"
                + " killed ranks, the gateway and etcd with SIGKILL. The soak restarts the gateway and etcd (as systemd"
                + " would; etcd after %d s, on the same data directory); the launchers restart the ranks from the newest"
                + " common checkpoint after `--restart-delay %d` (the ranks' `--op-timeout` is %d s).%n%n",
                o.preset(), o.checkpointEvery(), o.topology().getFileName(), r.trainedSeconds(), o.schedule().word(), o.seed(),
                SoakBench.ETCD_DOWNTIME.toSeconds(), o.restartDelay().toSeconds(), o.opTimeout().toSeconds()));
        md.append("| figure | value |\n|---|---|\n");
        row(md, "steps completed (the job's last step)", Long.toString(r.finalStep()));
        row(md, "steps computed by rank 0 (recomputed ones included)", Long.toString(r.stepsComputed()));
        row(md, "steps lost (recomputed after restarts)", Long.toString(r.stepsLost()));
        for (var e : r.restarts().entrySet()) row(md, e.getKey(), Integer.toString(e.getValue()));
        row(md, "chunks resent (sum of the ranks' counters)", Long.toString(r.retransmits()));
        row(md, "bytes resent (payload, sum of the ranks' counters)", Long.toString(r.resentBytes()));
        row(md, "bytes sent (XAF, all ranks)", Long.toString(r.sentBytes()));
        row(md, "gateway: frames forwarded (all incarnations)", Long.toString(r.gatewayForwarded()));
        row(md, "gateway: frames dropped", r.gatewayDrops().isEmpty() ? "0" : r.gatewayDropTotal() + " " + r.gatewayDrops());
        row(md, "steps whose weight checksum was compared (every rank, every run)", Integer.toString(r.checksummedSteps()));
        row(md, "final weights (step " + r.finalStep() + ")", r.identical()
                ? "identical on all ranks: " + r.finalChecksums().values().iterator().next()
                : "DIFFER: " + r.finalChecksums() + " " + r.mismatches());
        StepLedger.Accounting a = r.accounting();
        row(md, "every rank's steps 1.." + r.finalStep() + ", through its restarts", a.complete()
                ? "each exactly once on every rank (" + accounts(a) + ")"
                : "DO NOT ADD UP: " + a.problems() + " (" + accounts(a) + ")");
        SoakBench.Reference ref = r.reference();
        StepLedger.Comparison c = ref.comparison();
        row(md, String.format(Locale.ROOT, "fault-free reference, same seed and options, step %d (trained in %.0f s)",
                r.finalStep(), ref.seconds()), c.finalEqual() && c.differences().isEmpty()
                ? "equal: " + c.referenceChecksum() + "; loss and weights equal at all " + c.stepsEqual() + " steps"
                : "DIFFERS: soak " + c.checksum() + ", reference " + c.referenceChecksum() + "; " + c.stepsEqual()
                        + " of " + r.finalStep() + " steps equal; " + c.differences());
        if (!ref.accounting().complete() || ref.rankRestarts() > 0) {
            row(md, "the reference's own steps", ref.rankRestarts() + " rank restarts; " + ref.accounting().problems());
        }
        md.append("\n| fault | at, s | job step | component back after, s | training past that step after, s | steps recomputed | rank restarts |\n");
        md.append("|---|---|---|---|---|---|---|\n");
        for (FaultOutcome f : r.faults()) {
            md.append(String.format(Locale.ROOT, "| %s | %.1f | %d | %s | %s | %d | %d |%n", f.fault().word(), f.executedAt(),
                    f.stepAtFault(), SoakBench.format(f.componentBackAfter()), SoakBench.format(f.trainingPastFaultAfter()),
                    f.stepsLost(), f.rankRestarts()));
        }
        md.append("\n").append(READING).append("\n![job step over time, faults marked](soak.png)\n");
        return md.toString();
    }

    static final String READING = """
            How to read it: *component back* is when the broken part works again: a killed rank's next run has joined
            the world and agreed where to resume, a new gateway has attached and read its routes from etcd, etcd serves
            again and the gateway's watch of the registrations is up (`xaf_registry_up 1`). *Training past that step* is
            when every rank has completed a step beyond the one the job was at when the fault hit: the whole cost of the
            fault in time. A killed rank costs at least the ranks' `--op-timeout` (the others wait that long before
            they give up) plus the launchers' `--restart-delay`, and the steps since the newest checkpoint are computed
            again. A gateway killed and back within the op timeout costs only the retransmissions across the gap. A
            killed etcd costs the training nothing: the ranks do not need it once they have met, and the gateway keeps
            its routes while etcd is away. Every step whose checksum some rank reported in any run must have one
            checksum: a step recomputed after a restart gives bit for bit the weights it gave before. Ranks that agree
            with each other would also agree if a contribution had been lost or counted twice, so two more checks:
            each rank's own records, run by run, must give every step from 1 to the last exactly once (each run the
            steps after its resume point, consecutively; each resume point a step an earlier run of that rank
            completed); and the same job, same seed and options, trained again without faults to the same step must
            have the same loss and weights at every step. The exit status is 1 unless all of it holds.
            """;

    /** "rank 0: 3 runs, 5187 records, 8 recomputed; ..." */
    private static String accounts(StepLedger.Accounting a) {
        StringBuilder sb = new StringBuilder();
        for (StepLedger.RankAccount k : a.ranks()) {
            if (!sb.isEmpty()) sb.append("; ");
            sb.append(String.format(Locale.ROOT, "rank %d: %d runs, %d step records, %d recomputed", k.rank(), k.runs(),
                    k.reported(), k.recomputed()));
        }
        return sb.toString();
    }

    private static void row(StringBuilder md, String k, String v) {
        md.append("| ").append(k).append(" | ").append(v).append(" |\n");
    }

    static Map<String, Object> json(Result r) {
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("command", r.options().command());
        j.put("schedule", r.options().schedule().word());
        j.put("seed", r.options().seed());
        j.put("testbed_prefix", r.testbedPrefix());
        j.put("trained_seconds", r.trainedSeconds());
        j.put("final_step", r.finalStep());
        j.put("steps_computed", r.stepsComputed());
        j.put("steps_lost", r.stepsLost());
        j.put("restarts", r.restarts());
        j.put("retransmits", r.retransmits());
        j.put("resent_bytes", r.resentBytes());
        j.put("sent_bytes", r.sentBytes());
        j.put("gateway_forwarded", r.gatewayForwarded());
        j.put("gateway_drops", r.gatewayDrops());
        j.put("checksummed_steps", r.checksummedSteps());
        j.put("final_checksums", r.finalChecksums());
        j.put("identical", r.identical());
        j.put("mismatches", r.mismatches());
        j.put("passed", r.passed());
        StepLedger.Accounting a = r.accounting();
        j.put("accounting", accounting(a));
        SoakBench.Reference ref = r.reference();
        Map<String, Object> rj = new LinkedHashMap<>();
        rj.put("seconds", ref.seconds());
        rj.put("rank_restarts", ref.rankRestarts());
        rj.put("checksum", ref.comparison().referenceChecksum());
        rj.put("soak_checksum", ref.comparison().checksum());
        rj.put("final_equal", ref.comparison().finalEqual());
        rj.put("steps_equal", ref.comparison().stepsEqual());
        rj.put("differences", ref.comparison().differences());
        rj.put("accounting", accounting(ref.accounting()));
        j.put("reference", rj);
        List<Map<String, Object>> faults = new ArrayList<>();
        for (FaultOutcome f : r.faults()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("fault", f.fault().word());
            m.put("component", f.fault().component().word());
            m.put("rank", f.fault().rank());
            m.put("executed_at", f.executedAt());
            m.put("step_at_fault", f.stepAtFault());
            m.put("component_back_after", f.componentBackAfter());
            m.put("training_past_fault_after", f.trainingPastFaultAfter());
            m.put("steps_lost", f.stepsLost());
            m.put("rank_restarts", f.rankRestarts());
            faults.add(m);
        }
        j.put("faults", faults);
        return j;
    }

    private static Map<String, Object> accounting(StepLedger.Accounting a) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("complete", a.complete());
        m.put("target", a.target());
        m.put("steps_held_by_every_rank", a.stepsAgreed());
        List<Map<String, Object>> ranks = new ArrayList<>();
        for (StepLedger.RankAccount k : a.ranks()) {
            Map<String, Object> rk = new LinkedHashMap<>();
            rk.put("rank", k.rank());
            rk.put("runs", k.runs());
            rk.put("step_records", k.reported());
            rk.put("steps_kept", k.kept());
            rk.put("recomputed", k.recomputed());
            ranks.add(rk);
        }
        m.put("ranks", ranks);
        m.put("problems", a.problems());
        return m;
    }

    static void plot(Result r, Path png) throws IOException {
        System.setProperty("java.awt.headless", "true");
        XYSeries steps = new XYSeries("job step (every rank done)");
        for (double[] p : r.progress()) steps.add(p[0], p[1]);
        JFreeChart chart = ChartFactory.createXYLineChart("Soak: training progress under faults", "seconds after the first step",
                "step", new XYSeriesCollection(steps), PlotOrientation.VERTICAL, true, false, false);
        XYPlot plot = chart.getXYPlot();
        plot.getRenderer().setSeriesPaint(0, Color.BLACK); // the fault markers take the colours
        for (FaultOutcome f : r.faults()) {
            ValueMarker m = new ValueMarker(f.executedAt());
            m.setPaint(switch (f.fault().component()) {
                case WORKER -> Color.RED;
                case GATEWAY -> Color.BLUE;
                case ETCD -> new Color(0, 140, 0);
            });
            m.setStroke(new BasicStroke(1.5f));
            m.setLabel(f.fault().word().substring(0, f.fault().word().indexOf('@')));
            plot.addDomainMarker(m);
        }
        ChartUtils.saveChartAsPNG(png.toFile(), chart, 900, 450);
    }
}
