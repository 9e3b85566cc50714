package io.xaforward.gateway.afxdp;

import io.xaforward.gateway.EngineProcess;
import io.xaforward.dataplane.xsk.XskConfig;

/**
 * The AF_XDP user-space gateway as a process: {@code AfXdpGatewayMain --config FILE} inside the gateway namespace,
 * with the same gateway config file as the XDP gateway and the relay, started and stopped as every Java engine is
 * ({@link EngineProcess}). Opens an AF_XDP socket and the {@code xsk_all} XDP program on every port, serves its
 * counters on the config's metrics endpoint, prints one line per port and then {@value #READY_LINE}, forwards until
 * its standard input ends (or SIGTERM), then detaches and exits.
 */
public final class AfXdpGatewayMain {
    public static final String READY_LINE = "xaf afxdp: ready";

    private AfXdpGatewayMain() {}

    public static void main(String[] args) throws Exception {
        EngineProcess.run("afxdp", AfXdpGatewayMain.class, args, config -> new AfXdpGatewayForwarder(config, XskConfig.defaults()));
    }
}
