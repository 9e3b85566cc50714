package io.xaforward.cluster;

import io.xaforward.training.Evaluation;
import io.xaforward.training.ModelConfig;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The result table printed at the end of {@code xaf train} and {@code xaf demo}. */
public final class SummaryTable {
    private SummaryTable() {}

    public static String render(TrainResult r) {
        List<String[]> rows = new ArrayList<>();
        TrainJobSpec s = r.spec();
        rows.add(row("gateway mode", s.cluster().gatewayMode().configName()));
        rows.add(row("workers", r.worldSize() + " (one JVM per host namespace)"));
        rows.add(row("model", s.trainer().preset() + String.format(Locale.ROOT, " (%,d parameters, %.2f MB gradient)", r.parameterCount(), r.parameterCount() * 4 / 1e6)));
        rows.add(row("steps x global batch", s.trainer().steps() + " x " + s.trainer().globalBatch()));
        rows.add(row("all-reduce", s.collective().algorithm().configName()));
        rows.add(row("final loss (train)", String.format(Locale.ROOT, "%.4f", r.finalLoss())));
        Evaluation validation = r.lastValidation();
        if (validation != null) {
            rows.add(row("validation loss", validation.figure() + " (standard error)"));
            rows.add(row("  evaluated on", validation.coverage(ModelConfig.preset(s.trainer().preset()).contextLength())));
        }
        rows.add(row("time per step (median)", String.format(Locale.ROOT, "%.1f ms", r.medianStepMs())));
        double c = r.meanComputeMs(), m = r.meanCommMs();
        rows.add(row("compute / communication", String.format(Locale.ROOT, "%.1f ms / %.1f ms (%.0f%% communication)", c, m, 100 * m / (c + m))));
        rows.add(row("training time (sum of steps)", String.format(Locale.ROOT, "%.1f s", r.trainingSeconds())));
        rows.add(row("wall time incl. setup", String.format(Locale.ROOT, "%.1f s", r.wallSeconds())));
        rows.add(row("weights identical on all ranks", "yes (checksum " + Long.toHexString(r.finalChecksum()) + ")"));
        Map<String, Long> g = r.gatewayCounters();
        if (g.containsKey("xaf_bytes_total{forwarded}")) {
            rows.add(row("bytes across the gateway", String.format(Locale.ROOT, "%.1f MB in %,d frames",
                    g.get("xaf_bytes_total{forwarded}") / 1e6, g.get("xaf_packets_total{forwarded}"))));
            long drops = g.entrySet().stream().filter(e -> e.getKey().startsWith("xaf_packets_total{drop_")).mapToLong(Map.Entry::getValue).sum();
            rows.add(row("gateway drops", Long.toString(drops)));
            rows.add(row("non-XAF frames passed", Long.toString(g.getOrDefault("xaf_packets_total{pass_non_xaf}", 0L))));
        } else {
            g.forEach((k, v) -> rows.add(row("gateway " + k, Long.toString(v))));
        }
        int w = rows.stream().mapToInt(x -> x[0].length()).max().orElse(10);
        int v = rows.stream().mapToInt(x -> x[1].length()).max().orElse(10);
        StringBuilder b = new StringBuilder();
        String line = "+" + "-".repeat(w + 2) + "+" + "-".repeat(v + 2) + "+\n";
        b.append(line);
        for (String[] x : rows) {
            b.append("| ").append(pad(x[0], w)).append(" | ").append(pad(x[1], v)).append(" |\n");
        }
        b.append(line);
        return b.toString();
    }

    private static String[] row(String k, String v) {
        return new String[]{k, v};
    }

    private static String pad(String s, int w) {
        return s + " ".repeat(Math.max(0, w - s.length()));
    }
}
