package io.xaforward.bench.compute;

import io.xaforward.bench.compute.ComputeBench.Case;
import io.xaforward.bench.compute.ComputeBench.Result;
import io.xaforward.bench.compute.ComputeBench.Row;
import io.xaforward.common.Json;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.CategoryLabelPositions;
import org.jfree.chart.axis.LogarithmicAxis;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.renderer.category.BarRenderer;
import org.jfree.data.category.DefaultCategoryDataset;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The compute bench's report: compute.md (one table), compute.json (every step of every run) and compute.png. */
public final class ComputeReport {
    private ComputeReport() {}

    public static void write(Result r, Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("compute.md"), markdown(r));
        Files.writeString(dir.resolve("compute.json"), Json.pretty(json(r)));
        plot(r.rows(), dir.resolve("compute.png"));
    }

    static String markdown(Result r) {
        StringBuilder md = new StringBuilder("# Compute per training step: the Java trainer against PyTorch\n\n");
        md.append("Command: `").append(r.command()).append("`\n\n");
        md.append("Machine: ").append(r.machine()).append("; load average ").append(r.loadBefore()).append(" before, ")
                .append(r.loadAfter()).append(" after; GLIBC_TUNABLES ")
                .append(r.glibcTunables().isEmpty() ? "unset" : "`" + r.glibcTunables() + "`").append(".\n");
        if (r.torchVersion() != null) {
            md.append("PyTorch ").append(r.torchVersion()).append(" on ").append(String.join(", ", r.torchBlas())).append(".\n");
        }
        md.append("\nOne step = forward, backward, global-norm clipping, AdamW, on one process's micro-batch (batch =")
                .append(" windows per step). Medians over ").append(r.options().runs()).append(" interleaved run(s) of each")
                .append(" run's median of ").append(r.options().steps()).append(" steps after ").append(r.options().warmupSteps())
                .append(" warm-up step(s), [min-max over runs]. `java overlap` is the stage-by-stage backward of `--overlap on`")
                .append(" (rank 0 of two, its all-reduce a no-op); `java` is the single backward call (`--overlap off`, or one")
                .append(" rank). `pytorch` runs with the environment above (the C heap settings the Java trainer gets);")
                .append(" `pytorch stock-heap` without GLIBC_TUNABLES, as torch runs by default. Java fwd+bwd / AdamW: the trainer's own split of its step (StepStats). Loss: step 1's loss of")
                .append(" `java` and `pytorch` (same weights, same windows; they must agree).\n\n");
        md.append("| preset | batch | threads | java ms | java overlap ms | pytorch ms | pytorch stock-heap ms | java / pytorch | java fwd+bwd / AdamW ms | loss java / pytorch |\n");
        md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Case cell : r.options().cases()) {
            for (int threads : r.options().threads()) {
                Row java = r.row(cell, threads, ComputeBench.JAVA);
                Row overlap = r.row(cell, threads, ComputeBench.JAVA_OVERLAP);
                Row torch = r.row(cell, threads, ComputeBench.TORCH);
                Row torchDefault = r.row(cell, threads, ComputeBench.TORCH_STOCK_HEAP);
                md.append("| ").append(cell.preset()).append(" | ").append(cell.batch()).append(" | ").append(threads)
                        .append(" | ").append(figure(java)).append(" | ").append(figure(overlap)).append(" | ").append(figure(torch))
                        .append(" | ").append(figure(torchDefault))
                        .append(" | ").append(java != null && torch != null ? String.format(Locale.ROOT, "%.2fx", java.medianMs() / torch.medianMs()) : "—")
                        .append(" | ").append(java != null ? String.format(Locale.ROOT, "%.1f / %.1f", java.forwardBackwardMs(), java.optimizerMs()) : "—")
                        .append(" | ").append(java != null ? String.format(Locale.ROOT, "%.5f", java.firstLoss()) : "—").append(" / ")
                        .append(torch != null ? String.format(Locale.ROOT, "%.5f", torch.firstLoss()) : "—").append(" |\n");
            }
        }
        return md.toString();
    }

    private static String figure(Row row) {
        if (row == null) return "—";
        return String.format(Locale.ROOT, "%.1f [%.1f-%.1f]", row.medianMs(), row.minMs(), row.maxMs());
    }

    static Map<String, Object> json(Result r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("command", r.command());
        m.put("machine", r.machine());
        m.put("load_before", r.loadBefore());
        m.put("load_after", r.loadAfter());
        m.put("torch", r.torchVersion());
        m.put("torch_blas", r.torchBlas());
        m.put("glibc_tunables", r.glibcTunables());
        m.put("runs", r.options().runs());
        m.put("warmup_steps", r.options().warmupSteps());
        m.put("steps", r.options().steps());
        m.put("rows", r.rows());
        m.put("samples", r.samples().stream().map(s -> {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("preset", s.cell().preset());
            o.put("batch", s.cell().batch());
            o.put("threads", s.threads());
            o.put("trainer", s.trainer());
            o.put("run", s.run());
            o.put("step_ms", s.stepMillis());
            o.put("first_loss", s.firstLoss());
            return o;
        }).toList());
        return m;
    }

    /** The plot of {@code rows} (a report's, or read back from its compute.json). */
    public static void plot(List<Row> rows, Path png) throws IOException {
        System.setProperty("java.awt.headless", "true");
        DefaultCategoryDataset data = new DefaultCategoryDataset();
        for (Row row : rows) {
            data.addValue(row.medianMs(), row.trainer(), row.preset() + " b" + row.batch() + " t" + row.threads());
        }
        JFreeChart chart = ChartFactory.createBarChart("Training step on the CPU: Java trainer vs PyTorch (median)",
                "preset, batch, intra-op threads", "ms per step (log scale)", data, PlotOrientation.VERTICAL, true, false, false);
        LogarithmicAxis axis = new LogarithmicAxis("ms per step (log scale)");
        axis.setStrictValuesFlag(false);
        // bars start at the axis' lower end, not at zero, which a log axis cannot show
        ((BarRenderer) chart.getCategoryPlot().getRenderer()).setIncludeBaseInRange(false);
        chart.getCategoryPlot().setRangeAxis(axis);
        chart.getCategoryPlot().getDomainAxis().setCategoryLabelPositions(CategoryLabelPositions.UP_45);
        int width = Math.max(900, 90 * data.getColumnCount());
        ChartUtils.saveChartAsPNG(png.toFile(), chart, width, 540);
    }
}
