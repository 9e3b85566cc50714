package io.xaforward.cli;

import io.xaforward.bench.model.Calibration;
import io.xaforward.bench.model.ClusterSpec;
import io.xaforward.bench.model.ModelReport;
import io.xaforward.bench.model.StepModel;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;

/** {@code xaf model}: time per training step per gateway mode for a described cluster, from figures measured here. */
@Command(name = "model", mixinStandardHelpOptions = true,
        description = {"Calibrated step-time model: time per training step per gateway mode for a cluster described in a "
                + "short YAML file (data centers, hosts, NIC and WAN rates, RTT, MTU, gateway cores and mode, all-reduce, "
                + "gradient, compute), with the stage that bounds it. Runs on figures measured by xaf bench forward and "
                + "xaf bench allreduce (docs/bench/*.json); see docs/MODEL.md. Needs no root."},
        footerHeading = "%nExample:%n",
        footer = {"  xaf model --cluster examples/cluster/two-dc-8-hosts-100g.yaml \\", "      --out /tmp/model"})
public final class ModelCommand implements Callable<Integer> {
    @Option(names = "--cluster", required = true, paramLabel = "FILE", description = "Cluster description (YAML).")
    Path cluster;

    @Option(names = "--validate", description = "Also predict every cell of the all-reduce bench JSON with this cluster "
            + "file (it must describe the machine that measured them) and print the error per cell.")
    boolean validate;

    @Option(names = "--vary", paramLabel = "KEY=V1,V2", description = "Run the model for every value of a key of the "
            + "cluster file (dotted for nested keys: wan_rtt_ms=10,30, gateway.cores=4,8, compute_ms=100,300, "
            + "overlap=false,true); repeat for a grid. Prints one row per combination and mode.")
    List<String> vary = new ArrayList<>();

    @Option(names = "--out", paramLabel = "DIR", description = "Write NAME.md and NAME.png there (NAME: the cluster file's name).")
    Path out;

    @Override
    public Integer call() throws Exception {
        if (!vary.isEmpty()) return grid();
        ClusterSpec c = ClusterSpec.load(cluster);
        Calibration cal = calibration(c);
        List<StepModel.Prediction> ps = StepModel.predict(c, cal);
        String md = ModelReport.markdown(c, cal, ps);
        if (validate) md += "\n" + ModelReport.validationMarkdown(c, cal, ModelReport.validate(c, cal));
        System.out.print(md);
        if (out != null) {
            String name = cluster.getFileName().toString().replaceFirst("\\.ya?ml$", "");
            Files.createDirectories(out);
            Files.writeString(out.resolve(name + ".md"), md);
            ModelReport.plot(c, ps, out.resolve(name + ".png"));
            System.out.println("model: wrote " + out.resolve(name + ".md") + ", " + name + ".png");
        }
        return 0;
    }

    private static Calibration calibration(ClusterSpec c) throws IOException {
        Path home = UserPaths.installDirectory().resolve("docs").resolve("bench");
        Path fwd = c.forwardJson() != null ? c.forwardJson() : home.resolve("forward.json");
        Path ar = c.allreduceJson() != null ? c.allreduceJson() : home.resolve("allreduce.json");
        // the shipped training runs: without a gateway budget (train.json), with one (train-budget.json), and the edge
        // configuration with and without (train-edge.json)
        List<Path> trains = c.trainJson() != null ? List.of(c.trainJson())
                : Stream.of("train.json", "train-budget.json", "train-edge.json").map(home::resolve).filter(Files::exists).toList();
        return Calibration.load(fwd, ar, trains, c.calibrationCores());
    }

    /** --vary: the cartesian product of the values, one table row per combination and mode. */
    private int grid() throws Exception {
        LinkedHashMap<String, List<String>> axes = new LinkedHashMap<>();
        for (String v : vary) {
            int eq = v.indexOf('=');
            if (eq <= 0 || eq == v.length() - 1) throw new IllegalArgumentException("--vary " + v + ": expected KEY=V1,V2,...");
            axes.put(v.substring(0, eq).trim(), List.of(v.substring(eq + 1).split(",")).stream().map(String::trim).toList());
        }
        List<Map<String, String>> combos = new ArrayList<>(List.of(new LinkedHashMap<>()));
        for (var axis : axes.entrySet()) {
            List<Map<String, String>> next = new ArrayList<>();
            for (var base : combos) {
                for (String value : axis.getValue()) {
                    Map<String, String> m = new LinkedHashMap<>(base);
                    m.put(axis.getKey(), value);
                    next.add(m);
                }
            }
            combos = next;
        }
        StringBuilder b = new StringBuilder();
        b.append("| ").append(String.join(" | ", axes.keySet())).append(" | gateway mode | time per step, ms | all-reduce, ms | bound by | gateway busy | gateway cores to fill the WAN |\n");
        b.append("|").append("---|".repeat(axes.size())).append("---|---:|---:|---|---:|---:|\n");
        Calibration cal = null;
        for (var combo : combos) {
            ClusterSpec c = ClusterSpec.load(cluster, combo);
            if (cal == null) cal = calibration(c);
            for (StepModel.Prediction p : StepModel.predict(c, cal)) {
                b.append("| ").append(String.join(" | ", combo.values())).append(String.format(Locale.ROOT,
                        " | %s | %.0f | %.0f | %s | %.0f%% | %s |%n", p.mode(), p.stepSeconds() * 1e3, p.allreduceSeconds() * 1e3,
                        p.bound(), p.gatewayUtilisation() * 100, Double.isNaN(p.coresToFillWan()) ? "-"
                                : Double.isInfinite(p.coresToFillWan()) ? "never" : String.valueOf((long) p.coresToFillWan())));
            }
        }
        b.append('\n').append(ModelReport.calibrationText(cal, StepModel.traffic(ClusterSpec.load(cluster)).chunkPayload()));
        System.out.print(b);
        if (out != null) {
            String name = cluster.getFileName().toString().replaceFirst("\\.ya?ml$", "");
            Files.createDirectories(out);
            Files.writeString(out.resolve(name + "-grid.md"), b.toString());
            System.out.println("model: wrote " + out.resolve(name + "-grid.md"));
        }
        return 0;
    }
}
