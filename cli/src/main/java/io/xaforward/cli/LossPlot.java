package io.xaforward.cli;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.xaforward.training.Json;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Training and validation loss against the step, drawn from a metrics.jsonl file as a PNG. */
final class LossPlot {
    private LossPlot() {}

    static void write(Path metrics, Path png, String title) throws IOException {
        System.setProperty("java.awt.headless", "true");
        XYSeries train = new XYSeries("training loss");
        XYSeries validation = new XYSeries("validation loss");
        for (String line : Files.readAllLines(metrics)) {
            if (line.isBlank()) continue;
            JsonObject o = Json.parse(line).getAsJsonObject();
            long step = o.get("step").getAsLong();
            add(train, step, o.get("loss"));
            add(validation, step, o.get("val_loss"));
        }
        XYSeriesCollection data = new XYSeriesCollection();
        data.addSeries(train);
        data.addSeries(validation);
        JFreeChart chart = ChartFactory.createXYLineChart(title, "step", "cross-entropy loss (nats)", data,
                PlotOrientation.VERTICAL, true, false, false);
        XYPlot plot = chart.getXYPlot();
        plot.setBackgroundPaint(Color.WHITE);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer();
        renderer.setSeriesShapesVisible(0, false);
        renderer.setSeriesPaint(0, new Color(0x1f77b4));
        renderer.setSeriesPaint(1, new Color(0xd62728));
        renderer.setSeriesShapesVisible(1, true);
        plot.setRenderer(renderer);
        ((org.jfree.chart.axis.NumberAxis) plot.getRangeAxis()).setAutoRangeIncludesZero(false);
        ChartUtils.saveChartAsPNG(png.toFile(), chart, 800, 450);
    }

    private static void add(XYSeries series, long step, JsonElement value) {
        if (value != null && !value.isJsonNull()) series.add(step, value.getAsDouble());
    }
}
