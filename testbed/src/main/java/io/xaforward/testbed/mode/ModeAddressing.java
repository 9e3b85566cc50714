package io.xaforward.testbed.mode;

import io.xaforward.protocol.NetworkForm;
import io.xaforward.testbed.Datacenter;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * Which IP addresses a worker binds and sends to in each gateway mode, so that every component (workers, tests,
 * benchmarks) addresses peers the same way:
 * <ul>
 *   <li>xdp, relay, afxdp: bind the host's own address; send to the peer directly inside the DC, else to the port of
 *       the first gateway (which routes on the XAF identifier).</li>
 *   <li>kernel: send to the destination host's own address; the kernel routes it through the gateway.</li>
 *   <li>kernel-tunnel: IPv4 across data centers. Hosts of IPv6 DCs own a tunnel address
 *       {@code 10.78.<dc>.<host+1>} on their VXLAN device and bind the dual-stack wildcard, so they receive IPv6
 *       from their own DC and IPv4 through the tunnel on one socket.</li>
 *   <li>direct: every host's flat-network address, {@code 10.79.<dc>.<host+1>/16} when the first DC of the
 *       topology is IPv4, {@code fd79::<dc>:<host+1>/64} when it is IPv6.</li>
 * </ul>
 */
public final class ModeAddressing {
    /** IPv4 pool of the kernel tunnel's host ends: 10.78.dc.0/24 per IPv6 data center. */
    public static final String TUNNEL_POOL = "10.78.0.0/16";
    /** Bytes the kernel tunnel adds to every IPv4 packet: outer IPv6 (40), UDP (8), VXLAN (8), inner Ethernet (14). */
    public static final int TUNNEL_OVERHEAD = 70;

    private final GatewayMode mode;
    private final NetworkForm flatFamily;

    public ModeAddressing(GatewayMode mode, Topology topology) {
        this.mode = mode;
        this.flatFamily = topology.datacenters().getFirst().form() == NetworkForm.IPV6 ? NetworkForm.IPV6 : NetworkForm.IPV4;
    }

    public GatewayMode mode() {
        return mode;
    }

    /** The address {@code self}'s XAF socket binds. */
    public InetAddress bindAddress(Node self) {
        return switch (mode) {
            case DIRECT -> flatAddress(self);
            case KERNEL_TUNNEL -> self.form() == NetworkForm.IPV6 ? wildcard6() : self.ip();
            default -> self.ip();
        };
    }

    /** Where {@code self} sends a datagram for {@code peer}. */
    public InetAddress destination(IdentifierPlan.Peer peer) {
        Node dst = peer.destination();
        return switch (mode) {
            case DIRECT -> flatAddress(dst);
            case KERNEL -> dst.ip();
            case KERNEL_TUNNEL -> peer.direct() ? dst.ip() : ipv4Of(dst);
            default -> peer.nextHopIp();
        };
    }

    /** Bytes the path adds below the worker's IP packet (tunnel headers); 0 for all modes but kernel-tunnel. */
    public int pathOverhead() {
        return mode == GatewayMode.KERNEL_TUNNEL ? TUNNEL_OVERHEAD : 0;
    }

    /** The family of the direct mode's flat network. */
    public NetworkForm flatFamily() {
        return flatFamily;
    }

    /** A host's address in the direct mode's flat network. */
    public InetAddress flatAddress(Node host) {
        int dc = dcIndex(host), h = hostIndex(host) + 1;
        return flatFamily == NetworkForm.IPV4 ? parse("10.79." + dc + "." + h)
                : parse("fd79::" + Integer.toHexString(dc) + ":" + Integer.toHexString(h));
    }

    /** Prefix length of the flat network. */
    public int flatPrefixLength() {
        return flatFamily == NetworkForm.IPV4 ? 16 : 64;
    }

    /** The IPv4 address a host uses across data centers in the kernel-tunnel mode. */
    public static InetAddress ipv4Of(Node host) {
        return host.form() == NetworkForm.IPV4 ? host.ip() : tunnelAddress(host);
    }

    /** The tunnel address of a host of an IPv6 data center: 10.78.dc.(host+1). */
    public static InetAddress tunnelAddress(Node host) {
        int h = hostIndex(host) + 1;
        if (h > 254) throw new IllegalArgumentException("the kernel tunnel supports at most 254 hosts per data center");
        return parse("10.78." + dcIndex(host) + "." + h);
    }

    /** The /24 of the tunnel pool that holds a data center's tunnel addresses. */
    public static String tunnelSubnet(Datacenter dc) {
        return "10.78." + dc.index() + ".0/24";
    }

    private static int dcIndex(Node host) {
        return (host.identity() >>> 16) - 1; // Node.hostIdentity: (dc+1) << 16 | (host+1)
    }

    private static int hostIndex(Node host) {
        return (host.identity() & 0xFFFF) - 1;
    }

    private static InetAddress wildcard6() {
        return parse("::");
    }

    private static InetAddress parse(String literal) {
        try {
            return InetAddress.getByName(literal); // a literal: no name lookup
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(literal, e);
        }
    }
}
