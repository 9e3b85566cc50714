package io.xaforward.bench.train;

import io.xaforward.training.Json;
import io.xaforward.cluster.TrainingJob;

import io.xaforward.cluster.TrainResult;

import io.xaforward.cluster.TrainJobSpec;

import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.data.category.DefaultCategoryDataset;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.function.ToDoubleFunction;

/**
 * {@code xaf bench train}: the same training job (same seed, data, steps) with each gateway mode, interleaved
 * (A B C A B C ...), several runs each. Writes a markdown table, PNG plots (loss curves, time per step) and the raw
 * numbers as JSON.
 */
public final class TrainBench {
    /** One benchmark configuration: a topology and a model, run under each of {@code modes}. */
    public record Config(String name, Path topology, String preset, long steps, int globalBatch, long pacingBytesPerSecond,
                         List<String> modes, String description) {}

    public record Run(String config, String mode, int run, TrainResult result) {}

    private final List<Config> configs;
    private final int runs;
    private final Path outDir;
    private final Path workRoot;
    private final PrintStream out;

    public TrainBench(List<Config> configs, int runs, Path outDir, Path workRoot, PrintStream out) {
        if (runs < 1) throw new IllegalArgumentException("runs must be >= 1");
        this.configs = configs;
        this.runs = runs;
        this.outDir = outDir;
        this.workRoot = workRoot;
        this.out = out;
    }

    public List<Run> run() throws Exception {
        List<Run> all = new ArrayList<>();
        int total = configs.stream().mapToInt(c -> c.modes().size()).sum() * runs, done = 0;
        Path corpus = workRoot.resolve("corpus.txt");
        for (Config c : configs) {
            for (int r = 1; r <= runs; r++) {
                for (String mode : c.modes()) {
                    done++;
                    out.printf(Locale.ROOT, "[%d/%d] %s: %s run %d ...%n", done, total, c.name(), mode, r);
                    Path work = Files.createDirectories(workRoot.resolve(c.name() + "-" + mode + "-" + r));
                    String prefix = "b" + Integer.toHexString(new Random().nextInt(0x100, 0x1000));
                    TrainJobSpec spec = new TrainJobSpec(c.topology(), prefix, mode, "hierarchical", c.preset(), c.steps(),
                            c.globalBatch(), 4242, 1e-3, Math.max(1, c.steps() / 10), 0, Math.max(1, c.steps() / 4),
                            corpus, 1, 0x5eed0002, 1, 4L << 20, c.pacingBytesPerSecond(), work, "see topology");
                    TrainResult res = new TrainingJob(spec, new PrintStream(PrintStream.nullOutputStream())).run();
                    out.printf(Locale.ROOT, "    %.1f ms/step (compute %.1f, communication %.1f), final loss %.4f%n",
                            res.medianStepMs(), res.meanComputeMs(), res.meanCommMs(), res.finalLoss());
                    all.add(new Run(c.name(), mode, r, res));
                }
            }
        }
        write(all);
        return all;
    }

    private static double median(List<Run> runs, ToDoubleFunction<Run> f) {
        return TrainResult.median(runs.stream().mapToDouble(f).toArray());
    }

    private void write(List<Run> all) throws IOException {
        Files.createDirectories(outDir);
        StringBuilder md = new StringBuilder();
        md.append("# Training time by gateway mode\n\n");
        md.append("Produced by `").append(System.getProperty("xaf.bench.command", "./xaf bench train")).append("`.\n");
        md.append("Machine: ").append(Runtime.getRuntime().availableProcessors()).append(" CPUs, ")
                .append(System.getProperty("os.name")).append(' ').append(System.getProperty("os.version"))
                .append(", JDK ").append(Runtime.version()).append(". Modes run interleaved (A B C A B C ...); ")
                .append(runs).append(" run(s) each; figures are medians with [min, max].\n\n");
        List<Map<String, Object>> json = new ArrayList<>();
        for (Config c : configs) {
            md.append("## ").append(c.name()).append("\n\n").append(c.description()).append("\n\n");
            md.append("| mode | time per step, ms | compute, ms | communication, ms | communication share | training time, s | final loss | xdp reduction vs this mode |\n");
            md.append("|---|---|---|---|---|---|---|---|\n");
            Map<String, List<Run>> byMode = new LinkedHashMap<>();
            for (Run r : all) if (r.config().equals(c.name())) byMode.computeIfAbsent(r.mode(), k -> new ArrayList<>()).add(r);
            double xdpTime = byMode.containsKey("xdp") ? median(byMode.get("xdp"), r -> r.result().trainingSeconds()) : Double.NaN;
            for (var e : byMode.entrySet()) {
                List<Run> rs = e.getValue();
                double step = median(rs, r -> r.result().medianStepMs());
                double min = rs.stream().mapToDouble(r -> r.result().medianStepMs()).min().orElse(Double.NaN);
                double max = rs.stream().mapToDouble(r -> r.result().medianStepMs()).max().orElse(Double.NaN);
                double comp = median(rs, r -> r.result().meanComputeMs());
                double comm = median(rs, r -> r.result().meanCommMs());
                double time = median(rs, r -> r.result().trainingSeconds());
                String reduction = e.getKey().equals("xdp") || Double.isNaN(xdpTime) ? "-"
                        : String.format(Locale.ROOT, "%.1f%%", 100 * (time - xdpTime) / time);
                md.append(String.format(Locale.ROOT, "| %s | %.1f [%.1f, %.1f] | %.1f | %.1f | %.0f%% | %.2f | %.4f | %s |%n",
                        e.getKey(), step, min, max, comp, comm, 100 * comm / (comp + comm), time,
                        rs.getFirst().result().finalLoss(), reduction));
                for (Run r : rs) {
                    Map<String, Object> run = new LinkedHashMap<>();
                    run.put("config", c.name());
                    run.put("mode", r.mode());
                    run.put("run", r.run());
                    run.put("median_step_ms", r.result().medianStepMs());
                    run.put("compute_ms", r.result().meanComputeMs());
                    run.put("comm_ms", r.result().meanCommMs());
                    run.put("training_s", r.result().trainingSeconds());
                    run.put("final_loss", r.result().finalLoss());
                    run.put("losses", r.result().steps().stream().map(TrainResult.Step::loss).toList());
                    json.add(run);
                }
            }
            md.append("\n![loss curves](train-").append(c.name()).append("-loss.png) ![time per step](train-")
                    .append(c.name()).append("-step.png)\n\n");
            plots(c, byMode);
        }
        Files.writeString(outDir.resolve("train.md"), md.toString());
        Files.writeString(outDir.resolve("train.json"), Json.pretty(json));
        out.println("wrote " + outDir.resolve("train.md"));
    }

    private void plots(Config c, Map<String, List<Run>> byMode) throws IOException {
        System.setProperty("java.awt.headless", "true");
        XYSeriesCollection losses = new XYSeriesCollection();
        DefaultCategoryDataset steps = new DefaultCategoryDataset();
        for (var e : byMode.entrySet()) {
            XYSeries s = new XYSeries(e.getKey());
            for (TrainResult.Step st : e.getValue().getFirst().result().steps()) s.add(st.step(), st.loss());
            losses.addSeries(s);
            steps.addValue(median(e.getValue(), r -> r.result().meanComputeMs()), "compute", e.getKey());
            steps.addValue(median(e.getValue(), r -> r.result().meanCommMs()), "communication", e.getKey());
        }
        JFreeChart loss = ChartFactory.createXYLineChart(c.name() + ": training loss by gateway mode", "step", "loss",
                losses, PlotOrientation.VERTICAL, true, false, false);
        ChartUtils.saveChartAsPNG(outDir.resolve("train-" + c.name() + "-loss.png").toFile(), loss, 800, 450);
        JFreeChart bars = ChartFactory.createStackedBarChart(c.name() + ": time per step", "gateway mode", "ms",
                steps, PlotOrientation.VERTICAL, true, false, false);
        ChartUtils.saveChartAsPNG(outDir.resolve("train-" + c.name() + "-step.png").toFile(), bars, 800, 450);
    }
}
