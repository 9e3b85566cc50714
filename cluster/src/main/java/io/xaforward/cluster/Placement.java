package io.xaforward.cluster;

import io.xaforward.testbed.Layout;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Topology;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Where the work of a job runs, the same for every gateway mode: the gateway is a machine of its own, so everything
 * that forwards gradient packets gets {@link #GATEWAY_CPU}; the workers and the emulated network around them (host,
 * switch and WAN veths) get {@link #WORKER_CPU}.
 *
 * <p>Every veth end of the testbed runs NAPI in a kernel thread of its own (threaded NAPI), so its work can be
 * placed and measured: the gateway ports' threads are where the XDP program runs, where the kernel forwards (and
 * tunnels, and bridges in the direct mode), and where a user-space gateway's sockets are fed; the gateway
 * processes (relay, AF_XDP, the {@code xaf gateway} control process) go with them. Without two CPUs nothing is
 * pinned and {@link #describe()} says so.
 */
public final class Placement {
    public static final int WORKER_CPU = 0;
    public static final int GATEWAY_CPU = 1;
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private final boolean pinning = Runtime.getRuntime().availableProcessors() > GATEWAY_CPU;
    private final Map<String, List<Long>> napiThreadsByDevice = new LinkedHashMap<>();
    private final List<Long> gatewayKthreads = new ArrayList<>();
    private final List<Long> fabricKthreads = new ArrayList<>();
    private final List<Long> gatewayProcesses = new ArrayList<>();

    /** Whether this machine has the two CPUs that placement needs. */
    public boolean pinning() {
        return pinning;
    }

    /**
     * Turns threaded NAPI on for every veth end of the testbed and pins the threads: the gateways' ports to the
     * gateway CPU, every other device to the worker CPU. Call once, after the testbed is up.
     */
    public void placeNetwork(Topology topology) {
        Layout layout = Layout.of(topology);
        Set<String> gatewayDevices = new HashSet<>();
        layout.gatewayPorts().forEach(p -> gatewayDevices.add(p.namespace() + "/" + p.iface()));
        // A WAN with a delay line runs its ports without GRO, so without NAPI: the delay line process does their work
        String delayLineNamespace = layout.wan().filter(w -> w.link().impairment().any()).map(Layout.WanSegment::namespace).orElse(null);
        for (Layout.VethPair v : layout.veths()) {
            for (String[] end : List.of(new String[]{v.nsA(), v.devA()}, new String[]{v.nsB(), v.devB()})) {
                placeDevice(end[0], end[1], gatewayDevices.contains(end[0] + "/" + end[1]), end[0].equals(delayLineNamespace));
            }
        }
    }

    /**
     * Places the WAN's delay line (a process in the WAN namespace that holds every frame for its delay): on the
     * emulated network's CPU, its threads' CPU time counted as the fabric's, as the WAN's NAPI threads are without it.
     */
    public void placeDelayLine(long pid) {
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path t : tasks) fabricKthreads.add(Long.parseLong(t.getFileName().toString()));
        } catch (IOException e) {
            throw new IllegalStateException("the WAN's delay line (pid " + pid + ") is not running", e);
        }
        pin(pid, WORKER_CPU, true);
    }

    /**
     * Turns threaded NAPI on for one device, pins its threads to the gateway CPU ({@code gateway}) or the worker CPU,
     * and counts them as the gateway's when they are; {@code mayLack}: a device without NAPI gets no threads, not an
     * error. Returns the threads.
     */
    private List<Long> placeDevice(String ns, String dev, boolean gateway, boolean mayLack) {
        List<Long> threads = enableThreadedNapi(ns, dev, mayLack);
        napiThreadsByDevice.put(ns + "/" + dev, threads);
        (gateway ? gatewayKthreads : fabricKthreads).addAll(threads);
        for (long tid : threads) pin(tid, gateway ? GATEWAY_CPU : WORKER_CPU, false);
        return threads;
    }

    /**
     * Places the devices a gateway mode created in the gateway's namespace after {@link #placeNetwork} (the kernel
     * tunnel's VXLAN devices): each gets threaded NAPI, its threads pinned to the gateway CPU and counted as the
     * gateway's. Without this a VXLAN device's GRO cells run as NET_RX softirqs, which the kernel runs when an
     * interrupt returns, ahead of any thread on the CPU: that work would escape a gateway CPU budget (the duty-cycle
     * thread is preempted, not the gateway) and the gateway's measured CPU time. Devices without NAPI (bridges,
     * loopback) are left alone. Returns the devices that got threads.
     */
    public List<String> placeGatewayNamespace(String namespace) {
        List<String> placed = new ArrayList<>();
        String devices = Netns.exec(namespace, TIMEOUT, null, List.of("ls", "/sys/class/net")).stdout();
        for (String dev : devices.trim().split("\\s+")) {
            if (dev.isEmpty() || dev.equals("lo") || napiThreadsByDevice.containsKey(namespace + "/" + dev)) continue;
            if (!placeDevice(namespace, dev, true, true).isEmpty()) placed.add(dev);
        }
        return placed;
    }

    /** The kernel threads counted as the gateway's data path (its ports' and its own devices' NAPI threads). */
    public List<Long> gatewayKernelThreads() {
        return List.copyOf(gatewayKthreads);
    }

    /**
     * The kernel threads counted as the emulated network's (the fabric): the NAPI threads of every veth end that is
     * not a gateway port (hosts' interfaces, the switches' bridge ports, the WAN segment's ports). Their work is the
     * bridging, the WAN shaping and the delivery of frames up to the receiving sockets: on real machines it would
     * be switches and NICs, so it is counted apart from the endpoints' process CPU.
     */
    public List<Long> fabricKernelThreads() {
        return List.copyOf(fabricKthreads);
    }

    /** CPU time the emulated network (the fabric's NAPI threads) used so far, in ns. */
    public long fabricCpuNs() {
        return networkCpu().fabricCpuNs();
    }

    /**
     * The threads and processes whose CPU time is the fabric's and the gateway's, as a value another process (a
     * worker that times its own interval) can read the same counters from.
     */
    public NetworkCpu networkCpu() {
        return new NetworkCpu(fabricKthreads, gatewayKthreads, gatewayProcesses);
    }

    /**
     * Pins a gateway process (all its threads, and those it starts later) to the gateway CPU; {@code forwards}: it
     * handles packets (relay, AF_XDP), so its CPU time counts as the gateway's. The XDP mode's {@code xaf gateway}
     * process only programs the kernel and serves metrics: pinned with the gateway, not counted per packet.
     */
    public void placeGatewayProcess(long pid, boolean forwards) {
        if (forwards) gatewayProcesses.add(pid);
        pin(pid, GATEWAY_CPU, true);
    }

    /** The command prefix that starts a worker on the worker CPU (empty without pinning). */
    public List<String> workerCommandPrefix() {
        return pinning ? List.of("taskset", "-c", Integer.toString(WORKER_CPU)) : List.of();
    }

    /** CPU time the gateway's data path used so far: its ports' (and its own devices') NAPI threads and forwarding processes, in ns. */
    public long gatewayCpuNs() {
        return networkCpu().gatewayCpuNs();
    }

    /** One line for logs and reports. */
    public String describe() {
        if (!pinning) return "no pinning (one CPU): gateway and workers share it";
        return "gateway on CPU " + GATEWAY_CPU + " (" + gatewayKthreads.size() + " port NAPI threads, "
                + gatewayProcesses.size() + " process(es)); workers and the emulated network (host, switch, WAN veths: "
                + (napiThreadsByDevice.values().stream().mapToInt(List::size).sum() - gatewayKthreads.size())
                + " NAPI threads) on CPU " + WORKER_CPU;
    }

    /**
     * Enables threaded NAPI on one device and returns the kernel threads that appeared for it; {@code mayLack}: a
     * device without NAPI gets none, not an error.
     */
    private static List<Long> enableThreadedNapi(String ns, String dev, boolean mayLack) {
        Set<Long> before = new HashSet<>(napiThreads());
        String write = "echo 1 > /sys/class/net/" + dev + "/threaded";
        Netns.exec(ns, TIMEOUT, null, List.of("sh", "-c", mayLack ? write + " 2>/dev/null || true" : write));
        List<Long> created = new ArrayList<>();
        for (long tid : napiThreads()) if (!before.contains(tid)) created.add(tid);
        return created;
    }

    /** Every "napi/..." kernel thread of the machine. */
    private static List<Long> napiThreads() {
        List<Long> out = new ArrayList<>();
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"),
                p -> p.getFileName().toString().chars().allMatch(Character::isDigit))) {
            for (Path p : procs) {
                try {
                    if (Files.readString(p.resolve("comm")).startsWith("napi/")) out.add(Long.parseLong(p.getFileName().toString()));
                } catch (IOException e) {
                    // ended while listing
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list /proc", e);
        }
        return out;
    }

    private void pin(long id, int cpu, boolean allThreads) {
        if (!pinning) return;
        List<String> cmd = new ArrayList<>(List.of("taskset", "-p", "-c", Integer.toString(cpu), Long.toString(id)));
        if (allThreads) cmd.add(1, "-a");
        Netns.tryExec(null, TIMEOUT, null, cmd); // a thread that ended meanwhile needs no CPU
    }
}
