package io.xaforward.bench.model;

import io.xaforward.transport.WireSecurity;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.data.category.DefaultCategoryDataset;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Tables and the plot of {@code xaf model}: predictions per gateway mode, and the validation against measured cells. */
public final class ModelReport {
    private ModelReport() {}

    /**
     * One measured cell against the model.
     *
     * @param what     size and algorithm (all-reduce) or configuration (training)
     * @param mode     gateway mode
     * @param measured median, with min and max over runs (seconds)
     * @param fitted   the cell was used to fit the endpoint cost
     */
    public record ValidationRow(String what, String mode, double measured, double min, double max,
                                double predictedSeconds, String bound, boolean fitted) {
        public double error() {
            return (predictedSeconds - measured) / measured;
        }
    }

    /**
     * Predicts every measured cell of the bench that {@code testbed} describes ({@code testbed: allreduce}: every
     * all-reduce cell with its size, algorithm and mode; {@code testbed: train}: every training cell with udp
     * endpoints and a gateway measured on a testbed of the file's data centers and hosts, with its WAN rate and
     * measured compute time).
     */
    public static List<ValidationRow> validate(ClusterSpec testbed, Calibration cal) {
        List<ValidationRow> rows = new ArrayList<>();
        switch (testbed.testbed()) {
            case "allreduce" -> {
                for (Calibration.Cell cell : cal.allreduce()) {
                    ClusterSpec c = testbed.with(cell.bytes(), cell.algorithm(), List.of(cell.mode()), cell.wireSecurity());
                    StepModel.Prediction p = StepModel.predict(c, cal, cell.mode());
                    rows.add(new ValidationRow(String.format(Locale.ROOT, "%d MB %s", cell.bytes() >> 20,
                            cell.algorithm().configName()), cell.label(), cell.medianSeconds(), cell.minSeconds(),
                            cell.maxSeconds(), p.allreduceSeconds(), p.bound(),
                            cell.label().equals(cal.referenceMode()) && testbed.endpointSource().equals("allreduce")));
                }
            }
            case "train" -> {
                if (cal.train().isEmpty()) throw new IllegalArgumentException("--validate of a training testbed needs train.json (calibration.train:)");
                List<Calibration.TrainCell> cells = cal.train().stream().filter(cell -> {
                    ClusterSpec measuredOn = Calibration.trainTestbed(cell);
                    return measuredOn.datacenters() == testbed.datacenters() && measuredOn.hostsPerDc() == testbed.hostsPerDc();
                }).toList();
                if (cells.isEmpty()) {
                    throw new IllegalArgumentException("no training cell was measured on a testbed of " + testbed.datacenters()
                            + " DCs x " + testbed.hostsPerDc() + " hosts (the training bench's: 2 x 2, and 2 x 1 for its edge configuration)");
                }
                for (Calibration.TrainCell cell : cells) {
                    // A budgeted cell's gateway costs per packet what the bench measured under that budget.
                    double atBudget = cal.trainGatewayNsPerPacket(cell.mode(), cell.gatewayCpuShare())
                            / cal.trainGatewayNsPerPacket(cell.mode());
                    ClusterSpec c = testbed.withWan(cell.wanGbps(), cell.computeMs(), List.of(cell.mode())).withGatewayShare(
                            cell.gatewayCpuShare(), cell.budgeted() && Double.isFinite(atBudget) ? Map.of(cell.mode(), atBudget) : Map.of());
                    StepModel.Prediction p = StepModel.predict(c, cal, cell.mode());
                    rows.add(new ValidationRow(cell.label(), cell.mode(),
                            cell.medianStepMs() / 1e3, cell.minStepMs() / 1e3, cell.maxStepMs() / 1e3, p.stepSeconds(), p.bound(),
                            cell.mode().equals(cal.referenceMode()) && !cell.budgeted() && testbed.endpointSource().equals("train")));
                }
            }
            default -> throw new IllegalArgumentException("--validate needs a cluster file that describes a testbed of this machine "
                    + "(testbed: allreduce or testbed: train), this one says testbed: " + testbed.testbed());
        }
        return rows;
    }

    public static String calibrationText(Calibration cal, int payload) {
        StringBuilder b = new StringBuilder();
        b.append("Measured on this machine (").append(String.join(", ", cal.sources().stream().map(Path::toString).toList())).append("):\n\n");
        b.append(String.format(Locale.ROOT, "- endpoint CPU per datagram event (send or receive, emulated network included): %.0f ns, "
                        + "fitted to %d %s cells of the all-reduce bench (%d ranks, %s shared cores)%n",
                cal.endpointNsPerEvent(), cal.fitCells(), cal.referenceMode(), cal.allreduceRanks(), ClusterSpec.fmt(cal.calibrationCores())));
        if (cal.sealFactor(WireSecurity.MAC) != 1.0) {
            b.append(String.format(Locale.ROOT, "- mac wire security: endpoint CPU per datagram x %.2f (the workers' measured CPU per datagram, xdp+mac over xdp cells)%n",
                    cal.sealFactor(WireSecurity.MAC)));
        }
        Calibration.TrainFit fit = cal.trainFit();
        if (!Double.isNaN(fit.endpointNsPerEvent())) {
            b.append(String.format(Locale.ROOT, "- the training testbeds' workers' core (ranks, their compute and the emulated network pinned to one core), "
                    + "fitted to the %d %s training cells without a gateway budget (%d of them with the WAN setting the pace):%n",
                    fit.cells(), cal.referenceMode(), fit.pacedCells()));
            b.append(String.format(Locale.ROOT, "  - the ranks' own CPU per datagram event (a send or a receive, through the host's own interface): %.0f ns%n",
                    fit.endpointNsPerEvent()));
            b.append(fit.hopNsPerFrame() > 0
                    ? String.format(Locale.ROOT, "  - the emulated network's CPU per frame per bridge on that core (a DC's switch, the WAN namespace): %.0f ns%n", fit.hopNsPerFrame())
                    : "  - the emulated network's CPU per frame per bridge: not told apart by these cells (no cell without bridges), inside the figure above\n");
            b.append(fit.shapedWanNsPerFrame() > 0
                    ? String.format(Locale.ROOT, "  - extra CPU per frame across a WAN whose shaper sets the pace (frames handed on at the WAN's rate, a few at a time): %.0f ns%n", fit.shapedWanNsPerFrame())
                    : "  - extra CPU per frame across a WAN whose shaper sets the pace: not told apart by these cells, 0\n");
        }
        b.append(String.format(Locale.ROOT, "- fixed time per all-reduce on this machine: %.0f ms (applied only where the cluster file says fixed_overhead: calibrated)%n",
                cal.overheadSeconds() * 1e3));
        b.append(String.format(Locale.ROOT, "- gateway CPU per packet at %d-byte payloads (xaf bench forward, skb senders, median of flows and runs):", payload));
        for (String mode : ClusterSpec.MODES) {
            try {
                b.append(String.format(Locale.ROOT, " %s %.0f ns;", mode, cal.gatewayNsPerPacket(mode, payload)));
            } catch (IllegalArgumentException e) {
                // mode not measured: left out
            }
        }
        b.setLength(b.length() - 1);
        b.append('\n');
        if (!cal.train().isEmpty()) {
            b.append("- gateway CPU per packet in xaf bench train (median over its cells without a budget, both testbeds; used for files that describe a training testbed):");
            for (String mode : ClusterSpec.MODES) {
                double ns = cal.trainGatewayNsPerPacket(mode);
                if (!Double.isNaN(ns)) b.append(String.format(Locale.ROOT, " %s %.0f ns;", mode, ns));
            }
            b.setLength(b.length() - 1);
            b.append('\n');
            for (double share : cal.train().stream().filter(Calibration.TrainCell::budgeted)
                    .map(Calibration.TrainCell::gatewayCpuShare).distinct().sorted().toList()) {
                b.append(String.format(Locale.ROOT, "- the same with the gateway's CPU budgeted to %.0f%% (median over the cells of that budget; used for them):",
                        share * 100));
                for (String mode : cal.train().stream().filter(cell -> cell.gatewayCpuShare() == share)
                        .map(Calibration.TrainCell::mode).distinct().toList()) {
                    b.append(String.format(Locale.ROOT, " %s %.0f ns;", mode, cal.trainGatewayNsPerPacket(mode, share)));
                }
                b.setLength(b.length() - 1);
                b.append('\n');
            }
        }
        if (!Double.isNaN(cal.tunnelRatio())) {
            b.append(String.format(Locale.ROOT, "- kernel-tunnel = kernel x %.2f (their ratio of gateway CPU per packet in xaf bench train)%n", cal.tunnelRatio()));
        }
        return b.toString();
    }

    public static String markdown(ClusterSpec c, Calibration cal, List<StepModel.Prediction> ps) {
        StringBuilder b = new StringBuilder();
        StepModel.Traffic t = ps.isEmpty() ? StepModel.traffic(c) : ps.getFirst().traffic();
        b.append("# Step-time model: ").append(c.name()).append("\n\n");
        b.append(String.format(Locale.ROOT, "%d DCs x %d hosts x %d ranks; gradient %s (%.1f MB), %s all-reduce, %d MB buckets, window %d chunks; "
                        + "MTU %d (chunk payload %d B); NIC %s, WAN %s per DC and direction, WAN RTT %s ms; gateway: %s, %d core(s), core efficiency %s; "
                        + "compute %s ms per step%s.%n%n",
                c.datacenters(), c.hostsPerDc(), c.ranksPerHost(), c.gradientLabel(), c.gradientBytes() / 1048576.0,
                c.algorithm().configName(), c.bucketBytes() >> 20, c.windowChunks(), c.mtu(), t.chunkPayload(),
                rate(c.nicGbps()), rate(c.wanGbps()), ClusterSpec.fmt(c.wanRttMs()),
                c.sharedGateway() ? "one shared" : "one per DC", c.gatewayCores(), ClusterSpec.fmt(c.coreEfficiency()),
                ClusterSpec.fmt(c.computeMs()), c.overlap() ? ", communication overlapped with backward ("
                        + Math.round(c.backwardShare() * 100) + "% of compute)" : ", no overlap"));
        b.append("| gateway mode | time per step, ms | compute, ms | all-reduce, ms | bound by | endpoints (or shared cores), ms | NIC, ms | gateway, ms | WAN, ms | window, ms | latency + fixed, ms | gateway CPU per packet, ns | gateway busy | gateway cores to fill the WAN |\n");
        b.append("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (StepModel.Prediction p : ps) {
            b.append(String.format(Locale.ROOT, "| %s | %.0f | %.0f | %.0f | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f%% | %s |%n",
                    p.mode(), p.stepSeconds() * 1e3, p.computeSeconds() * 1e3, p.allreduceSeconds() * 1e3, p.bound(),
                    p.stage("endpoint") * 1e3, p.stage("nic") * 1e3, p.stage("gateway") * 1e3, p.stage("wan") * 1e3,
                    p.stage("window") * 1e3, (p.latencySeconds() + p.overheadSeconds()) * 1e3, p.gatewayNsPerPacket(),
                    p.gatewayUtilisation() * 100, Double.isNaN(p.coresToFillWan()) ? "-" : Double.isInfinite(p.coresToFillWan())
                            ? "never" : String.valueOf((long) p.coresToFillWan())));
        }
        b.append(String.format(Locale.ROOT, "%nPer all-reduce: %.0f datagram events per rank, %.1f MB out of each DC over %d flow(s), %.0f packets per gateway.%n%n",
                t.eventsPerRank(), t.wanBytesPerDc() / 1048576.0, t.wanFlowsPerDc(), t.gatewayPacketsPerGateway()));
        b.append(calibrationText(cal, t.chunkPayload()));
        return b.toString();
    }

    public static String validationMarkdown(ClusterSpec testbed, Calibration cal, List<ValidationRow> rows) {
        StringBuilder b = new StringBuilder();
        boolean train = testbed.testbed().equals("train");
        b.append("# Model validation: ").append(testbed.name()).append("\n\n");
        b.append("Each measured ").append(train ? "training cell (time per step)" : "all-reduce cell (time per all-reduce)")
                .append(" against the model of the testbed that measured it. Cells of the ").append(cal.referenceMode())
                .append(train ? " mode without a gateway budget (of both training testbeds) were used to fit the workers' core's costs"
                        : " mode were used to fit the endpoint cost")
                .append(" (\"fit\"); the others are predictions (\"check\").\n\n");
        b.append("| cell | mode | measured median, ms [min-max] | predicted, ms | error | bound by | use |\n");
        b.append("|---|---|---|---:|---:|---|---|\n");
        double worst = 0;
        for (ValidationRow r : rows) {
            b.append(String.format(Locale.ROOT, "| %s | %s | %.0f [%.0f-%.0f] | %.0f | %+.0f%% | %s | %s |%n",
                    r.what(), r.mode(), r.measured() * 1e3, r.min() * 1e3, r.max() * 1e3, r.predictedSeconds() * 1e3,
                    r.error() * 100, r.bound(), r.fitted() ? "fit" : "check"));
            if (!r.fitted()) worst = Math.max(worst, Math.abs(r.error()));
        }
        b.append(String.format(Locale.ROOT, "%nLargest error of a check cell: %.0f%%.%n%n", worst * 100));
        b.append(calibrationText(cal, StepModel.traffic(testbed).chunkPayload()));
        return b.toString();
    }

    /** Stacked bars per gateway mode: compute, the all-reduce's bounding stage, latency and fixed time. */
    public static void plot(ClusterSpec c, List<StepModel.Prediction> ps, Path png) throws IOException {
        System.setProperty("java.awt.headless", "true");
        DefaultCategoryDataset data = new DefaultCategoryDataset();
        for (StepModel.Prediction p : ps) {
            double comm = p.stepSeconds() - p.computeSeconds(); // exposed communication
            double fixed = Math.min(comm, p.latencySeconds() + p.overheadSeconds());
            String cat = p.mode() + " (" + p.bound() + ")";
            data.addValue(p.computeSeconds() * 1e3, "compute", cat);
            data.addValue((comm - fixed) * 1e3, "all-reduce (exposed), bound by the busiest stage", cat);
            data.addValue(fixed * 1e3, "latency + fixed time", cat);
        }
        JFreeChart chart = ChartFactory.createStackedBarChart("Modelled time per step: " + c.name(), "gateway mode",
                "ms per step", data, PlotOrientation.VERTICAL, true, false, false);
        Files.createDirectories(png.toAbsolutePath().getParent());
        ChartUtils.saveChartAsPNG(png.toFile(), chart, 900, 540);
    }

    private static String rate(double gbps) {
        return gbps > 0 ? ClusterSpec.fmt(gbps) + " Gbit/s" : "unlimited";
    }
}
