package io.xaforward.bench.train;

import io.xaforward.bench.train.TrainBench.Cell;
import io.xaforward.bench.train.TrainBench.Config;
import io.xaforward.bench.train.TrainBench.Run;
import io.xaforward.cluster.SyncMode;
import io.xaforward.cluster.TrainResult;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.training.Evaluation;

import io.xaforward.training.ModelConfig;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * The DiLoCo part of the training report ({@code xaf bench train --sync ddp,diloco}, issue 32): per cell the time
 * per step, the validation loss at the end (equal tokens: every job trains the same steps on the same global
 * batch), the training time it took to reach the DDP run's final validation loss, and the bytes that crossed the
 * WAN between the data centers per step, each against the reference DDP run, with the targets marked met or
 * missed; and a plot of validation loss against training time.
 */
final class DilocoReport {
    private DilocoReport() {}

    /** One evaluation of a run: after which step, after how much training time, and its figure. */
    record Point(long step, double seconds, Evaluation validation) {}

    /**
     * The run's evaluations in step order, each with the training time up to its step: the sum of the step times
     * (the slowest rank's), so time spent evaluating, starting and stopping counts for no trainer.
     */
    static List<Point> curve(TrainResult r) {
        List<TrainResult.Step> steps = r.steps().stream().sorted(Comparator.comparingLong(TrainResult.Step::step)).toList();
        List<Point> points = new ArrayList<>();
        double ms = 0;
        for (TrainResult.Step s : steps) {
            ms += s.stepMs();
            if (s.validation() != null) points.add(new Point(s.step(), ms / 1000, s.validation()));
        }
        return points;
    }

    /**
     * Bytes that crossed the WAN, both directions, per step: the WAN's counters from the end of step 1 to the end
     * of the job (the window every benchmark figure uses) over the steps in that window. NaN when not measured.
     */
    static double gatewayBytesPerStep(TrainResult r) {
        Map<String, Long> c = r.gatewayCounters();
        Long to = c.get("wan_bytes_to_dc"), from = c.get("wan_bytes_from_dc");
        int steps = r.steps().size() - 1;
        return to == null || from == null || steps < 1 ? Double.NaN : (double) (to + from) / steps;
    }

    /** Training time until the first evaluation at or below {@code target}; infinite when none reached it. */
    static double timeToLoss(TrainResult r, double target) {
        for (Point p : curve(r)) if (p.validation().loss() <= target) return p.seconds();
        return Double.POSITIVE_INFINITY;
    }

    /**
     * The DDP run whose final validation loss is the target: XAF's DDP cell over xdp (udp endpoint first), else XAF's
     * first DDP cell; null when no XAF DDP cell ran.
     */
    static Cell reference(Iterable<Cell> cells) {
        Cell best = null;
        int bestRank = Integer.MAX_VALUE;
        for (Cell c : cells) {
            if (!c.xaf() || c.sync() != SyncMode.DDP) continue;
            int rank = c.mode() != GatewayMode.XDP ? 2 : c.endpoint().configName().equals("udp") ? 0 : 1;
            if (rank < bestRank) {
                best = c;
                bestRank = rank;
            }
        }
        return best;
    }

    private static double median(List<Run> runs, ToDoubleFunction<TrainResult> f) {
        return TrainResult.median(runs.stream().mapToDouble(r -> f.applyAsDouble(r.result())).toArray());
    }

    private static double finalLoss(TrainResult r) {
        Evaluation e = r.lastValidation();
        return e == null ? Double.NaN : e.loss();
    }

    private static double finalError(TrainResult r) {
        Evaluation e = r.lastValidation();
        return e == null ? Double.NaN : e.standardError();
    }

    /** The figures of one cell against the reference DDP run. */
    record Row(Cell cell, double stepMs, double trainingSeconds, double loss, double standardError, double gapInDdpErrors,
               double secondsToDdpLoss, double speedUp, double bytesPerStep, double fewerBytes) {}

    static List<Row> rows(Map<Cell, List<Run>> byCell) {
        Cell ref = reference(byCell.keySet());
        List<Run> refRuns = ref == null ? null : byCell.get(ref);
        double target = refRuns == null ? Double.NaN : median(refRuns, DilocoReport::finalLoss);
        double targetError = refRuns == null ? Double.NaN : median(refRuns, DilocoReport::finalError);
        double refTime = refRuns == null ? Double.NaN : median(refRuns, r -> timeToLoss(r, target));
        double refBytes = refRuns == null ? Double.NaN : median(refRuns, DilocoReport::gatewayBytesPerStep);
        List<Row> rows = new ArrayList<>();
        for (var e : byCell.entrySet()) {
            List<Run> rs = e.getValue();
            double loss = median(rs, DilocoReport::finalLoss);
            double time = Double.isNaN(target) || Double.isNaN(loss) ? Double.NaN : median(rs, r -> timeToLoss(r, target));
            double bytes = median(rs, DilocoReport::gatewayBytesPerStep);
            rows.add(new Row(e.getKey(), median(rs, TrainResult::medianStepMs), median(rs, TrainResult::trainingSeconds),
                    loss, median(rs, DilocoReport::finalError), (loss - target) / targetError, time, refTime / time,
                    bytes, refBytes / bytes));
        }
        return rows;
    }

    private static String number(double v, String format) {
        if (Double.isNaN(v)) return "-";
        if (Double.isInfinite(v)) return "not reached";
        return String.format(Locale.ROOT, format, v);
    }

    private static String syncLabel(Cell c, DilocoGlooPeer.Settings s) {
        return c.sync() == SyncMode.DILOCO ? "diloco (" + DilocoGlooPeer.describe(s) + ")" : "ddp";
    }

    /** The section under a configuration's table: the DiLoCo table, the targets, the plot (written to {@code outDir}). */
    static String section(Config c, Map<Cell, List<Run>> byCell, DilocoGlooPeer.Settings s, Path outDir) throws IOException {
        StringBuilder md = new StringBuilder();
        Cell ref = reference(byCell.keySet());
        md.append("### ").append(c.name()).append(": DDP against DiLoCo\n\n");
        if (ref == null) {
            md.append("No XAF DDP cell ran, so there is no DDP loss to reach (run with `--sync ddp,diloco`).\n\n");
        } else {
            md.append(String.format(Locale.ROOT, "Reference: XAF's DDP over %s (%s). Validation: the whole split, every %d steps"
                            + " and after the last (after %d steps every row has trained the same %,d tokens).%n%n",
                    ref.mode().configName(), ref.endpointLabel(), s.evalEvery(), c.steps(),
                    c.steps() * c.globalBatch() * (long) ModelConfig.preset(c.preset()).contextLength()));
        }
        md.append("| trainer | sync | gateway | time per step, ms | training time, s | validation loss at the end ± SE"
                + " | gap to DDP, in DDP's SE | time to DDP's final validation loss, s | vs DDP | WAN bytes per step | fewer bytes than DDP |\n");
        md.append("|---|---|---|---|---|---|---|---|---|---|---|\n");
        List<Row> rows = rows(byCell);
        for (Row r : rows) {
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n",
                    r.cell().xaf() ? "xaf " + r.cell().endpointLabel() : r.cell().peer(), syncLabel(r.cell(), s),
                    r.cell().mode().configName(), number(r.stepMs(), "%.0f"), number(r.trainingSeconds(), "%.1f"),
                    Double.isNaN(r.loss()) ? "-" : String.format(Locale.ROOT, "%.4f ± %.4f", r.loss(), r.standardError()),
                    number(r.gapInDdpErrors(), "%+.1f"), number(r.secondsToDdpLoss(), "%.1f"),
                    Double.isNaN(r.speedUp()) || Double.isInfinite(r.secondsToDdpLoss()) ? "-" : String.format(Locale.ROOT, "%.2fx shorter", r.speedUp()),
                    number(r.bytesPerStep(), "%,.0f"), number(r.fewerBytes(), r.fewerBytes() < 10 ? "%.2fx" : "%.0fx")));
        }
        md.append('\n');
        md.append(BenchTrainText.DILOCO);
        md.append(targets(rows, ref));
        md.append("![validation loss against training time](train-").append(c.name()).append("-diloco-loss.png)\n\n");
        plot(c, byCell, rows, outDir);
        return md.toString();
    }

    /** The targets for XAF's DiLoCo cell on the reference's endpoint and gateway, marked met or missed. */
    static String targets(List<Row> rows, Cell ref) {
        if (ref == null) return "";
        Row diloco = rows.stream().filter(r -> r.cell().equals(new Cell(ref.endpoint(), ref.mode(), SyncMode.DILOCO))).findFirst().orElse(null);
        if (diloco == null) return "";
        StringBuilder md = new StringBuilder("Targets (issue 32), XAF's DiLoCo over " + ref.mode().configName() + " against its DDP:\n\n");
        md.append(String.format(Locale.ROOT, "- >= 100x fewer bytes through the gateway per step: %s (%sx).%n",
                verdict(diloco.fewerBytes() >= 100), number(diloco.fewerBytes(), "%.1f")));
        md.append(String.format(Locale.ROOT, "- validation loss at equal tokens within 2 standard errors of DDP's: %s (gap %s SE).%n",
                verdict(Math.abs(diloco.gapInDdpErrors()) <= 2 || diloco.gapInDdpErrors() < 0), number(diloco.gapInDdpErrors(), "%+.1f")));
        md.append(String.format(Locale.ROOT, "- time to DDP's final validation loss >= 2x shorter: %s (%s).%n",
                verdict(diloco.speedUp() >= 2 && Double.isFinite(diloco.secondsToDdpLoss())),
                Double.isInfinite(diloco.secondsToDdpLoss()) ? "not reached" : number(diloco.speedUp(), "%.2fx")));
        List<Row> gloo = rows.stream().filter(r -> r.cell().peer().equals(DilocoGlooPeer.NAME)).toList();
        if (!gloo.isEmpty()) {
            Row best = gloo.stream().min(Comparator.comparingDouble(Row::stepMs)).orElseThrow();
            boolean ahead = diloco.stepMs() < best.stepMs() && !(diloco.secondsToDdpLoss() > best.secondsToDdpLoss());
            md.append(String.format(Locale.ROOT, "- DiLoCo over XAF ahead of DiLoCo over Gloo at the same H: %s (%s against %s ms per"
                            + " step, the faster Gloo path %s; time to DDP's loss %s against %s).%n",
                    verdict(ahead), number(diloco.stepMs(), "%.0f"), number(best.stepMs(), "%.0f"), best.cell().mode().configName(),
                    number(diloco.secondsToDdpLoss(), "%.1f s"), number(best.secondsToDdpLoss(), "%.1f s")));
        }
        return md.append('\n').toString();
    }

    private static String verdict(boolean met) {
        return met ? "**met**" : "**missed**";
    }

    /** Validation loss against training time, one line per cell (its first run), and the DDP run's final loss. */
    static void plot(Config c, Map<Cell, List<Run>> byCell, List<Row> rows, Path outDir) throws IOException {
        System.setProperty("java.awt.headless", "true");
        XYSeriesCollection data = new XYSeriesCollection();
        double end = 0;
        for (var e : byCell.entrySet()) {
            List<Point> points = curve(e.getValue().getFirst().result());
            if (points.isEmpty()) continue;
            XYSeries s = new XYSeries(e.getKey().label());
            for (Point p : points) s.add(p.seconds(), p.validation().loss());
            end = Math.max(end, points.getLast().seconds());
            data.addSeries(s);
        }
        Cell ref = reference(byCell.keySet());
        if (ref != null) {
            double target = rows.stream().filter(r -> r.cell().equals(ref)).findFirst().orElseThrow().loss();
            XYSeries line = new XYSeries("DDP's final validation loss");
            line.add(0, target);
            line.add(end, target);
            data.addSeries(line);
        }
        JFreeChart chart = ChartFactory.createXYLineChart(c.name() + ": validation loss against training time",
                "training time, s (sum of step times)", "validation loss (whole split)", data, PlotOrientation.VERTICAL, true, false, false);
        chart.getXYPlot().setRenderer(new XYLineAndShapeRenderer(true, true));
        ((NumberAxis) chart.getXYPlot().getRangeAxis()).setAutoRangeIncludesZero(false); // losses differ in the decimals
        ChartUtils.saveChartAsPNG(outDir.resolve("train-" + c.name() + "-diloco-loss.png").toFile(), chart, 900, 500);
    }
}
