package io.xaforward.bench.model;

import io.xaforward.training.ModelConfig;
import io.xaforward.transport.WireSecurity;
import io.xaforward.cluster.TrainJobSpec;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.xaforward.collective.Algorithm;
import io.xaforward.common.Json;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The figures measured on this machine that {@link StepModel} runs on.
 *
 * <ul>
 *   <li><b>Gateway CPU per packet</b>, per mode and payload size: the median over flows and runs of
 *       {@code gateway_cpu_ns / delivered} of the skb-sender samples of {@code xaf bench forward} (forward.json), at
 *       the largest measured payload not above the chunk payload, pooled with the sizes within 10% of it.
 *       The kernel-tunnel mode is not in that bench; its cost is the kernel's times the ratio of the two modes'
 *       gateway CPU per packet in {@code xaf bench train} (train.json, udp endpoints, median of both configurations),
 *       when that file is given.</li>
 *   <li><b>Endpoint CPU per datagram event</b> (one datagram sent or received by a rank's transport, the kernel's
 *       path through the emulated network included) and a <b>fixed time per all-reduce</b>: fitted by least squares to
 *       the reference mode's (xdp) cells of {@code xaf bench allreduce} (allreduce.json), with the model of that
 *       bench's testbed: two data centers of ranks/2 hosts, one gateway, every process sharing the machine's
 *       {@code allreduce_cores} cores (the all-reduce bench does not pin). The other modes' cells are not used for the
 *       fit: they validate it.</li>
 * </ul>
 *
 * @param gatewayNs         mode -> (payload bytes -> gateway CPU ns per packet of every sample)
 * @param endpointNsPerEvent fitted endpoint CPU per datagram event (ns, one core)
 * @param overheadSeconds   fitted fixed time per all-reduce on this machine (s)
 * @param fitCells          number of all-reduce cells the fit used
 * @param referenceMode     the mode whose cells were fitted
 * @param tunnelRatio       kernel-tunnel / kernel gateway CPU per packet (NaN without train.json)
 * @param allreduce         the all-reduce cells (for validation)
 * @param allreduceRanks    ranks of the all-reduce bench
 * @param calibrationCores  cores the all-reduce bench's processes shared
 * @param sources           the files read
 * @param trainFit          the workers' core's costs in the pinned training testbeds, fitted to the training bench's
 *                          reference-mode cells ({@link TrainFit#NONE} without train.json)
 * @param train             the training cells (udp endpoints, modes with a gateway)
 */
public record Calibration(Map<String, TreeMap<Integer, List<Double>>> gatewayNs, double endpointNsPerEvent,
                          double overheadSeconds, int fitCells, String referenceMode, double tunnelRatio,
                          List<Cell> allreduce, int allreduceRanks, double calibrationCores, List<Path> sources,
                          TrainFit trainFit, List<TrainCell> train) {

    /**
     * What the workers' core of the pinned training testbeds pays, fitted by least squares to the reference mode's
     * training cells without a gateway budget (docs/MODEL.md, "What is measured"). A figure the cells cannot tell apart
     * from the others (no cell without bridges, or no cell whose WAN sets the pace) is 0 and its work stays inside
     * the figures that were fitted.
     *
     * @param endpointNsPerEvent  the ranks' own CPU per datagram event (a send or a receive by a rank's transport, with
     *                            the kernel's path through the host's own interface)
     * @param hopNsPerFrame       the emulated network's CPU per frame per bridge it crosses on the workers' core (a
     *                            DC's switch namespace, the WAN namespace)
     * @param shapedWanNsPerFrame extra CPU per frame across an emulated WAN whose shaper sets the pace: handed on at
     *                            the WAN's rate, a few at a time, instead of in the senders' bursts, the frames wake
     *                            the threads behind the shaper on the workers' core (the namespaces' NAPI threads, the
     *                            receiving rank's transport) far more often per frame
     * @param cells               reference-mode cells fitted
     * @param pacedCells          of those, cells whose WAN set the pace
     */
    public record TrainFit(double endpointNsPerEvent, double hopNsPerFrame, double shapedWanNsPerFrame, int cells,
                           int pacedCells) {
        public static final TrainFit NONE = new TrainFit(Double.NaN, 0, 0, 0, 0);
    }

    /** One measured training cell (udp endpoints): median over runs of each run's median step. */
    public record TrainCell(String config, String mode, double wanGbps, double computeMs, double medianStepMs,
                            double minStepMs, double maxStepMs, String gradient, double gatewayCpuShare,
                            double gatewayNsPerPacket) {
        /** Measured with the gateway's CPU budgeted: predicted by the model, never fitted or used for costs. */
        public boolean budgeted() {
            return gatewayCpuShare < 1;
        }

        /** The configuration as the report names it, with the gateway's CPU budget when it had one. */
        public String label() {
            return config + " (" + (wanGbps > 0 ? ClusterSpec.fmt(wanGbps) + " Gbit/s WAN" : "no WAN")
                    + (budgeted() ? String.format(Locale.ROOT, ", gateway CPU %.0f%%", gatewayCpuShare * 100) : "") + ")";
        }

        /** Measured on the bench's edge configuration: one host per DC wired straight to the gateway, no switch, no WAN. */
        public boolean edge() {
            return config.equals(EDGE_CONFIG);
        }
    }

    /** One measured all-reduce cell. */
    public record Cell(long bytes, String mode, Algorithm algorithm, double medianSeconds, double minSeconds, double maxSeconds,
                       WireSecurity wireSecurity, double cpuMicrosPerDatagram) {
        public Cell(long bytes, String mode, Algorithm algorithm, double medianSeconds, double minSeconds, double maxSeconds) {
            this(bytes, mode, algorithm, medianSeconds, minSeconds, maxSeconds, WireSecurity.CRC32C, Double.NaN);
        }

        /** The label the all-reduce bench gives the cell: mode, plus the wire security when it is not crc32c. */
        public String label() {
            return wireSecurity == WireSecurity.CRC32C ? mode : mode + "+" + wireSecurity.configName();
        }
    }

    public static final String REFERENCE_MODE = "xdp";
    /** The training bench's configuration without switches and WAN (topologies/two-dc-edge.yaml, xaf bench train --configs edge). */
    public static final String EDGE_CONFIG = "edge";
    /** The training bench's WAN rate for topologies without an emulated WAN. */
    static final String NO_WAN = "none";

    /** Gateway CPU ns per packet of {@code mode} at the largest measured payload not above {@code payload}. */
    public double gatewayNsPerPacket(String mode, int payload) {
        if (mode.equals("kernel-tunnel")) {
            if (Double.isNaN(tunnelRatio)) {
                throw new IllegalArgumentException("mode kernel-tunnel needs a train.json (calibration.train:) with kernel and kernel-tunnel rows");
            }
            return tunnelRatio * gatewayNsPerPacket("kernel", payload);
        }
        TreeMap<Integer, List<Double>> bySize = gatewayNs.get(mode);
        if (bySize == null || bySize.isEmpty()) {
            throw new IllegalArgumentException("no gateway CPU per packet for mode " + mode + " in the forward bench JSON (modes there: "
                    + gatewayNs.keySet() + ")");
        }
        var e = bySize.floorEntry(payload);
        int key = (e != null ? e : bySize.firstEntry()).getKey();
        // Pool the sizes around it (1400, 1404, 1424: the forms' MTU-sized payloads differ by a few bytes).
        List<Double> pooled = new ArrayList<>();
        for (var s : bySize.subMap((int) Math.floor(key * 0.9), true, (int) Math.ceil(key * 1.1), true).entrySet()) {
            pooled.addAll(s.getValue());
        }
        return median(pooled);
    }

    /** Reads the bench JSON files and fits the endpoint cost. {@code train} may be null. */
    public static Calibration load(Path forward, Path allreduce, Path train, double allreduceCores) throws IOException {
        return load(forward, allreduce, train == null ? List.of() : List.of(train), allreduceCores);
    }

    /**
     * Reads the bench JSON files and fits the endpoint cost; {@code trains} are training bench JSON files whose rows are
     * taken together (e.g. a run without a gateway CPU budget and one with), possibly none.
     */
    public static Calibration load(Path forward, Path allreduce, List<Path> trains, double allreduceCores) throws IOException {
        JsonObject fwd = read(forward).getAsJsonObject();
        List<TrainCell> trainCells = List.of();
        Map<String, TreeMap<Integer, List<Double>>> gw = gatewayCosts(fwd);
        double ratio = Double.NaN;
        List<Path> sources = new ArrayList<>(List.of(forward, allreduce));
        if (!trains.isEmpty()) {
            JsonArray rows = new JsonArray();
            for (Path train : trains) {
                rows.addAll(read(train).getAsJsonArray());
                sources.add(train);
            }
            ratio = tunnelRatio(rows);
            trainCells = trainCells(rows);
        }
        JsonObject ar = read(allreduce).getAsJsonObject();
        int ranks = ar.get("ranks").getAsInt();
        List<Cell> cells = new ArrayList<>();
        for (JsonElement e : ar.getAsJsonArray("cells")) {
            JsonObject c = e.getAsJsonObject();
            // "xdp", "relay", "xdp+mac" (mode + wire security); baselines such as Gloo are not XAF cells: skipped
            String label = c.get("mode").getAsString();
            int plus = label.indexOf('+');
            String mode = plus < 0 ? label : label.substring(0, plus);
            WireSecurity seal = plus < 0 ? WireSecurity.CRC32C : wireSecurityOrNull(label.substring(plus + 1));
            Algorithm alg = algorithmOrNull(c.get("algorithm").getAsString());
            if (alg == null || !ClusterSpec.MODES.contains(mode) || seal == null) continue;
            double[] s = doubles(c.getAsJsonArray("seconds"));
            double min = s[0], max = s[0];
            for (double v : s) { min = Math.min(min, v); max = Math.max(max, v); }
            double cpu = c.has("endpoint_cpu_us_per_datagram") && !c.get("endpoint_cpu_us_per_datagram").isJsonNull()
                    ? c.get("endpoint_cpu_us_per_datagram").getAsDouble() : Double.NaN;
            cells.add(new Cell(c.get("bytes").getAsLong(), mode, alg, c.get("median_seconds").getAsDouble(), min, max, seal, cpu));
        }
        if (cells.isEmpty()) throw new IllegalArgumentException("calibration file " + allreduce + " has no XAF all-reduce cells");
        Calibration c = fit(gw, ratio, cells, ranks, allreduceCores, sources);
        return c.withTrain(trainCells);
    }

    /** This calibration with the training cells and the workers' core's costs fitted to them. */
    Calibration withTrain(List<TrainCell> cells) {
        // fitted to the reference mode's cells without a gateway budget: there the gateway is not the limit
        List<TrainCell> ref = cells.stream().filter(c -> c.mode().equals(REFERENCE_MODE) && !c.budgeted()).toList();
        return new Calibration(gatewayNs, endpointNsPerEvent, overheadSeconds, fitCells, referenceMode, tunnelRatio,
                allreduce, allreduceRanks, calibrationCores, sources, fitTrain(ref), List.copyOf(cells));
    }

    /**
     * Least squares of each cell's communication time per step (measured step less measured compute, less the phases'
     * latency) over the workers' core's work: datagram events, frame-bridges, and frames across a WAN that set the pace.
     * Whether a cell's WAN sets the pace depends on the figures (the WAN against the core's time for the cross-DC
     * frames), so the fit starts without that term and repeats until the set of paced cells settles.
     */
    static TrainFit fitTrain(List<TrainCell> ref) {
        if (ref.isEmpty()) return TrainFit.NONE;
        int n = ref.size();
        ClusterSpec[] specs = new ClusterSpec[n];
        StepModel.Traffic[] traffic = new StepModel.Traffic[n];
        double[] y = new double[n];
        for (int i = 0; i < n; i++) {
            specs[i] = trainTestbed(ref.get(i));
            traffic[i] = StepModel.traffic(specs[i]);
            y[i] = (ref.get(i).medianStepMs() - ref.get(i).computeMs()) / 1e3 - traffic[i].phaseRttsMs() / 1e3;
        }
        boolean[] paced = new boolean[n];
        TrainFit fit = null;
        for (int round = 0; round < 8; round++) {
            double[][] x = new double[n][];
            for (int i = 0; i < n; i++) {
                ClusterSpec.EmulatedNetwork net = specs[i].emulatedNetwork();
                StepModel.Traffic t = traffic[i];
                double cores = specs[i].sharedCores();
                x[i] = new double[] {specs[i].ranks() * t.eventsPerRank() / cores,
                        (t.lanFrames() * net.lanHops() + t.wanFrames() * net.wanHops()) / cores,
                        paced[i] ? t.wanFrames() / cores : 0};
            }
            double[] b = nonNegativeLeastSquares(x, y);
            int count = 0;
            for (boolean p : paced) count += p ? 1 : 0;
            fit = new TrainFit(b[0] * 1e9, b[1] * 1e9, b[2] * 1e9, n, count);
            boolean[] next = new boolean[n];
            for (int i = 0; i < n; i++) next[i] = StepModel.wanPaces(specs[i], traffic[i], fit.endpointNsPerEvent(), fit.hopNsPerFrame());
            if (Arrays.equals(next, paced)) break;
            paced = next;
        }
        return fit;
    }

    /**
     * Least squares {@code y ~ x b} over the largest set of columns that the rows tell apart with every coefficient
     * positive (the first column, the endpoints' cost, always among them); a column left out is 0.
     */
    static double[] nonNegativeLeastSquares(double[][] x, double[] y) {
        int k = x[0].length;
        // subsets in order of preference: every column, then leaving out later columns first
        for (int size = k; size >= 1; size--) {
            for (int[] cols : subsets(k, size)) {
                if (cols[0] != 0) continue;
                double[] b = solve(x, y, cols);
                if (b == null) continue;
                boolean positive = true;
                for (int j = 0; j < cols.length; j++) positive &= b[j] > 0;
                if (!positive) continue;
                double[] out = new double[k];
                for (int j = 0; j < cols.length; j++) out[cols[j]] = b[j];
                return out;
            }
        }
        double[] none = new double[k];
        none[0] = Double.NaN;
        return none;
    }

    /** Subsets of {@code 0..k-1} of {@code size}, ascending, those with lower indices first. */
    private static List<int[]> subsets(int k, int size) {
        List<int[]> out = new ArrayList<>();
        for (int mask = (1 << k) - 1; mask > 0; mask--) {
            if (Integer.bitCount(mask) != size) continue;
            int[] cols = new int[size];
            for (int j = 0, i = 0; j < k; j++) if ((mask & (1 << j)) != 0) cols[i++] = j;
            out.add(cols);
        }
        return out;
    }

    /** Normal equations over {@code cols}; null when those columns are (nearly) dependent or all zero. */
    private static double[] solve(double[][] x, double[] y, int[] cols) {
        int m = cols.length;
        double[] norm = new double[m];
        for (int j = 0; j < m; j++) {
            for (double[] row : x) norm[j] += row[cols[j]] * row[cols[j]];
            norm[j] = Math.sqrt(norm[j]);
            if (!(norm[j] > 0)) return null;
        }
        // on columns scaled to unit length, so that "dependent" does not depend on their units
        double[][] a = new double[m][m + 1];
        for (int r = 0; r < m; r++) {
            for (int c = 0; c < m; c++) {
                for (double[] row : x) a[r][c] += row[cols[r]] / norm[r] * row[cols[c]] / norm[c];
            }
            for (int i = 0; i < x.length; i++) a[r][m] += x[i][cols[r]] / norm[r] * y[i];
        }
        for (int p = 0; p < m; p++) {
            int best = p;
            for (int r = p + 1; r < m; r++) if (Math.abs(a[r][p]) > Math.abs(a[best][p])) best = r;
            double[] t = a[p]; a[p] = a[best]; a[best] = t;
            if (Math.abs(a[p][p]) < 1e-9) return null;
            for (int r = 0; r < m; r++) {
                if (r == p) continue;
                double f = a[r][p] / a[p][p];
                for (int c = p; c <= m; c++) a[r][c] -= f * a[p][c];
            }
        }
        double[] b = new double[m];
        for (int j = 0; j < m; j++) b[j] = a[j][m] / a[j][j] / norm[j];
        return b;
    }

    /**
     * How much more endpoint CPU per datagram a wire-security mode costs than crc32c (the mode the all-reduce fit uses),
     * from the workers' measured CPU per datagram of the reference mode's cells of both (same size and algorithm);
     * 1 when the JSON does not have both.
     */
    public double sealFactor(WireSecurity seal) {
        if (seal == WireSecurity.CRC32C) return 1.0;
        List<Double> ratios = new ArrayList<>();
        for (Cell c : allreduce) {
            if (!c.mode().equals(referenceMode) || c.wireSecurity() != seal || Double.isNaN(c.cpuMicrosPerDatagram())) continue;
            for (Cell b : allreduce) {
                if (b.mode().equals(referenceMode) && b.wireSecurity() == WireSecurity.CRC32C && b.bytes() == c.bytes()
                        && b.algorithm() == c.algorithm() && b.cpuMicrosPerDatagram() > 0) {
                    ratios.add(c.cpuMicrosPerDatagram() / b.cpuMicrosPerDatagram());
                }
            }
        }
        return ratios.isEmpty() ? 1.0 : median(ratios);
    }

    /** Endpoint CPU per datagram event from the named bench ("allreduce" or "train"). */
    public double endpointNs(String source) {
        if (source.equals("train")) {
            if (Double.isNaN(trainFit.endpointNsPerEvent())) {
                throw new IllegalArgumentException("endpoint.calibration: train needs a train.json with " + REFERENCE_MODE + " rows (calibration.train:)");
            }
            return trainFit.endpointNsPerEvent();
        }
        return endpointNsPerEvent;
    }

    /**
     * The pinned training testbed of xaf bench train for one cell, the workers and the emulated network on one core,
     * the gateway on another: 2 DCs x 2 hosts behind a switch each, the WAN namespace between the gateway and DC b
     * (a frame between DCs crosses switch, WAN namespace and switch on the workers' core, one inside a DC the switch);
     * or, for the edge configuration, 2 DCs x 1 host wired straight to the gateway (no bridge on the workers' core).
     */
    public static ClusterSpec trainTestbed(TrainCell c) {
        boolean edge = c.edge();
        return new ClusterSpec(edge ? "xaf bench train edge testbed" : "xaf bench train testbed", 2, edge ? 1 : 2, 1, 1500,
                0, c.wanGbps(), 0.2, 0.05, List.of(c.mode()), 1, true, 0.9,
                ClusterSpec.budgetScale(Map.of(), c.gatewayCpuShare()), 1, 1, false, 1.0, false, Algorithm.HIERARCHICAL,
                4L << 20, 512, TrainJobSpec.DEFAULT_WIRE, ModelConfig.preset(c.gradient()).gradientBytes(),
                c.gradient(), c.computeMs(), false, 2.0 / 3, null, null, null, 2, "train", "train",
                edge ? ClusterSpec.EmulatedNetwork.NONE : new ClusterSpec.EmulatedNetwork(1, 3, c.wanGbps() > 0));
    }

    static List<TrainCell> trainCells(JsonElement train) {
        Map<String, List<JsonObject>> groups = new LinkedHashMap<>();
        for (JsonElement e : train.getAsJsonArray()) {
            JsonObject j = e.getAsJsonObject();
            if (!"udp".equals(j.has("endpoint") ? j.get("endpoint").getAsString() : "udp")) continue;
            boolean complete = true;
            for (String key : List.of("config", "mode", "wan_rate", "median_step_ms", "compute_ms")) {
                complete &= j.has(key) && !j.get(key).isJsonNull();
            }
            if (!complete) continue; // a row of another format (or a failed job) is not a cell
            String mode = j.get("mode").getAsString();
            if (mode.equals("direct")) continue; // no gateway: its bridge's cost is not in the forward bench
            groups.computeIfAbsent(j.get("config").getAsString() + "/" + mode + "/" + cpuShare(j), k -> new ArrayList<>()).add(j);
        }
        List<TrainCell> out = new ArrayList<>();
        for (var g : groups.values()) {
            String wan = g.getFirst().get("wan_rate").getAsString();
            if (!wan.equals(NO_WAN) && !wan.matches("(?i)\\s*[0-9.]+\\s*[kmg]?bit\\s*")) continue;
            JsonObject first = g.getFirst();
            List<Double> steps = g.stream().map(j -> j.get("median_step_ms").getAsDouble()).toList();
            List<Double> compute = g.stream().map(j -> j.get("compute_ms").getAsDouble()).toList();
            String gradient = first.has("preset") ? first.get("preset").getAsString() : "wide";
            out.add(new TrainCell(first.get("config").getAsString(), first.get("mode").getAsString(),
                    wan.equals(NO_WAN) ? 0 : gbps(wan), median(compute), median(steps),
                    Collections.min(steps), Collections.max(steps), gradient, cpuShare(first), median(g.stream()
                    .filter(j -> j.has("gateway_ns_per_packet") && !j.get("gateway_ns_per_packet").isJsonNull())
                    .map(j -> j.get("gateway_ns_per_packet").getAsDouble()).filter(v -> !Double.isNaN(v)).toList())));
        }
        return out;
    }

    /** The gateway's CPU budget of a training bench row (rows of runs without one, or of older runs: 1). */
    static double cpuShare(JsonObject row) {
        return row.has("gateway_cpu_share") && !row.get("gateway_cpu_share").isJsonNull() ? row.get("gateway_cpu_share").getAsDouble() : 1.0;
    }

    /** "200mbit", "4gbit", "1500kbit" in Gbit/s. */
    static double gbps(String rate) {
        String r = rate.trim().toLowerCase(Locale.ROOT);
        Matcher m = Pattern.compile("([0-9.]+)\\s*([kmg]?)bit").matcher(r);
        if (!m.matches()) throw new IllegalArgumentException("WAN rate '" + rate + "' in the training bench JSON is not like 200mbit");
        double v = Double.parseDouble(m.group(1));
        return switch (m.group(2)) {
            case "g" -> v;
            case "m" -> v / 1e3;
            case "k" -> v / 1e6;
            default -> v / 1e9;
        };
    }

    /** Fits endpoint cost and overhead to the reference mode's cells; see the class comment. */
    static Calibration fit(Map<String, TreeMap<Integer, List<Double>>> gw, double ratio, List<Cell> cells, int ranks,
                           double cores, List<Path> sources) {
        if (ranks < 2 || ranks % 2 != 0) throw new IllegalArgumentException("the all-reduce bench JSON must have an even number of ranks (two DCs), had " + ranks);
        List<Cell> ref = cells.stream().filter(c -> c.mode().equals(REFERENCE_MODE) && c.wireSecurity() == WireSecurity.CRC32C).toList();
        if (ref.isEmpty()) ref = cells.stream().filter(c -> c.mode().equals(REFERENCE_MODE)).toList();
        if (ref.isEmpty()) throw new IllegalArgumentException("the all-reduce bench JSON has no " + REFERENCE_MODE + " cells to calibrate on");
        Calibration provisional = new Calibration(gw, 1.0, 0, 0, REFERENCE_MODE, ratio, cells, ranks, cores, sources, TrainFit.NONE, List.of());
        // t = a + b * x + z: x = endpoint datagram events per shared core, z = the gateway's share of those cores.
        int n = ref.size();
        double[] x = new double[n], y = new double[n];
        for (int i = 0; i < n; i++) {
            Cell c = ref.get(i);
            ClusterSpec spec = testbed(ranks, cores, c.bytes(), c.algorithm(), REFERENCE_MODE, c.wireSecurity());
            StepModel.Traffic t = StepModel.traffic(spec);
            x[i] = t.eventsPerRank() * spec.ranks() / cores;
            y[i] = c.medianSeconds() - t.gatewayPacketsPerGateway() * provisional.gatewayNsPerPacket(REFERENCE_MODE, t.chunkPayload()) * 1e-9 / cores;
        }
        double a, b;
        double mx = 0, my = 0;
        for (int i = 0; i < n; i++) { mx += x[i]; my += y[i]; }
        mx /= n; my /= n;
        double sxx = 0, sxy = 0;
        for (int i = 0; i < n; i++) { sxx += (x[i] - mx) * (x[i] - mx); sxy += (x[i] - mx) * (y[i] - my); }
        if (sxx > 0 && n >= 2) {
            b = sxy / sxx;
            a = my - b * mx;
        } else {
            a = -1;
            b = 0;
        }
        if (a < 0 || b <= 0) { // no fixed part (or one size only): through the origin
            double xy = 0, xx = 0;
            for (int i = 0; i < n; i++) { xy += x[i] * y[i]; xx += x[i] * x[i]; }
            a = 0;
            b = xy / xx;
        }
        if (!(b > 0)) throw new IllegalArgumentException("the all-reduce bench JSON gives no positive endpoint cost per datagram");
        return new Calibration(gw, b * 1e9, a, n, REFERENCE_MODE, ratio, cells, ranks, cores, sources, TrainFit.NONE, List.of());
    }

    /** The all-reduce bench's testbed as a cluster: 2 DCs, one shared gateway, every process on {@code cores} cores. */
    public static ClusterSpec testbed(int ranks, double cores, long bytes, Algorithm alg, String mode) {
        return testbed(ranks, cores, bytes, alg, mode, WireSecurity.CRC32C);
    }

    static ClusterSpec testbed(int ranks, double cores, long bytes, Algorithm alg, String mode, WireSecurity seal) {
        return new ClusterSpec("xaf bench allreduce testbed", 2, ranks / 2, 1, 1500, 0, 0, 0.2, 0.05, List.of(mode), 1,
                true, 0.9, Map.of(), 1, cores, true, 1.0, true, alg, 4L << 20, 512, seal, bytes,
                bytes / 1048576 + " MB", 0, false, 2.0 / 3, null, null, null, cores, "allreduce", "allreduce",
                ClusterSpec.EmulatedNetwork.NONE);
    }

    static Map<String, TreeMap<Integer, List<Double>>> gatewayCosts(JsonObject fwd) {
        Map<String, TreeMap<Integer, List<Double>>> samples = new LinkedHashMap<>();
        for (JsonElement e : fwd.getAsJsonArray("samples")) {
            JsonObject s = e.getAsJsonObject();
            if (!"skb".equals(s.get("sender").getAsString())) continue;
            long delivered = s.get("delivered").getAsLong();
            if (delivered <= 0) continue;
            double ns = s.get("gateway_cpu_ns").getAsDouble() / delivered;
            samples.computeIfAbsent(s.get("mode").getAsString(), k -> new TreeMap<>())
                    .computeIfAbsent(s.get("payload").getAsInt(), k -> new ArrayList<>()).add(ns);
        }
        if (samples.isEmpty()) throw new IllegalArgumentException("the forward bench JSON has no skb-sender samples");
        return samples;
    }

    static double tunnelRatio(JsonElement train) {
        List<Double> kernel = new ArrayList<>(), tunnel = new ArrayList<>();
        for (JsonElement e : train.getAsJsonArray()) {
            JsonObject j = e.getAsJsonObject();
            if (j.has("endpoint") && !"udp".equals(j.get("endpoint").getAsString())) continue;
            if (!j.has("gateway_ns_per_packet") || j.get("gateway_ns_per_packet").isJsonNull()) continue;
            if (cpuShare(j) < 1) continue; // per-packet figures from runs without a budget only
            String mode = j.get("mode").getAsString();
            if (mode.equals("kernel")) kernel.add(j.get("gateway_ns_per_packet").getAsDouble());
            if (mode.equals("kernel-tunnel")) tunnel.add(j.get("gateway_ns_per_packet").getAsDouble());
        }
        if (kernel.isEmpty() || tunnel.isEmpty()) return Double.NaN;
        return median(tunnel) / median(kernel);
    }

    /**
     * Gateway CPU per packet of {@code mode} as the training bench measured it (median over its cells without a
     * gateway budget), or NaN where it has no such cell. The training testbed's own traffic (a mix of chunks and
     * ACKs, bursts, a busy sender core) costs the gateway a different amount per packet than the forward bench's
     * steady stream, the relay's least of all (its JIT warm-up is behind it).
     */
    public double trainGatewayNsPerPacket(String mode) {
        return trainGatewayNsPerPacket(mode, 1.0);
    }

    /**
     * As {@link #trainGatewayNsPerPacket(String)}, from the cells measured with the gateway's CPU budgeted to
     * {@code share} when the bench has any (else from those without a budget). The figure moves with the gateway's
     * load: a mostly idle gateway pays a wake-up for a few packets, a budgeted one works through full batches (the
     * same week's runs: xdp 7.4 us per packet without a budget, 2.2 us with 10%; an earlier pair 3.1 and 2.7 us).
     */
    public double trainGatewayNsPerPacket(String mode, double share) {
        List<Double> v = train.stream().filter(c -> c.mode().equals(mode) && Math.abs(c.gatewayCpuShare() - share) < 1e-9
                && !Double.isNaN(c.gatewayNsPerPacket())).map(TrainCell::gatewayNsPerPacket).toList();
        if (v.isEmpty()) return share < 1 ? trainGatewayNsPerPacket(mode, 1.0) : Double.NaN;
        return median(v);
    }

    static double median(List<Double> v) {
        if (v.isEmpty()) return Double.NaN;
        List<Double> s = new ArrayList<>(v);
        Collections.sort(s);
        int n = s.size();
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }

    private static double[] doubles(JsonArray a) {
        double[] d = new double[a.size()];
        for (int i = 0; i < d.length; i++) d[i] = a.get(i).getAsDouble();
        return d;
    }

    /** The wire security a report row's label names after its '+', or null for a word this build does not know. */
    static WireSecurity wireSecurityOrNull(String name) {
        try {
            return WireSecurity.fromName(name);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** The algorithm a report row names, or null for a row of another peer (gloo). */
    static Algorithm algorithmOrNull(String name) {
        try {
            return Algorithm.fromName(name);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static JsonElement read(Path p) throws IOException {
        try {
            return Json.parse(Files.readString(p));
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("calibration file " + p + " does not exist");
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("calibration file " + p + " is not the expected bench JSON: " + e.getMessage(), e);
        }
    }
}
