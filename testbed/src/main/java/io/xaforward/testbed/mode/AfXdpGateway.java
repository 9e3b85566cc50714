package io.xaforward.testbed.mode;

import io.xaforward.gateway.afxdp.AfXdpGatewayMain;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.util.ArrayList;
import java.util.List;

/**
 * Runs {@link AfXdpGatewayMain}, the AF_XDP user-space gateway, as its own process in the gateway namespace with
 * the gateway config of the identifier plan: frames bypass the kernel stack as with the XDP gateway, but a Java
 * thread makes every forwarding decision. Senders address the gateway port as they do for the XDP gateway. The veth
 * peers of the gateway ports get an XDP_PASS program, as {@link XdpGateway} does, so the receiving side of every
 * link is the same in both modes.
 */
public final class AfXdpGateway extends ProcessGatewayRunner {
    private final PeerXdpPass peerPass = new PeerXdpPass();
    private final List<Node> ports = new ArrayList<>();

    @Override
    public GatewayMode mode() {
        return GatewayMode.AFXDP;
    }

    @Override
    public void start(TestbedState state, IdentifierPlan plan, String gateway) {
        startProcess(state, plan, gateway, new Launch(AfXdpGatewayMain.class, AfXdpGatewayMain.READY_LINE, true));
    }

    @Override
    protected void beforeStart(TestbedState state, String gateway) {
        ports.addAll(state.gatewayPorts(gateway));
        peerPass.attach(ports);
    }


    /**
     * Once the process has stopped (it detaches its programs), makes sure no XDP program is left on the gateway ports
     * even if it had to be killed, and removes the peers' XDP_PASS programs.
     */
    @Override
    protected void afterStop() {
        try {
            if (namespace != null && Netns.exists(namespace))
                for (Node p : ports)
                    Netns.tryExec(null, Netns.DEFAULT_TIMEOUT, null,
                            List.of("ip", "-n", namespace, "link", "set", "dev", p.iface(), "xdp", "off"));
        } finally {
            ports.clear();
            peerPass.close();
        }
    }
}
