package io.xaforward.bench.model;

import io.xaforward.collective.Algorithm;
import io.xaforward.transport.TransportConfig;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Time per training step of a data-parallel job across data centers, per gateway mode: a pipeline of stages that
 * every gradient datagram crosses (the sending rank's transport, its host NIC, the gateway, the WAN uplink, the
 * remote gateway, the receiving NIC and transport), each with the work the all-reduce puts on it and its capacity.
 *
 * <p>With buckets pipelined (the collective advances every bucket on its own) the stages work concurrently, so an
 * all-reduce takes as long as its busiest stage (the one that "bounds" it), plus the latency of one bucket's phases
 * (one round trip per phase: the message and its last ACK), plus, for files that describe this machine, the fixed
 * time per all-reduce calibrated here. Stages that share cores (this machine's testbed) add up on those cores; on
 * the training testbeds that core also carries the emulated network's bridges, and, where the WAN's shaper runs there
 * and sets the pace, the cost of handing the cross-DC frames on a few at a time ({@link #emulatedNetworkSeconds}).
 * The transport's window bounds each WAN flow to {@code window x chunk / RTT}.
 *
 * <p>Assumptions (docs/MODEL.md): steady state (the congestion window has reached its cap, nothing is lost); a
 * gateway's rate scales with cores as {@code 1 + (cores - 1) x core_efficiency}; a rank's transport is one thread,
 * so it uses at most one core; every message between ranks crosses the host NIC (none stays inside a host); ACKs are
 * one datagram per 32 data chunks each way and are otherwise free; per-packet costs do not depend on the payload
 * above the largest size measured (about 1.4 kB).
 */
public final class StepModel {
    private StepModel() {}

    /** ACK datagrams per data chunk (delayed ACKs: one per 32 chunks, TRANSPORT.md). */
    static final double ACKS_PER_CHUNK = 1.0 / 32;
    /** Bytes on the wire per datagram besides its payload: XAF header 48, IPv6 + UDP 48, Ethernet 14. */
    static final int WIRE_OVERHEAD = 48 + 48 + 14;
    /** Outer header bytes the chunk size allows for (IPv6 + UDP, the larger form). */
    static final int OUTER = 48;
    /** Bytes of the mac/encrypt trailer in each chunk. */
    static final int TRAILER = 16;

    /**
     * Work of one all-reduce.
     *
     * @param chunkPayload       datagram payload (bytes), from the MTU
     * @param chunkData          gradient bytes per datagram (payload less the seal's trailer)
     * @param sentBytesPerRank   gradient bytes each rank sends
     * @param eventsPerRank      datagrams each rank's transport sends or receives (data and ACKs)
     * @param wanBytesPerDc      gradient bytes leaving each data center (per direction)
     * @param wanFlowsPerDc      rank-to-rank flows that carry them
     * @param gatewayPacketsPerGateway datagrams each gateway forwards (both directions; ACKs included)
     * @param phaseRttsMs        round trip per sequential phase of one bucket, ms
     * @param lanFrames          datagrams (data and ACKs) between ranks of one data center, all ranks together
     * @param wanFrames          datagrams (data and ACKs) between data centers, all data centers and directions together
     */
    public record Traffic(int chunkPayload, int chunkData, double sentBytesPerRank, double eventsPerRank,
                          double wanBytesPerDc, int wanFlowsPerDc, double gatewayPacketsPerGateway, double phaseRttsMs,
                          double lanFrames, double wanFrames) {}

    /** One stage's time for one all-reduce. */
    public record Stage(String name, double seconds) {}

    /**
     * The prediction for one gateway mode.
     *
     * @param mode              gateway mode
     * @param stepSeconds       time per step
     * @param computeSeconds    compute per step
     * @param allreduceSeconds  one all-reduce
     * @param stages            every stage's time for one all-reduce (endpoint, nic, gateway, wan, window)
     * @param latencySeconds    latency of one bucket's phases
     * @param overheadSeconds   calibrated fixed time (testbed files), else 0
     * @param bound             the stage that sets the all-reduce's pace (or "latency")
     * @param gatewayNsPerPacket gateway CPU per packet used
     * @param gatewayUtilisation busy share of the gateway's cores during the all-reduce
     * @param coresToFillWan    gateway cores needed for the gateway to keep pace with the WAN (NaN: no WAN limit)
     * @param traffic           the work
     */
    public record Prediction(String mode, double stepSeconds, double computeSeconds, double allreduceSeconds,
                             List<Stage> stages, double latencySeconds, double overheadSeconds, String bound,
                             double gatewayNsPerPacket, double gatewayUtilisation, double coresToFillWan, Traffic traffic) {
        /** A stage's time; "endpoint" also finds the shared cores' stage of testbed files. */
        public double stage(String name) {
            String key = name.equals("endpoint") && stages.stream().anyMatch(s -> s.name().equals("shared cores")) ? "shared cores" : name;
            return stages.stream().filter(s -> s.name().equals(key)).mapToDouble(Stage::seconds).findFirst().orElse(0);
        }
    }

    public static Traffic traffic(ClusterSpec c) {
        int payload = TransportConfig.maxPayloadForMtu(c.mtu(), OUTER);
        int data = payload - (c.wireSecurity().authenticated() ? TRAILER : 0);
        double s = c.gradientBytes();
        int d = c.datacenters(), m = c.ranksPerDc(), n = c.ranks();
        double sent, wanOut;
        int flows;
        double phases;
        double lan = c.lanRttMs(), wan = d > 1 ? c.wanRttMs() : c.lanRttMs();
        switch (c.algorithm()) {
            case RING -> {
                sent = n > 1 ? 2.0 * (n - 1) / n * s : 0;
                wanOut = d > 1 ? sent : 0;
                flows = d > 1 ? 1 : 0;
                phases = 2.0 * (n - 1) * (d > 1 ? wan : lan); // every ring step waits for the edge that crosses the WAN
            }
            case HIERARCHICAL, PARAMETER_SERVER -> {
                double intra = 2.0 * (m - 1) / m * s;
                double cross = (d - 1) * s / m;
                sent = intra + cross;
                wanOut = (d - 1) * s;
                flows = d > 1 ? m * (d - 1) : 0;
                // hierarchical: ring reduce-scatter and all-gather inside the DC, one exchange across; ps: push, cross, pull
                double lanPhases = c.algorithm() == Algorithm.HIERARCHICAL ? 2.0 * (m - 1) : (m > 1 ? 2 : 0);
                phases = lanPhases * lan + (d > 1 ? wan : 0);
            }
            default -> throw new IllegalStateException();
        }
        double chunks = sent / data;
        double events = 2 * chunks * (1 + ACKS_PER_CHUNK);
        double wanPackets = wanOut / data * (1 + ACKS_PER_CHUNK);
        double perGateway = d < 2 ? 0 : c.sharedGateway() ? d * wanPackets : 2 * wanPackets;
        double wanFrames = d < 2 ? 0 : d * wanPackets;
        double lanFrames = n * chunks * (1 + ACKS_PER_CHUNK) - wanFrames;
        return new Traffic(payload, data, sent, events, wanOut, flows, perGateway, phases, lanFrames, wanFrames);
    }

    /**
     * Whether the emulated WAN's shaper sets the pace of the frames between data centers: the WAN needs longer for
     * them than the shared cores need to send, bridge and receive them ({@code endpointNs} per send and per receive,
     * {@code hopNs} per bridge). Then it hands them on at its rate, a few at a time, not in the bursts the senders make.
     */
    static boolean wanPaces(ClusterSpec c, Traffic t, double endpointNs, double hopNs) {
        if (!c.emulatedNetwork().wanShaper() || c.wanGbps() <= 0 || c.sharedCores() <= 0 || t.wanFrames() <= 0) return false;
        double cores = t.wanFrames() * (2 * endpointNs + c.emulatedNetwork().wanHops() * hopNs) * 1e-9 / c.sharedCores();
        return wanSeconds(c, t) > cores;
    }

    /** Bytes out of each DC over the WAN's rate, with the wire overhead; 0 without a WAN limit. */
    static double wanSeconds(ClusterSpec c, Traffic t) {
        double wire = (double) (t.chunkPayload() + WIRE_OVERHEAD) / t.chunkData();
        return c.wanGbps() > 0 ? t.wanBytesPerDc() * wire * 8 / (c.wanGbps() * 1e9) : 0;
    }

    /**
     * The shared cores' work for the emulated network of a training testbed (seconds of one core, all cores together):
     * every frame's bridges, and the frames across a WAN whose shaper sets the pace (docs/MODEL.md).
     */
    static double emulatedNetworkSeconds(ClusterSpec c, Traffic t, Calibration.TrainFit fit, double endpointNs) {
        ClusterSpec.EmulatedNetwork net = c.emulatedNetwork();
        double hops = (t.lanFrames() * net.lanHops() + t.wanFrames() * net.wanHops()) * fit.hopNsPerFrame();
        double shaped = wanPaces(c, t, endpointNs, fit.hopNsPerFrame()) ? t.wanFrames() * fit.shapedWanNsPerFrame() : 0;
        return (hops + shaped) * 1e-9;
    }

    /** Predicts every mode of the cluster file. */
    public static List<Prediction> predict(ClusterSpec c, Calibration cal) {
        List<Prediction> out = new ArrayList<>();
        for (String mode : c.modes()) out.add(predict(c, cal, mode));
        return out;
    }

    public static Prediction predict(ClusterSpec c, Calibration cal, String mode) {
        Traffic t = traffic(c);
        // a file that describes the training testbed takes the per-packet costs that testbed measured (same traffic)
        double trained = c.testbed().equals("train") ? cal.trainGatewayNsPerPacket(mode) : Double.NaN;
        double gwNs = (Double.isNaN(trained) ? cal.gatewayNsPerPacket(mode, t.chunkPayload()) : trained)
                * c.gatewayCostScale().getOrDefault(mode, 1.0);
        // the all-reduce fit is on crc32c cells; the training fit already includes the training's seal (mac)
        double seal = c.endpointSource().equals("allreduce") ? cal.sealFactor(c.wireSecurity()) : 1.0;
        double epNs = cal.endpointNs(c.endpointSource()) * c.endpointCostScale() * seal;
        double gwWork = t.gatewayPacketsPerGateway() * gwNs * 1e-9; // seconds of one core per gateway
        double gwCapacity = 1 + (c.gatewayCores() - 1) * c.coreEfficiency();

        Map<String, Double> stages = new LinkedHashMap<>();
        if (c.sharedCores() > 0) {
            double work = c.ranks() * t.eventsPerRank() * epNs * 1e-9
                    + emulatedNetworkSeconds(c, t, cal.trainFit(), epNs);
            if (c.gatewayOnSharedCores()) work += gwWork * (c.sharedGateway() ? 1 : c.datacenters());
            stages.put(c.gatewayOnSharedCores() ? "shared cores" : "endpoint", work / c.sharedCores());
            stages.put("gateway", c.gatewayOnSharedCores() ? 0 : gwWork / gwCapacity);
        } else {
            double cores = Math.min(c.endpointCores(), c.ranksPerHost());
            stages.put("endpoint", c.ranksPerHost() * t.eventsPerRank() * epNs * 1e-9 / cores);
            stages.put("gateway", gwWork / gwCapacity);
        }
        double wire = (double) (t.chunkPayload() + WIRE_OVERHEAD) / t.chunkData();
        stages.put("nic", c.nicGbps() > 0 ? c.ranksPerHost() * t.sentBytesPerRank() * wire * 8 / (c.nicGbps() * 1e9) : 0);
        double wanTime = wanSeconds(c, t);
        stages.put("wan", wanTime);
        double window = 0;
        if (t.wanFlowsPerDc() > 0 && c.wanRttMs() > 0) {
            double perFlowRate = (double) c.windowChunks() * t.chunkData() / (c.wanRttMs() / 1e3);
            window = t.wanBytesPerDc() / t.wanFlowsPerDc() / perFlowRate;
        }
        stages.put("window", window);

        String bound = "";
        double busiest = -1;
        for (var e : stages.entrySet()) {
            if (e.getValue() > busiest) {
                busiest = e.getValue();
                bound = e.getKey();
            }
        }
        double latency = t.phaseRttsMs() / 1e3;
        double overhead = c.calibratedOverhead() ? cal.overheadSeconds() : 0;
        if (latency + overhead > busiest) bound = "latency";
        double allreduce = busiest + latency + overhead;

        double compute = c.computeMs() / 1e3;
        double step;
        if (c.overlap()) {
            double bwd = compute * c.backwardShare(), fwd = compute - bwd;
            double tail = busiest * Math.min(1.0, (double) c.bucketBytes() / c.gradientBytes()) + latency + overhead;
            step = fwd + Math.max(bwd, allreduce - tail) + tail;
        } else {
            step = compute + allreduce;
        }
        double gwTime = stages.get("gateway") > 0 ? stages.get("gateway") : gwWork / gwCapacity;
        double util = allreduce > 0 ? Math.min(1.0, gwTime / allreduce) : 0;
        double cores = Double.NaN;
        if (wanTime > 0 && gwWork > 0) {
            double need = gwWork / wanTime; // cores' worth of packet rate to forward at the WAN's rate
            cores = need <= 1 ? 1 : c.coreEfficiency() > 0 ? Math.ceil(1 + (need - 1) / c.coreEfficiency() - 1e-9) : Double.POSITIVE_INFINITY;
        }
        List<Stage> list = new ArrayList<>();
        stages.forEach((k, v) -> list.add(new Stage(k, v)));
        return new Prediction(mode, step, compute, allreduce, List.copyOf(list), latency, overhead, bound, gwNs, util, cores, t);
    }
}
