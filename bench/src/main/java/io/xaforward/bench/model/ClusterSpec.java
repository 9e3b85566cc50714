package io.xaforward.bench.model;

import io.xaforward.transport.TransportConfig;

import io.xaforward.transport.WireSecurity;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.collective.Algorithm;
import io.xaforward.training.ModelConfig;
import io.xaforward.common.YamlFields;
import io.xaforward.common.YamlTree;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * A cluster description for {@link StepModel}: data centers, hosts, links, gateways, the all-reduce and the job.
 * Read from a short YAML file ({@link #parse}); every key is checked, unknown keys and bad values are errors that
 * name the key. Rates of {@code 0} (or an absent key) mean "not a limit" (e.g. veth links on one machine).
 * See docs/MODEL.md for the file format.
 *
 * @param name            free text shown in the report
 * @param datacenters     number of data centers (>= 1)
 * @param hostsPerDc      hosts per data center
 * @param ranksPerHost    ranks (GPUs, worker processes) per host; each rank runs one transport thread
 * @param mtu             path MTU inside and between data centers (bytes)
 * @param nicGbps         host NIC rate per direction, Gbit/s (0: unlimited)
 * @param wanGbps         each data center's WAN uplink rate per direction, Gbit/s (0: unlimited)
 * @param wanRttMs        round-trip time between data centers, ms
 * @param lanRttMs        round-trip time inside a data center, ms
 * @param modes           gateway modes to evaluate
 * @param gatewayCores    cores per gateway for the data path
 * @param sharedGateway   true: one gateway joins all data centers (this machine's testbed); false: one per DC
 * @param coreEfficiency  assumption: each core beyond the first adds this fraction of one core's packet rate
 * @param gatewayCostScale assumption: per-mode factor from this machine's per-packet cost to the target's
 * @param endpointCores   cores per host that the ranks' transport threads can use (a rank uses at most one)
 * @param sharedCores     > 0: every rank (and, if {@code gatewayOnSharedCores}, the gateway) shares this many cores,
 *                        as on this one-machine testbed; 0: hosts are separate machines
 * @param gatewayOnSharedCores the gateway's work runs on the shared cores too (the unpinned all-reduce bench)
 * @param endpointCostScale assumption: factor from this machine's endpoint CPU per datagram to the target's
 * @param calibratedOverhead add the fixed per-all-reduce time calibrated on this machine (testbed files only)
 * @param algorithm       all-reduce algorithm
 * @param bucketBytes     all-reduce bucket size
 * @param windowChunks    transport window (chunks in flight per destination rank)
 * @param wireSecurity    crc32c, mac or encrypt (mac and encrypt take a 16-byte trailer from each chunk)
 * @param gradientBytes   bytes all-reduced per step
 * @param gradientLabel   preset name or size, for the report
 * @param computeMs       forward + backward + optimizer time per step, ms
 * @param overlap         communication overlaps the backward pass (bucket by bucket)
 * @param backwardShare   share of compute that is backward (overlappable)
 * @param forwardJson     calibration: xaf bench forward JSON (null: the install's docs/bench/forward.json)
 * @param allreduceJson   calibration: xaf bench allreduce JSON (null: the install's docs/bench/allreduce.json)
 * @param trainJson       calibration: xaf bench train JSON, for the kernel-tunnel mode (null: the install's)
 * @param calibrationCores cores the all-reduce bench's processes shared when it was measured
 * @param testbed         which bench of this machine the file describes (none, allreduce, train): what
 *                        {@code xaf model --validate} compares with
 * @param endpointSource  which bench the endpoint cost per datagram comes from (allreduce or train)
 * @param emulatedNetwork what of this machine's emulated network runs on the shared cores (files with
 *                        {@code endpoint.calibration: train}; {@link EmulatedNetwork#NONE} otherwise)
 */
public record ClusterSpec(String name, int datacenters, int hostsPerDc, int ranksPerHost, int mtu, double nicGbps,
                          double wanGbps, double wanRttMs, double lanRttMs, List<String> modes, int gatewayCores,
                          boolean sharedGateway, double coreEfficiency, Map<String, Double> gatewayCostScale,
                          double endpointCores, double sharedCores, boolean gatewayOnSharedCores,
                          double endpointCostScale, boolean calibratedOverhead, Algorithm algorithm, long bucketBytes,
                          int windowChunks, WireSecurity wireSecurity, long gradientBytes, String gradientLabel,
                          double computeMs, boolean overlap, double backwardShare, Path forwardJson,
                          Path allreduceJson, Path trainJson, double calibrationCores, String testbed,
                          String endpointSource, EmulatedNetwork emulatedNetwork) {

    /**
     * What of this machine's emulated network runs on the shared cores of a training testbed, besides the ranks' own
     * sends and receives (cluster file section {@code emulated_network}; docs/MODEL.md).
     *
     * @param lanHops   bridges a frame between two hosts of one data center crosses on the shared cores (the DC's
     *                  switch namespace: 1 in the 2 x 2 testbed, 0 where hosts are wired straight to the gateway)
     * @param wanHops   bridges a frame between data centers crosses on the shared cores (the sender's switch, the WAN
     *                  namespace, the receiver's switch: 3 in the 2 x 2 testbed; the gateway runs on a core of its own)
     * @param wanShaper the WAN's rate limit ({@code wan_gbps}) is a shaper on the shared cores (the WAN namespace)
     */
    public record EmulatedNetwork(int lanHops, int wanHops, boolean wanShaper) {
        /** Nothing of an emulated network on the endpoints' cores (real hosts, or files calibrated on the all-reduce bench). */
        public static final EmulatedNetwork NONE = new EmulatedNetwork(0, 0, false);
    }

    /** Gateway modes the model knows (per-packet costs come from the bench JSON). */
    public static final List<String> MODES = List.of("xdp", "kernel", "kernel-tunnel", "relay", "afxdp", "bare-xdp-redirect");

    public ClusterSpec {
        modes = List.copyOf(modes);
        gatewayCostScale = Map.copyOf(gatewayCostScale);
    }

    public int ranksPerDc() {
        return hostsPerDc * ranksPerHost;
    }

    public int ranks() {
        return datacenters * ranksPerDc();
    }

    /** A copy with another gradient size, algorithm, modes and wire security (a measured all-reduce cell). */
    public ClusterSpec with(long bytes, Algorithm alg, List<String> newModes, WireSecurity seal) {
        return new ClusterSpec(name, datacenters, hostsPerDc, ranksPerHost, mtu, nicGbps, wanGbps, wanRttMs, lanRttMs,
                newModes, gatewayCores, sharedGateway, coreEfficiency, gatewayCostScale, endpointCores, sharedCores,
                gatewayOnSharedCores, endpointCostScale, calibratedOverhead, alg, bucketBytes, windowChunks,
                seal, bytes, String.format(Locale.ROOT, "%.1f MB", bytes / 1048576.0), computeMs, overlap,
                backwardShare, forwardJson, allreduceJson, trainJson, calibrationCores, testbed, endpointSource, emulatedNetwork);
    }

    /** A copy with another gradient size, algorithm and modes (for validation against measured cells). */
    public ClusterSpec with(long bytes, Algorithm alg, List<String> newModes) {
        return new ClusterSpec(name, datacenters, hostsPerDc, ranksPerHost, mtu, nicGbps, wanGbps, wanRttMs, lanRttMs,
                newModes, gatewayCores, sharedGateway, coreEfficiency, gatewayCostScale, endpointCores, sharedCores,
                gatewayOnSharedCores, endpointCostScale, calibratedOverhead, alg, bucketBytes, windowChunks,
                wireSecurity, bytes, String.format(Locale.ROOT, "%.1f MB", bytes / 1048576.0), computeMs, overlap,
                backwardShare, forwardJson, allreduceJson, trainJson, calibrationCores, testbed, endpointSource, emulatedNetwork);
    }

    /** A copy with another compute time and overlap (for sensitivity rows). */
    public ClusterSpec withCompute(double ms, boolean overlapped) {
        return new ClusterSpec(name, datacenters, hostsPerDc, ranksPerHost, mtu, nicGbps, wanGbps, wanRttMs, lanRttMs,
                modes, gatewayCores, sharedGateway, coreEfficiency, gatewayCostScale, endpointCores, sharedCores,
                gatewayOnSharedCores, endpointCostScale, calibratedOverhead, algorithm, bucketBytes, windowChunks,
                wireSecurity, gradientBytes, gradientLabel, ms, overlapped, backwardShare, forwardJson, allreduceJson,
                trainJson, calibrationCores, testbed, endpointSource, emulatedNetwork);
    }

    /**
     * Per-mode cost scales for a gateway that gets {@code share} of each of its cores: every mode's per-packet time
     * divided by the share (modes without a scale of their own start from 1).
     */
    static Map<String, Double> budgetScale(Map<String, Double> scale, double share) {
        if (share >= 1) return scale;
        Map<String, Double> out = new LinkedHashMap<>();
        for (String mode : MODES) out.put(mode, scale.getOrDefault(mode, 1.0) / share);
        return out;
    }

    /** A copy whose gateway gets {@code share} of each of its cores (a training cell measured with a budget). */
    public ClusterSpec withGatewayShare(double share) {
        return withGatewayShare(share, Map.of());
    }

    /**
     * As {@link #withGatewayShare(double)}, with each mode's CPU per packet also multiplied by {@code perPacket}'s
     * factor for it (the gateway's cost per packet at that budget against its cost without one).
     */
    public ClusterSpec withGatewayShare(double share, Map<String, Double> perPacket) {
        Map<String, Double> scale = new LinkedHashMap<>(gatewayCostScale);
        perPacket.forEach((mode, factor) -> scale.merge(mode, factor, (a, b) -> a * b));
        return new ClusterSpec(name, datacenters, hostsPerDc, ranksPerHost, mtu, nicGbps, wanGbps, wanRttMs, lanRttMs,
                modes, gatewayCores, sharedGateway, coreEfficiency, budgetScale(scale, share), endpointCores,
                sharedCores, gatewayOnSharedCores, endpointCostScale, calibratedOverhead, algorithm, bucketBytes,
                windowChunks, wireSecurity, gradientBytes, gradientLabel, computeMs, overlap, backwardShare, forwardJson,
                allreduceJson, trainJson, calibrationCores, testbed, endpointSource, emulatedNetwork);
    }

    /** A copy with another WAN rate and compute time (a measured training configuration). */
    public ClusterSpec withWan(double gbps, double ms, List<String> newModes) {
        return new ClusterSpec(name, datacenters, hostsPerDc, ranksPerHost, mtu, nicGbps, gbps, wanRttMs, lanRttMs,
                newModes, gatewayCores, sharedGateway, coreEfficiency, gatewayCostScale, endpointCores, sharedCores,
                gatewayOnSharedCores, endpointCostScale, calibratedOverhead, algorithm, bucketBytes, windowChunks,
                wireSecurity, gradientBytes, gradientLabel, ms, overlap, backwardShare, forwardJson, allreduceJson,
                trainJson, calibrationCores, testbed, endpointSource, emulatedNetwork);
    }

    /** Reads and checks a cluster file; relative calibration paths are taken from the file's directory. */
    public static ClusterSpec load(Path file) throws IOException {
        return load(file, Map.of());
    }

    /**
     * Reads a cluster file with some keys replaced: {@code overrides} maps dotted keys ({@code wan_rtt_ms},
     * {@code gateway.cores}) to YAML scalars ({@code 30}, {@code true}, {@code [xdp, relay]}).
     */
    public static ClusterSpec load(Path file, Map<String, String> overrides) throws IOException {
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("cluster file " + file + " does not exist");
        }
        Path dir = file.toAbsolutePath().getParent();
        try {
            Object root = yaml(text);
            if (root instanceof Map<?, ?> m && !overrides.isEmpty()) root = override(m, overrides);
            return parse(root, dir);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> override(Map<?, ?> root, Map<String, String> overrides) {
        Map<String, Object> copy = deepCopy(root);
        for (var e : overrides.entrySet()) {
            String[] path = e.getKey().split("\\.");
            Map<String, Object> at = copy;
            for (int i = 0; i < path.length - 1; i++) {
                Object next = at.get(path[i]);
                if (next == null) {
                    next = new LinkedHashMap<String, Object>();
                    at.put(path[i], next);
                }
                if (!(next instanceof Map)) throw new IllegalArgumentException(e.getKey() + ": " + path[i] + " is not a mapping");
                at = (Map<String, Object>) next;
            }
            Object value = yaml(e.getValue());
            String last = path[path.length - 1];
            if (last.equals("gradient")) at.remove("gradient_mb");
            if (last.equals("gradient_mb")) at.remove("gradient");
            at.put(last, value);
        }
        return copy;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> deepCopy(Map<?, ?> m) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (var e : m.entrySet()) {
            Object v = e.getValue();
            out.put(String.valueOf(e.getKey()), v instanceof Map<?, ?> sub ? deepCopy(sub) : v);
        }
        return out;
    }

    /** The document as maps, lists and the text of each scalar ({@link YamlTree}); an error keeps its first line. */
    private static Object yaml(String text) {
        return YamlTree.read(text, problem -> new IllegalArgumentException(problem.lines().findFirst().orElse(problem)));
    }

    private static final Set<String> TOP = Set.of("name", "datacenters", "hosts_per_dc", "ranks_per_host", "mtu",
            "nic_gbps", "wan_gbps", "wan_rtt_ms", "lan_rtt_ms", "gateway", "endpoint", "allreduce", "window_chunks",
            "wire_security", "gradient", "gradient_mb", "compute_ms", "overlap", "backward_share", "calibration", "testbed",
            "emulated_network");
    private static final Set<String> GATEWAY = Set.of("modes", "cores", "placement", "core_efficiency", "cost_scale", "cpu_share");
    private static final Set<String> ENDPOINT = Set.of("cores_per_host", "shared_cores", "gateway_on_shared_cores",
            "cost_scale", "fixed_overhead", "calibration");
    private static final Set<String> ALLREDUCE = Set.of("algorithm", "bucket_mb");
    private static final Set<String> CALIBRATION = Set.of("forward", "allreduce", "train", "allreduce_cores");
    private static final Set<String> EMULATED_NETWORK = Set.of("lan_hops", "wan_hops", "wan_shaper");

    /**
     * The strict checks of every XAForward YAML reader: unknown keys, wrong types and values out of range are errors
     * {@code "ENTRY: PROBLEM"} naming the key ({@code load} puts the file in front).
     */
    private static final YamlFields FIELDS = YamlFields.prefixed(IllegalArgumentException::new);

    /** Parses cluster YAML; {@code dir} resolves relative calibration paths (null: the working directory). */
    public static ClusterSpec parse(String yamlText, Path dir) {
        return parse(yaml(yamlText), dir);
    }

    private static ClusterSpec parse(Object root, Path dir) {
        if (!(root instanceof Map<?, ?> m)) throw new IllegalArgumentException("expected a mapping of keys (datacenters:, hosts_per_dc:, ...)");
        Section top = new Section("top level", m, TOP);
        Section gw = top.section("gateway", GATEWAY);
        Section ep = top.section("endpoint", ENDPOINT);
        Section ar = top.section("allreduce", ALLREDUCE);
        Section cal = top.section("calibration", CALIBRATION);
        Section net = top.section("emulated_network", EMULATED_NETWORK);

        int dcs = top.intAt("datacenters", null, 1, 1024);
        int hosts = top.intAt("hosts_per_dc", null, 1, 1 << 20);
        int rph = top.intAt("ranks_per_host", 1, 1, 1024);
        int mtu = top.intAt("mtu", 1500, 576, 65535);
        double nic = top.num("nic_gbps", 0.0, 0, 1e6);
        double wan = top.num("wan_gbps", 0.0, 0, 1e6);
        double rtt = top.num("wan_rtt_ms", 0.2, 0, 10_000);
        double lanRtt = top.num("lan_rtt_ms", 0.05, 0, 10_000);

        List<String> modes = gw.words("modes", List.of("xdp", "kernel", "kernel-tunnel", "relay", "afxdp"));
        for (String mode : modes) {
            if (!MODES.contains(mode)) throw new IllegalArgumentException("gateway.modes: unknown mode '" + mode + "', expected some of " + MODES);
        }
        if (modes.isEmpty()) throw new IllegalArgumentException("gateway.modes: name at least one mode");
        int gwCores = gw.intAt("cores", 1, 1, 4096);
        String placement = gw.string("placement", "per-dc");
        if (!placement.equals("per-dc") && !placement.equals("shared")) {
            throw new IllegalArgumentException("gateway.placement: expected per-dc or shared, was '" + placement + "'");
        }
        double eff = gw.num("core_efficiency", 0.9, 0, 1);
        Map<String, Double> scale = new LinkedHashMap<>();
        Object cs = gw.map().get("cost_scale");
        if (cs instanceof Map<?, ?> sm) {
            for (var e : sm.entrySet()) {
                String mode = String.valueOf(e.getKey());
                if (!MODES.contains(mode)) throw new IllegalArgumentException("gateway.cost_scale: unknown mode '" + mode + "'");
                scale.put(mode, positive(sm, mode, "gateway.cost_scale"));
            }
        } else if (cs != null) {
            double v = positive(gw.map(), "cost_scale", "gateway");
            for (String mode : MODES) scale.put(mode, v);
        }

        // a gateway that gets only a share of each core (xaf bench --gateway-cpu) takes 1/share as long per packet
        scale = budgetScale(scale, gw.num("cpu_share", 1.0, 0.05, 1));

        double epCores = ep.num("cores_per_host", 1.0, 0.01, 4096);
        double shared = ep.num("shared_cores", 0.0, 0, 4096);
        boolean gwShared = ep.bool("gateway_on_shared_cores", false);
        if (gwShared && shared <= 0) throw new IllegalArgumentException("endpoint.gateway_on_shared_cores needs endpoint.shared_cores > 0");
        double epScale = ep.num("cost_scale", 1.0, 1e-6, 1e6);
        String testbed = top.string("testbed", "none");
        if (!Set.of("none", "allreduce", "train").contains(testbed)) {
            throw new IllegalArgumentException("testbed: expected none, allreduce or train, was '" + testbed + "'");
        }
        String source = ep.string("calibration", testbed.equals("train") ? "train" : "allreduce");
        if (!source.equals("allreduce") && !source.equals("train")) {
            throw new IllegalArgumentException("endpoint.calibration: expected allreduce or train, was '" + source + "'");
        }
        EmulatedNetwork emulated = emulatedNetwork(top, net, source, shared);
        String overhead = ep.string("fixed_overhead", "none");
        if (!overhead.equals("none") && !overhead.equals("calibrated")) {
            throw new IllegalArgumentException("endpoint.fixed_overhead: expected none or calibrated, was '" + overhead + "'");
        }

        Algorithm alg = word("allreduce.algorithm", ar.string("algorithm", Algorithm.HIERARCHICAL.configName()),
                Algorithm::fromName);
        double bucketMb = ar.num("bucket_mb", 4.0, 0.001, 1 << 20);
        int window = top.intAt("window_chunks", TransportConfig.JOB_WINDOW_CHUNKS, 1, 4096);
        // the default is xaf train's
        WireSecurity sec = word("wire_security", top.string("wire_security", TrainJobSpec.DEFAULT_WIRE_SECURITY),
                WireSecurity::fromName);

        long gradient;
        String label;
        boolean hasPreset = top.has("gradient"), hasMb = top.has("gradient_mb");
        if (hasPreset == hasMb) throw new IllegalArgumentException("give exactly one of gradient: (a model preset) or gradient_mb:");
        if (hasPreset) {
            label = top.string("gradient", null);
            try {
                gradient = ModelConfig.preset(label).gradientBytes();
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("gradient: " + e.getMessage());
            }
        } else {
            double mb = top.num("gradient_mb", null, 1e-6, 1 << 24);
            gradient = Math.max(4, (long) (mb * 1048576) / 4 * 4);
            label = String.format(Locale.ROOT, "%s MB", fmt(mb));
        }
        double compute = top.num("compute_ms", 0.0, 0, 1e9);
        boolean overlap = top.bool("overlap", false);
        double bwd = top.num("backward_share", 2.0 / 3, 0, 1);

        Path fwd = cal.has("forward") ? cal.path("forward", dir) : null;
        Path arj = cal.has("allreduce") ? cal.path("allreduce", dir) : null;
        Path tr = cal.has("train") ? cal.path("train", dir) : null;
        double calCores = cal.num("allreduce_cores", 2.0, 0.01, 4096);
        String name = top.string("name", dcs + " DCs x " + hosts + " hosts");
        return new ClusterSpec(name, dcs, hosts, rph, mtu, nic, wan, rtt, lanRtt, modes, gwCores,
                placement.equals("shared"), eff, scale, epCores, shared, gwShared, epScale, overhead.equals("calibrated"),
                alg, (long) (bucketMb * 1048576) / 4 * 4, window, sec, gradient, label, compute, overlap, bwd, fwd, arj, tr,
                calCores, testbed, source, emulated);
    }

    /**
     * The {@code emulated_network} section: required, with every key, where the endpoint cost comes from the training
     * bench (whose fit separates the ranks' own cost from the emulated network's) and the ranks share cores (a
     * testbed of this machine); refused elsewhere.
     */
    private static EmulatedNetwork emulatedNetwork(Section top, Section net, String source, double sharedCores) {
        boolean given = top.has("emulated_network");
        if (given && !source.equals("train")) {
            throw new IllegalArgumentException("emulated_network: only for endpoint.calibration: train (its costs per frame are "
                    + "fitted on the training bench), this file says endpoint.calibration: " + source);
        }
        if (given && sharedCores <= 0) {
            throw new IllegalArgumentException("emulated_network needs endpoint.shared_cores > 0 (the cores it runs on)");
        }
        if (!given) {
            if (source.equals("train") && sharedCores > 0) {
                throw new IllegalArgumentException("endpoint.calibration: train with endpoint.shared_cores needs an emulated_network "
                        + "section (lan_hops, wan_hops, wan_shaper): the bridges and the WAN shaper on the shared cores");
            }
            return EmulatedNetwork.NONE;
        }
        int lan = net.intAt("lan_hops", null, 0, 64);
        int wan = net.intAt("wan_hops", null, 0, 64);
        if (!net.has("wan_shaper")) throw new IllegalArgumentException("emulated_network: 'wan_shaper' is required");
        return new EmulatedNetwork(lan, wan, net.bool("wan_shaper", false));
    }

    static String fmt(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }

    /** A number greater than 0 under {@code key} of {@code m}: a cost scale. */
    private static double positive(Map<?, ?> m, String key, String where) {
        double v = FIELDS.decimal(m, key, null, 0, Double.MAX_VALUE, where);
        if (v <= 0) throw new IllegalArgumentException(where + ": " + key + " must be greater than 0, got " + m.get(key));
        return v;
    }

    /** One mapping of the file ({@code where}: top level, or its key), its keys checked by {@link #FIELDS}. */
    private record Section(String where, Map<?, ?> map, Set<String> allowed) {
        Section {
            FIELDS.allowOnly(map, where, allowed);
        }

        boolean has(String key) {
            return map.containsKey(key);
        }

        Section section(String key, Set<String> keys) {
            Object v = map.get(key);
            return new Section(key, v == null ? Map.of() : FIELDS.map(v, key), keys);
        }

        double num(String key, Double dflt, double min, double max) {
            return FIELDS.decimal(map, key, dflt, min, max, where);
        }

        int intAt(String key, Integer dflt, int min, int max) {
            return (int) (dflt == null ? FIELDS.requiredInteger(map, key, min, max, where)
                    : FIELDS.integer(map, key, dflt, min, max, where));
        }

        boolean bool(String key, boolean dflt) {
            return FIELDS.bool(map, key, dflt, where);
        }

        String string(String key, String dflt) {
            return FIELDS.string(map, key, dflt, where);
        }

        /** A list of words, or one value of comma-separated words; {@code dflt} when absent. */
        List<String> words(String key, List<String> dflt) {
            Object v = map.get(key);
            if (v == null) return dflt;
            if (v instanceof List<?> l) {
                List<String> out = new ArrayList<>();
                for (Object item : l) {
                    if (!(item instanceof String w)) throw new IllegalArgumentException(where + ": " + key + " must be a list of words");
                    out.add(w.trim());
                }
                return out;
            }
            return List.of(string(key, null).split(",")).stream().map(String::trim).toList();
        }

        Path path(String key, Path dir) {
            Path p = Path.of(string(key, null));
            return p.isAbsolute() || dir == null ? p : dir.resolve(p).normalize();
        }
    }

    /** An enum word of the file parsed by the enum's own {@code fromName}; its error is named by the key. */
    private static <T> T word(String key, String value, Function<String, T> fromName) {
        try {
            return fromName.apply(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(key + ": " + e.getMessage());
        }
    }
}
