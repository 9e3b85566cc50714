package io.xaforward.testbed.mode;

import io.xaforward.protocol.NetworkForm;

import java.util.Locale;

/**
 * The ways a testbed gateway can forward XAF traffic. They are compared by the forwarding benchmark, so each one is
 * a realistic deployment of its kind: the XDP gateway (this project), plain Linux forwarding with a firewall, a
 * user-space relay that handles every packet in a Java process like a traditional routing device, and an AF_XDP
 * gateway that bypasses the kernel stack like XDP but makes every decision in user space.
 */
public enum GatewayMode {
    /** The XDP gateway: routes by network index identifier in the driver hook, translating between forms. */
    XDP,
    /** Linux IP forwarding with an iptables rule set; cannot translate between forms. */
    KERNEL,
    /** User-space relay: sockets in, parse, route, copy, rebuild, sockets out. */
    RELAY,
    /**
     * AF_XDP user-space gateway: XAF frames bypass the kernel stack into AF_XDP sockets, and a Java thread routes,
     * checks, copies and rebuilds them (a software router with kernel bypass, decisions in user space).
     */
    AFXDP;

    /** Parses "xdp", "kernel", "relay" or "afxdp" (any case). */
    public static GatewayMode fromName(String name) {
        try {
            return valueOf(name.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IllegalArgumentException("unknown gateway mode '" + name + "'; expected xdp, kernel, relay or afxdp");
        }
    }

    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** A new, not yet started runner of this mode. */
    public GatewayRunner newRunner() {
        return switch (this) {
            case XDP -> new XdpGateway();
            case KERNEL -> new KernelGateway();
            case RELAY -> new RelayGateway();
            case AFXDP -> new AfXdpGateway();
        };
    }

    /**
     * True when senders address the destination host's IP (the kernel routes it); false when they address the
     * gateway port's IP (or MAC) and the gateway routes by the identifier in the XAF header.
     */
    public boolean sendersAddressDestination() {
        return this == KERNEL;
    }

    /** Whether this mode can carry XAF traffic from a host of form {@code src} to one of form {@code dst}. */
    public boolean supports(NetworkForm src, NetworkForm dst) {
        return unsupportedReason(src, dst) == null;
    }

    /** Why this mode cannot carry {@code src -> dst}, or null when it can. */
    public String unsupportedReason(NetworkForm src, NetworkForm dst) {
        if (this == KERNEL) {
            if (src == NetworkForm.ID || dst == NetworkForm.ID)
                return "kernel forwarding cannot carry the identifier-native form (" + src.configName() + " -> "
                        + dst.configName() + "): Linux has no route for EtherType 0x0812";
            if (src != dst)
                return "kernel forwarding cannot translate between network forms (" + src.configName() + " -> "
                        + dst.configName() + "): it routes IP packets and never rewrites IPv4 into IPv6";
        }
        return null;
    }
}
