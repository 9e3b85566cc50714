package io.xaforward.testbed.mode;

import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.XafDataplane;
import io.xaforward.dataplane.gateway.GatewayConfig;
import io.xaforward.dataplane.gateway.GatewayConfigParser;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The XDP gateway in the gateway namespace, configured from {@link IdentifierPlan#gatewayYaml}. It runs as the
 * gateway service process ({@value #MAIN_CLASS} {@code --config FILE}) when that class is on the class path, else
 * in this JVM: the same BPF program and maps loaded from a thread inside the namespace (devmaps resolve ifindexes in
 * the namespace of the updating thread). Either way the veth peers of the gateway ports get an XDP_PASS program,
 * without which XDP_REDIRECT between veths drops every frame.
 */
public final class XdpGateway implements GatewayRunner {
    static final String MAIN_CLASS = "io.xaforward.dataplane.gateway.GatewayMain";
    static final String READY_LINE = "xaf gateway: ready";

    private final List<Node> peersWithXdp = new ArrayList<>();
    private Path configFile;
    private GatewayProcess process;
    private InNamespaceDataplane inProcess;
    private String namespace;

    @Override
    public GatewayMode mode() {
        return GatewayMode.XDP;
    }

    /** True when the gateway service's main class is available (the gateway then runs as its own process). */
    public static boolean serviceAvailable() {
        try {
            Class.forName(MAIN_CLASS, false, XdpGateway.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    @Override
    public void start(TestbedState state, IdentifierPlan plan, String gateway) {
        namespace = state.gatewayNamespace(gateway);
        String yaml = plan.gatewayYaml(gateway, "off", 0);
        try {
            attachPassToPeers(state.gatewayPorts(gateway));
            if (serviceAvailable()) {
                configFile = Files.createTempFile("xaf-gw-" + gateway, ".yaml");
                Files.writeString(configFile, yaml);
                process = GatewayProcess.start(namespace, MAIN_CLASS, List.of("--config", configFile.toString()),
                        READY_LINE, Duration.ofSeconds(30));
            } else {
                GatewayConfig config = GatewayConfigParser.parse(yaml, "plan:" + gateway);
                Map<String, Node> ports = new HashMap<>();
                for (Node p : state.gatewayPorts(gateway)) ports.put(p.iface(), p);
                inProcess = new InNamespaceDataplane(namespace, () -> configure(config, ports));
            }
        } catch (IOException e) {
            close();
            throw new UncheckedIOException(e);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Loads the data plane, fills ports, devmap and routes from the config and attaches it (called inside the namespace). */
    private static XafDataplane configure(GatewayConfig config, Map<String, Node> ports) {
        XafDataplane dp = XafDataplane.load();
        try {
            Map<String, GatewayConfig.PortConfig> bySlotName = new HashMap<>();
            for (GatewayConfig.PortConfig p : config.ports()) {
                Node n = ports.get(p.iface());
                dp.setPort(n.ifindex(), p.slot(), p.form().code());
                dp.setTxPort(p.slot(), n.ifindex());
                bySlotName.put(p.iface(), p);
            }
            for (GatewayConfig.RouteConfig r : config.routes()) {
                GatewayConfig.PortConfig egress = bySlotName.get(r.egress().orElseThrow());
                long mask = 0;
                for (String in : r.ingress()) mask |= 1L << bySlotName.get(in).slot();
                byte[] srcMac = r.srcMac().orElse(ports.get(egress.iface()).macBytes());
                Route route = Route.forward(egress.slot(), egress.form().code(), mask, r.jobId(), r.jobToken(), r.srcId(),
                        srcMac, r.dstMac().orElseThrow(), r.srcIp().orElse(null), r.dstIp().orElse(null),
                        r.srcPort(), r.dstPort()).withDropOneIn(r.dropOneIn());
                dp.putRoute(r.networkId(), route);
            }
            for (GatewayConfig.PortConfig p : config.ports()) dp.attach(p.iface(), false);
            return dp;
        } catch (RuntimeException e) {
            dp.close();
            throw e;
        }
    }

    private void attachPassToPeers(List<Node> ports) throws IOException {
        Path obj = Files.createTempFile("xdp_pass", ".bpf.o");
        try (InputStream in = XdpGateway.class.getResourceAsStream("/bpf/xdp_pass.bpf.o")) {
            if (in == null) throw new IllegalStateException("bpf/xdp_pass.bpf.o is not on the class path: build the dataplane module");
            Files.copy(in, obj, StandardCopyOption.REPLACE_EXISTING);
            for (Node p : ports) {
                Netns.exec(null, "ip", "-force", "-n", p.peerNamespace(), "link", "set", "dev", p.peerIface(),
                        "xdpdrv", "object", obj.toString(), "section", "xdp");
                peersWithXdp.add(p);
            }
        } finally {
            Files.deleteIfExists(obj);
        }
    }

    @Override
    public List<Long> processIds() {
        return process == null ? List.of() : List.of(process.pid());
    }

    /** Output of the gateway process so far (empty when it runs in this JVM). */
    public List<String> processOutput() {
        return process == null ? List.of() : process.output();
    }

    @Override
    public void close() {
        try {
            if (process != null) process.close();
            if (inProcess != null) inProcess.close();
        } finally {
            process = null;
            inProcess = null;
            for (Node p : peersWithXdp)
                if (Netns.exists(p.peerNamespace()))
                    Netns.tryExec(null, Netns.DEFAULT_TIMEOUT, null,
                            List.of("ip", "-n", p.peerNamespace(), "link", "set", "dev", p.peerIface(), "xdpdrv", "off"));
            peersWithXdp.clear();
            try {
                if (configFile != null) Files.deleteIfExists(configFile);
            } catch (IOException ignored) {
                // a leftover temp file is harmless
            }
        }
    }

    /**
     * The data plane owned by one platform thread inside the gateway namespace for its whole life: its maps live in a
     * confined arena, and devmap ifindexes resolve in the namespace of the updating thread.
     */
    private static final class InNamespaceDataplane implements AutoCloseable {
        private final java.util.concurrent.CountDownLatch stop = new java.util.concurrent.CountDownLatch(1);
        private final java.util.concurrent.CompletableFuture<Void> ready = new java.util.concurrent.CompletableFuture<>();
        private final Thread owner;

        InNamespaceDataplane(String namespace, Supplier<XafDataplane> setup) {
            owner = io.xaforward.dataplane.sys.NetworkNamespace.start(namespace, "xdp-gateway-" + namespace, () -> {
                XafDataplane dp;
                try {
                    dp = setup.get();
                } catch (Throwable t) {
                    ready.completeExceptionally(t);
                    return;
                }
                try (dp) {
                    ready.complete(null);
                    stop.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            try {
                ready.get(30, java.util.concurrent.TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
            } catch (Exception e) {
                stop.countDown();
                throw new IllegalStateException("the XDP gateway did not come up in " + namespace + ": " + e, e);
            }
        }

        @Override
        public void close() {
            stop.countDown();
            try {
                owner.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
