package io.xaforward.cluster;

import io.xaforward.testbed.Layout;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Topology;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the network of a job did up to one moment, read from the kernel: the gateway's CPU time (when the job is
 * {@linkplain ClusterRun#placed() placed}), how long the workers' core and the gateway's core were busy with anything
 * ({@code /proc/stat}: which of the two sets the pace), and the WAN's transmitted bytes and packets per direction and
 * queue drops (when the topology has a WAN; without one, the packets that left the gateways' ports stand for the
 * packets between the data centers). Two samples give the rates of the interval between them.
 */
public record NetworkSample(long nanos, long gatewayCpuNs, long workerCoreBusyNs, long gatewayCoreBusyNs,
                            long wanBytesToDc, long wanBytesFromDc, long wanPackets, long wanDrops) {
    private static final Pattern DROPPED = Pattern.compile("dropped (\\d+)");

    static NetworkSample take(Topology topology, Placement placement) {
        long now = System.nanoTime();
        long cpu = placement.gatewayCpuNs();
        ProcStat stat = ProcStat.read();
        long workerCore = stat.busyNs("cpu" + Placement.WORKER_CPU), gatewayCore = stat.busyNs("cpu" + Placement.GATEWAY_CPU);
        Layout layout = Layout.of(topology);
        var wan = layout.wan();
        if (wan.isEmpty()) {
            // No WAN: what crossed between the data centers is what left the gateways' ports (each frame leaves once).
            long packets = 0;
            for (var port : layout.gatewayPorts()) packets += tx(port.namespace(), port.iface())[1];
            return new NetworkSample(now, cpu, workerCore, gatewayCore, 0, 0, packets, 0);
        }
        String ns = wan.get().namespace();
        long[] toDc = tx(ns, wan.get().dcSide()), fromDc = tx(ns, wan.get().gatewaySide());
        return new NetworkSample(now, cpu, workerCore, gatewayCore, toDc[0], fromDc[0], toDc[1] + fromDc[1],
                drops(ns, wan.get().dcSide()) + drops(ns, wan.get().gatewaySide()));
    }

    /** The interval from {@code earlier} to this sample, as counters (names as in the gateway counters map). */
    public Map<String, Long> since(NetworkSample earlier) {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("window_ns", nanos - earlier.nanos);
        m.put("gateway_cpu_ns", gatewayCpuNs - earlier.gatewayCpuNs);
        m.put("worker_core_busy_ns", workerCoreBusyNs - earlier.workerCoreBusyNs);
        m.put("gateway_core_busy_ns", gatewayCoreBusyNs - earlier.gatewayCoreBusyNs);
        m.put("wan_bytes_to_dc", wanBytesToDc - earlier.wanBytesToDc);
        m.put("wan_bytes_from_dc", wanBytesFromDc - earlier.wanBytesFromDc);
        m.put("wan_packets", wanPackets - earlier.wanPackets);
        m.put("wan_drops", wanDrops - earlier.wanDrops);
        return m;
    }

    private static long[] tx(String ns, String dev) {
        String[] v = Netns.exec(ns, "cat", "/sys/class/net/" + dev + "/statistics/tx_bytes",
                "/sys/class/net/" + dev + "/statistics/tx_packets").stdout().trim().split("\\s+");
        return new long[]{Long.parseLong(v[0]), Long.parseLong(v[1])};
    }

    private static long drops(String ns, String dev) {
        String out = Netns.exec(null, "tc", "-n", ns, "-s", "qdisc", "show", "dev", dev).stdout();
        long total = 0;
        // the root HTB counts what its classes' queues dropped: take the first (root) line's figure only
        Matcher m = DROPPED.matcher(out);
        if (m.find()) total = Long.parseLong(m.group(1));
        return total;
    }

    static List<String> counterNames() {
        return List.of("window_ns", "gateway_cpu_ns", "worker_core_busy_ns", "gateway_core_busy_ns", "wan_bytes_to_dc", "wan_bytes_from_dc", "wan_packets", "wan_drops");
    }
}
