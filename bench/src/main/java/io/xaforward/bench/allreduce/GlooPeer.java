package io.xaforward.bench.allreduce;

import io.xaforward.bench.TorchBlas;
import io.xaforward.cluster.ClusterRun;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.testbed.Datacenter;
import io.xaforward.testbed.GatewayFirewall;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.testbed.mode.ModeAddressing;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * PyTorch's own CPU all-reduce, Gloo (torch.distributed over TCP), as a row of {@code xaf bench allreduce}: the
 * baseline an ML engineer would deploy today. Each rank runs {@code gloo_allreduce.py} with Debian's python3-torch in
 * its host namespace, timed like the XAF workers and reporting the same result lines. Same-form topologies cross the
 * gateway namespace through Linux forwarding ({@code kernel}); an IPv4 and an IPv6 data center through the kernel
 * tunnel ({@code kernel-tunnel}: every rank uses its IPv4 tunnel address). The edge firewall of the gateway
 * namespaces is opened to new TCP connections for the run, since Gloo picks its ports at random.
 */
public final class GlooPeer implements AllReduceJob.RankStarter {
    /** The row label's prefix and the algorithm name Gloo's results carry. */
    public static final String LABEL = "gloo";
    public static final String ALGORITHM = "gloo";
    private static final String PYTHON = "/usr/bin/python3";
    /** Rank 0's TCP store, where torch.distributed's ranks meet. */
    public static final int STORE_PORT = 29_500;
    /** The helpers every PyTorch rank script of the bench imports (interface lookup, result lines). */
    private static final String COMMON = "xaf_torch_rank.py";

    private final AllReduceSpec spec;
    private final int iterations;
    private Path script;

    public GlooPeer(AllReduceSpec spec, int iterations) {
        this.spec = spec;
        this.iterations = iterations;
    }

    /** The kernel path Gloo takes on a topology: kernel forwarding within one IP family, else the kernel tunnel. */
    public static GatewayMode kernelModeFor(Path topologyFile) {
        Topology t = Topology.load(topologyFile);
        List<NetworkForm> forms = t.datacenters().stream().map(Datacenter::form).distinct().toList();
        if (forms.contains(NetworkForm.ID)) {
            throw new IllegalArgumentException("Gloo runs over TCP/IP: " + topologyFile + " has an identifier-native "
                    + "data center");
        }
        return forms.size() == 1 ? GatewayMode.KERNEL : GatewayMode.KERNEL_TUNNEL;
    }

    /** Fails clearly (or installs, as root) when the system Python has no torch with torch.distributed. */
    public static void ensureTorch() throws IOException, InterruptedException {
        if (torchVersion() != null) {
            TorchBlas.requireOptimised(PYTHON); // Gloo's peers compute (and reduce) with torch: never on the reference BLAS
            return;
        }
        if (!Netns.isRoot()) {
            throw new IllegalStateException("Gloo needs PyTorch in the system Python: apt-get install python3-torch");
        }
        System.out.println("xaf: installing python3-torch for the Gloo baseline (apt-get) ...");
        Process p = new ProcessBuilder("apt-get", "install", "-y", "-q", "python3-torch").redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (p.waitFor() != 0 || torchVersion() == null) {
            throw new IllegalStateException("cannot install python3-torch (apt-get install python3-torch failed)");
        }
    }

    /** The torch version of the system Python, or null when it has none. */
    static String torchVersion() throws IOException, InterruptedException {
        if (!Files.isExecutable(Path.of(PYTHON))) return null;
        Process p = new ProcessBuilder(PYTHON, "-c", "import torch, torch.distributed as d; print(torch.__version__ if d.is_available() else '')")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes()).strip();
        return p.waitFor() == 0 && !out.isEmpty() && !out.contains("\n") ? out : null;
    }

    @Override
    public boolean start(ClusterRun cluster, int rank) throws Exception {
        if (script == null) {
            openTcp(cluster);
            script = copyScript(GlooPeer.class, "gloo_allreduce.py", cluster.spec().workDir());
        }
        List<String> command = rankCommand(script, cluster, rank);
        command.addAll(List.of(
                "--sizes", spec.sizesBytes().stream().map(b -> Long.toString(b / 4 * 4)).collect(Collectors.joining(",")),
                "--runs", Integer.toString(spec.runs()), "--iterations", Integer.toString(iterations),
                "--warmup", Integer.toString(spec.warmup())));
        cluster.startProcess(rank, Netns.processBuilder(cluster.plan().host(rank).namespace(), command).command());
        return true;
    }

    /**
     * Makes the job's gateway namespaces carry a PyTorch job: torch in the system Python ({@link #ensureTorch}) and
     * the edge firewall open to new TCP connections, since Gloo picks its ports at random.
     */
    public static void openTcp(ClusterRun cluster) throws IOException, InterruptedException {
        ensureTorch();
        for (String ns : cluster.gatewayNamespaces()) GatewayFirewall.allowNewTcp(ns);
    }

    /**
     * The command line of one PyTorch rank up to its own arguments: the system Python on {@code script}, this rank
     * and the world, its address and rank 0's (the IPv4 tunnel addresses in kernel-tunnel mode) and the store port.
     */
    public static List<String> rankCommand(Path script, ClusterRun cluster, int rank) {
        GatewayMode mode = cluster.spec().gatewayMode();
        return new ArrayList<>(List.of(PYTHON, "-u", script.toString(),
                "--rank", Integer.toString(rank), "--world", Integer.toString(cluster.plan().worldSize()),
                "--ip", address(mode, cluster.plan().host(rank)).getHostAddress(),
                "--master", address(mode, cluster.plan().host(0)).getHostAddress(),
                "--port", Integer.toString(STORE_PORT)));
    }

    /**
     * Copies the rank script {@code name}, a resource beside {@code owner}, out of the bench jar into {@code dir},
     * with the helpers it imports; returns the script's path.
     */
    public static Path copyScript(Class<?> owner, String name, Path dir) throws IOException {
        copyResource(GlooPeer.class, COMMON, dir);
        return copyResource(owner, name, dir);
    }

    private static Path copyResource(Class<?> owner, String name, Path dir) throws IOException {
        Path file = dir.resolve(name);
        try (InputStream in = owner.getResourceAsStream(name)) {
            if (in == null) throw new IllegalStateException(name + " is missing from the bench jar");
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
        }
        return file;
    }

    /** Where the other ranks reach {@code host}: its own address, or its IPv4 tunnel address in kernel-tunnel mode. */
    private static InetAddress address(GatewayMode mode, Node host) {
        return mode == GatewayMode.KERNEL_TUNNEL ? ModeAddressing.ipv4Of(host) : host.ip();
    }
}
