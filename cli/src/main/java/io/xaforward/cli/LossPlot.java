package io.xaforward.cli;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.xaforward.common.Json;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYErrorRenderer;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;
import org.jfree.data.xy.YIntervalSeries;
import org.jfree.data.xy.YIntervalSeriesCollection;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Training and validation loss against the step, drawn from a metrics.jsonl file as a PNG; each validation point
 * carries an error bar of plus and minus one standard error.
 */
final class LossPlot {
    private LossPlot() {}

    static void write(Path metrics, Path png, String title) throws IOException {
        System.setProperty("java.awt.headless", "true");
        XYSeries train = new XYSeries("training loss");
        YIntervalSeries validation = new YIntervalSeries("validation loss ± 1 standard error");
        for (String line : Files.readAllLines(metrics)) {
            if (line.isBlank()) continue;
            JsonObject o = Json.parse(line).getAsJsonObject();
            long step = o.get("step").getAsLong();
            if (present(o.get("loss"))) train.add(step, o.get("loss").getAsDouble());
            if (present(o.get("val_loss"))) {
                double loss = o.get("val_loss").getAsDouble();
                double se = present(o.get("val_loss_se")) ? o.get("val_loss_se").getAsDouble() : 0;
                validation.add(step, loss, loss - se, loss + se);
            }
        }
        JFreeChart chart = ChartFactory.createXYLineChart(title, "step", "cross-entropy loss (nats)",
                new XYSeriesCollection(train), PlotOrientation.VERTICAL, true, false, false);
        XYPlot plot = chart.getXYPlot();
        plot.setBackgroundPaint(Color.WHITE);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
        XYLineAndShapeRenderer lines = new XYLineAndShapeRenderer(true, false);
        lines.setSeriesPaint(0, new Color(0x1f77b4));
        plot.setRenderer(0, lines);
        YIntervalSeriesCollection validationData = new YIntervalSeriesCollection();
        validationData.addSeries(validation);
        XYErrorRenderer points = new XYErrorRenderer();
        points.setDrawXError(false);
        points.setDefaultLinesVisible(true);
        points.setSeriesPaint(0, new Color(0xd62728));
        points.setErrorPaint(new Color(0xd62728));
        plot.setDataset(1, validationData);
        plot.setRenderer(1, points);
        ((org.jfree.chart.axis.NumberAxis) plot.getRangeAxis()).setAutoRangeIncludesZero(false);
        ChartUtils.saveChartAsPNG(png.toFile(), chart, 800, 450);
    }

    private static boolean present(JsonElement value) {
        return value != null && !value.isJsonNull();
    }
}
