package io.xaforward.testbed.mode;

import io.xaforward.common.ConfigWord;
import io.xaforward.protocol.NetworkForm;

import java.util.Arrays;
import java.util.EnumSet;
import java.util.Locale;

/**
 * The ways a testbed gateway can forward XAF traffic. They are compared by the forwarding benchmark, so each one is
 * a realistic deployment of its kind: the XDP gateway (this project), plain Linux forwarding with a firewall, a
 * user-space relay that handles every packet in a Java process like a traditional routing device, and an AF_XDP
 * gateway that bypasses the kernel stack like XDP but makes every decision in user space. Two more modes are the
 * reference points a network engineer would compare against: {@link #KERNEL_TUNNEL}, the Linux-native way to
 * join an IPv4 and an IPv6 data center, and {@link #DIRECT}, no gateway at all. The constants are in the order
 * that benchmarks compare them (the XDP gateway first, the kernel's ways next, the user-space gateways, no gateway).
 */
public enum GatewayMode implements ConfigWord {
    /** The XDP gateway: routes by network index identifier in the driver hook, translating between forms. */
    XDP(Trait.XDP_ON_PORT_PEERS),
    /** Linux IP forwarding with an iptables rule set; cannot translate between forms. */
    KERNEL(Trait.SENDERS_ADDRESS_DESTINATION),
    /**
     * IPv4 carried over IPv6 in kernel tunnels (VXLAN over IPv6; this kernel has no ip6tnl, sit or GRE) between
     * every host of an IPv6 data center and the gateway, which forwards the inner IPv4 to the IPv4 data centers
     * behind the same firewall as {@link #KERNEL}. See {@link KernelTunnelGateway}.
     */
    KERNEL_TUNNEL(Trait.SENDERS_ADDRESS_DESTINATION),
    /** User-space relay: sockets in, parse, route, copy, rebuild, sockets out. */
    RELAY(Trait.FORWARDS_IN_PROCESS),
    /**
     * AF_XDP user-space gateway: XAF frames bypass the kernel stack into AF_XDP sockets, and a Java thread routes,
     * checks, copies and rebuilds them (a software router with kernel bypass, decisions in user space).
     */
    AFXDP(Trait.FORWARDS_IN_PROCESS),
    /**
     * No gateway: the gateway namespace is a plain L2 switch (a bridge of its ports) and every host gets an address
     * in one flat subnet of one family, so workers talk to each other directly. The ideal that no translation can
     * beat. See {@link DirectNetwork}.
     */
    DIRECT(Trait.SENDERS_ADDRESS_DESTINATION);

    /** What a mode does, one constant per yes/no capability; each mode lists the ones it has. */
    private enum Trait {
        /** Every packet is handled in the gateway's user-space process. */
        FORWARDS_IN_PROCESS,
        /** Senders address the destination host's IP and the kernel routes it. */
        SENDERS_ADDRESS_DESTINATION,
        /** Frames are redirected in the kernel by XDP, so the veth peers of the gateway ports need an XDP program. */
        XDP_ON_PORT_PEERS
    }

    private final EnumSet<Trait> traits;

    GatewayMode(Trait... traits) {
        this.traits = traits.length == 0 ? EnumSet.noneOf(Trait.class) : EnumSet.copyOf(Arrays.asList(traits));
    }

    /** Reads a mode's {@link #configName()}: xdp, kernel, kernel-tunnel, relay, afxdp or direct ({@link ConfigWord#parse}). */
    public static GatewayMode fromName(String name) {
        return ConfigWord.parse(GatewayMode.class, "gateway mode", name);
    }

    /** All mode names, comma separated, for messages and help texts. */
    public static String names() {
        return ConfigWord.words(GatewayMode.class);
    }

    /** The name used on command lines and in reports: lower case, '-' between words. */
    @Override
    public String configName() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** A new, not yet started runner of this mode. */
    public GatewayRunner newRunner() {
        return switch (this) {
            case XDP -> new XdpGateway();
            case KERNEL -> new KernelGateway();
            case RELAY -> new RelayGateway();
            case AFXDP -> new AfXdpGateway();
            case KERNEL_TUNNEL -> new KernelTunnelGateway();
            case DIRECT -> new DirectNetwork();
        };
    }

    /**
     * Whether this mode's gateway processes handle every packet in user space (relay, AF_XDP), so that their CPU
     * time is the gateway's forwarding cost; the XDP mode's process only programs the kernel and serves metrics.
     */
    public boolean forwardsInProcess() {
        return traits.contains(Trait.FORWARDS_IN_PROCESS);
    }

    /**
     * True when senders address the destination host's IP (the kernel routes it); false when they address the
     * gateway port's IP (or MAC) and the gateway routes by the identifier in the XAF header.
     */
    public boolean sendersAddressDestination() {
        return traits.contains(Trait.SENDERS_ADDRESS_DESTINATION);
    }

    /**
     * Whether the mode redirects frames inside the kernel with XDP (devmap), so that the veth peers of the gateway
     * ports need an XDP program (XDP_PASS) to accept them. Only then does the testbed attach one: on a veth it costs
     * the receiving side a copy per frame and turns off GSO on its peer, which the other modes would not pay on
     * real machines.
     */
    public boolean needsXdpOnPortPeers() {
        return traits.contains(Trait.XDP_ON_PORT_PEERS);
    }

    /**
     * Whether this mode joins an IPv4 and an IPv6 data center (translating or tunnelling); kernel forwarding cannot,
     * so a job in that mode needs data centers of one IP family.
     */
    public boolean crossesIpFamilies() {
        return supports(NetworkForm.IPV4, NetworkForm.IPV6);
    }

    /** Whether this mode can carry XAF traffic from a host of form {@code src} to one of form {@code dst}. */
    public boolean supports(NetworkForm src, NetworkForm dst) {
        return unsupportedReason(src, dst) == null;
    }

    /** Why this mode cannot carry {@code src -> dst}, or null when it can. */
    public String unsupportedReason(NetworkForm src, NetworkForm dst) {
        String pair = src.configName() + " -> " + dst.configName();
        boolean identifierNative = src == NetworkForm.ID || dst == NetworkForm.ID;
        return switch (this) {
            case KERNEL -> identifierNative
                    ? "kernel forwarding cannot carry the identifier-native form (" + pair + "): Linux has no route for EtherType 0x0812"
                    : src != dst
                    ? "kernel forwarding cannot translate between network forms (" + pair + "): it routes IP packets and never rewrites IPv4 into IPv6"
                    : null;
            case KERNEL_TUNNEL -> identifierNative
                    ? "the kernel tunnel cannot carry the identifier-native form (" + pair + "): it tunnels IPv4 in IPv6"
                    : src == dst
                    ? "the kernel tunnel joins an IPv4 and an IPv6 data center; " + pair + " needs no tunnel (use the kernel mode)"
                    : null;
            case DIRECT -> identifierNative
                    ? "the direct mode gives every host an IP address in one flat subnet; identifier-native hosts have no IP"
                    : null;
            case XDP, RELAY, AFXDP -> null;
        };
    }
}
