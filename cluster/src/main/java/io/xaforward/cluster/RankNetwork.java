package io.xaforward.cluster;

import io.xaforward.collective.CollectiveGroup;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.XafHeader;
import io.xaforward.testbed.Layout;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.plan.IdentifierPlan;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.testbed.mode.ModeAddressing;
import io.xaforward.transport.AddressBook;
import io.xaforward.transport.DatagramPort;
import io.xaforward.dataplane.xsk.XskConfig;
import io.xaforward.transport.EthernetIpPeer;
import io.xaforward.transport.EthernetPeer;
import io.xaforward.transport.InetPeer;
import io.xaforward.transport.PacketDatagramPort;
import io.xaforward.transport.Peer;
import io.xaforward.transport.TransportConfig;
import io.xaforward.transport.UdpDatagramPort;
import io.xaforward.transport.XskDatagramPort;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetSocketAddress;
import java.nio.file.Path;

/**
 * What a worker JVM derives from the topology to talk to its peers, the same way in every kind of job: the
 * identifier plan (recomputed, it is deterministic), its own host, the address book (peers in its data center
 * directly, others through the next gateway; the kernel mode sends to the destination's IP instead), a datagram
 * port of its network's form (an AF_XDP socket, or UDP for IPv4/IPv6 and AF_PACKET for the identifier-native
 * form; see {@link Endpoint}) and a transport configuration sized for the smallest MTU of the topology.
 */
public final class RankNetwork implements RankWiring {
    private final IdentifierPlan plan;
    private final int rank;
    private final Node self;
    private final int minMtu;
    private final ModeAddressing addressing;
    private final Endpoint endpoint;
    private final int flows;

    private RankNetwork(IdentifierPlan plan, int rank, int minMtu, ModeAddressing addressing, Endpoint endpoint,
                        int flows) {
        this.plan = plan;
        this.rank = rank;
        this.self = plan.host(rank);
        this.minMtu = minMtu;
        this.addressing = addressing;
        this.endpoint = endpoint;
        this.flows = flows;
    }

    /**
     * @param gatewayMode decides the addressing, see {@link ModeAddressing}
     * @param endpoint    null: the gateway mode's default ({@link Endpoint#resolve})
     */
    public static RankNetwork of(Path topologyFile, String prefix, int jobId, int planToken, int rank, GatewayMode gatewayMode,
                                 Endpoint endpoint) {
        return of(topologyFile, prefix, jobId, planToken, rank, gatewayMode, endpoint, 1);
    }

    /**
     * {@link #of(Path, String, int, int, int, GatewayMode, Endpoint)} with {@code flows} UDP flows per worker (the
     * same for every rank of the job: a receiver accepts a peer's datagrams from that many ports).
     */
    public static RankNetwork of(Path topologyFile, String prefix, int jobId, int planToken, int rank, GatewayMode gatewayMode,
                                 Endpoint endpoint, int flows) {
        Endpoint ep = Endpoint.resolve(endpoint, gatewayMode);
        Endpoint.checkFlows(ep, flows);
        Topology topology = Topology.load(topologyFile).withPrefix(prefix);
        Layout layout = Layout.of(topology);
        IdentifierPlan plan = IdentifierPlan.build(new TestbedState(topology, layout.hosts(), layout.gatewayPorts()),
                jobId, planToken);
        int minMtu = topology.smallestMtu(); // the WAN's too: a gateway drops what does not fit its egress port
        return new RankNetwork(plan, rank, minMtu, new ModeAddressing(gatewayMode, topology), ep, flows);
    }

    public IdentifierPlan plan() { return plan; }
    public Node self() { return self; }
    @Override public int rank() { return rank; }
    @Override public int worldSize() { return plan.worldSize(); }
    @Override public int jobId() { return plan.jobId(); }
    public Endpoint endpoint() { return endpoint; }

    /** The collective group: data center of every rank from the plan. */
    @Override
    public CollectiveGroup group() {
        int world = plan.worldSize();
        int[] dcOfRank = new int[world];
        for (int r = 0; r < world; r++) dcOfRank[r] = plan.datacenterOf(r);
        return new CollectiveGroup(rank, world, dcOfRank);
    }

    /**
     * Chunk payload for the job: what the smallest MTU of the topology (the WAN's included) leaves after the largest
     * outer headers, the XAF header and a tunnel's headers ({@link TransportConfig#jobChunkPayload}).
     */
    @Override
    public int maxPayload() {
        return TransportConfig.jobChunkPayload(minMtu, addressing.pathOverhead());
    }

    @Override
    public AddressBook addressBook() {
        AddressBook.Builder book = AddressBook.builder().add(rank, plan.networkId(rank), selfPeer());
        for (IdentifierPlan.Peer p : plan.addressBook(rank)) {
            // The kernel forwards on IP addresses: send to the destination itself. Gateways forward on identifiers:
            // send to the next hop of our own network. ModeAddressing knows every mode's rule.
            var ip = addressing.destination(p);
            if (endpoint == Endpoint.AFXDP && self.form() != NetworkForm.ID && ip != null
                    && (ip instanceof Inet6Address) != (self.form() == NetworkForm.IPV6)) {
                // An AF_XDP socket writes one IP family; where the mode delivers to the peer's own address in the
                // other family (direct on a mixed-form topology), only the kernel's dual-stack sockets get there.
                throw new IllegalArgumentException("the afxdp endpoint of rank " + rank + " (" + self.form()
                        + ") cannot reach rank " + p.rank() + " at " + ip.getHostAddress() + " (the other IP family) in"
                        + " this gateway mode; use --endpoint udp");
            }
            book.add(p.rank(), p.networkId(), self.form() == NetworkForm.ID ? EthernetPeer.of(p.nextHopMac())
                    : endpoint == Endpoint.AFXDP ? new EthernetIpPeer(EthernetPeer.of(p.nextHopMac()).mac(), ip)
                    : new InetPeer(new InetSocketAddress(ip, XafHeader.UDP_PORT)));
        }
        return book.build();
    }

    /**
     * Opens this rank's datagram port: an AF_XDP socket on the host's interface that receives the frames of this
     * rank's network index identifier and job ({@code token}: the token its peers send with), or else AF_PACKET
     * for the ID form and UDP for the IP forms.
     *
     * @throws IllegalStateException naming the interface when AF_XDP cannot be used there (no native XDP, no
     *                               privileges, no AF_XDP in the kernel)
     */
    public DatagramPort openPort(int token) throws IOException {
        if (endpoint == Endpoint.AFXDP) {
            try {
                return new XskDatagramPort(self.iface(), 0, self.form(), self.mac(), self.ip(), self.identity(),
                        self.mtu(), plan.jobId(), token, XskConfig.defaults(), false, plan.networkId(rank));
            } catch (RuntimeException e) {
                throw new IllegalStateException("cannot open an AF_XDP endpoint on " + self.iface() + " of host "
                        + self.name() + " (needs root, native XDP on the interface and AF_XDP in the kernel; "
                        + "--endpoint udp uses kernel sockets instead): " + e.getMessage(), e);
            }
        }
        return self.form() == NetworkForm.ID
                ? new PacketDatagramPort(self.iface(), self.mac(), self.identity(), self.mtu())
                : new UdpDatagramPort(new InetSocketAddress(addressing.bindAddress(self), XafHeader.UDP_PORT), flows);
    }

    /** {@link #openPort(int)} with the plan's token. */
    public DatagramPort openPort() throws IOException {
        return openPort(plan.jobToken());
    }

    private Peer selfPeer() {
        if (self.form() == NetworkForm.ID) return EthernetPeer.of(self.mac());
        if (endpoint == Endpoint.AFXDP) return new EthernetIpPeer(EthernetPeer.of(self.mac()).mac(), self.ip());
        return new InetPeer(new InetSocketAddress(addressing.bindAddress(self).isAnyLocalAddress() ? self.ip()
                : addressing.bindAddress(self), XafHeader.UDP_PORT));
    }
}
