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
import io.xaforward.transport.EthernetPeer;
import io.xaforward.transport.InetPeer;
import io.xaforward.transport.PacketDatagramPort;
import io.xaforward.transport.Peer;
import io.xaforward.transport.TransportConfig;
import io.xaforward.transport.UdpDatagramPort;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;

/**
 * What a worker JVM derives from the topology to talk to its peers, the same way in every kind of job: the
 * identifier plan (recomputed, it is deterministic), its own host, the address book (peers in its data center
 * directly, others through the next gateway; the kernel mode sends to the destination's IP instead), a datagram
 * port of its network's form (UDP for IPv4/IPv6, AF_PACKET for the identifier-native form) and a transport
 * configuration sized for the smallest MTU of the topology.
 */
public final class RankNetwork {
    private final IdentifierPlan plan;
    private final int rank;
    private final Node self;
    private final int minMtu;
    private final ModeAddressing addressing;

    private RankNetwork(IdentifierPlan plan, int rank, int minMtu, ModeAddressing addressing) {
        this.plan = plan;
        this.rank = rank;
        this.self = plan.host(rank);
        this.minMtu = minMtu;
        this.addressing = addressing;
    }

    /** @param gatewayMode decides the addressing, see {@link ModeAddressing} */
    public static RankNetwork of(Path topologyFile, String prefix, int jobId, int planToken, int rank, String gatewayMode) {
        Topology topology = Topology.load(topologyFile).withPrefix(prefix);
        Layout layout = Layout.of(topology);
        IdentifierPlan plan = IdentifierPlan.build(new TestbedState(topology, layout.hosts(), layout.gatewayPorts()),
                jobId, planToken);
        int minMtu = topology.datacenters().stream().mapToInt(d -> d.mtu()).min().orElseThrow();
        return new RankNetwork(plan, rank, minMtu, new ModeAddressing(GatewayMode.fromName(gatewayMode), topology));
    }

    public IdentifierPlan plan() { return plan; }
    public Node self() { return self; }
    public int rank() { return rank; }
    public int worldSize() { return plan.worldSize(); }

    /** The collective group: data center of every rank from the plan. */
    public CollectiveGroup group() {
        int world = plan.worldSize();
        int[] dcOfRank = new int[world];
        for (int r = 0; r < world; r++) dcOfRank[r] = plan.datacenterOf(r);
        return new CollectiveGroup(rank, world, dcOfRank);
    }

    /**
     * Transport settings every job uses: chunks that fit the smallest MTU (at most 1400 bytes, whole floats), a
     * 512-chunk window, messages up to 1 GiB, and the given acknowledgement timeout. {@code token} is normally the
     * plan's; a different one makes this rank an impostor that gateways and peers drop.
     */
    public TransportConfig.Builder transportConfig(int token, Duration ackTimeout) {
        // A tunnel's headers come out of the MTU the worker's packets may use.
        int maxPayload = TransportConfig.maxPayloadForMtu(minMtu - addressing.pathOverhead(),
                NetworkForm.IPV6.outerHeaderLength() - 14) & ~3;
        return TransportConfig.builder(rank, plan.jobId(), token)
                .maxPayload(Math.min(maxPayload, 1400))
                .windowChunks(512)
                .maxMessageBytes(1L << 30)
                .ackTimeout(ackTimeout);
    }

    public AddressBook addressBook() {
        AddressBook.Builder book = AddressBook.builder().add(rank, plan.networkId(rank), selfPeer());
        for (IdentifierPlan.Peer p : plan.addressBook(rank)) {
            // The kernel forwards on IP addresses: send to the destination itself. Gateways forward on identifiers:
            // send to the next hop of our own network. ModeAddressing knows every mode's rule.
            var ip = addressing.destination(p);
            book.add(p.rank(), p.networkId(), self.form() == NetworkForm.ID ? EthernetPeer.of(p.nextHopMac())
                    : new InetPeer(new InetSocketAddress(ip, XafHeader.UDP_PORT)));
        }
        return book.build();
    }

    /** Opens this rank's datagram port (AF_PACKET for the ID form, UDP otherwise). */
    public DatagramPort openPort() throws IOException {
        return self.form() == NetworkForm.ID
                ? new PacketDatagramPort(self.iface(), self.mac(), self.identity(), self.mtu())
                : new UdpDatagramPort(new InetSocketAddress(addressing.bindAddress(self), XafHeader.UDP_PORT));
    }

    private Peer selfPeer() {
        return self.form() == NetworkForm.ID ? EthernetPeer.of(self.mac())
                : new InetPeer(new InetSocketAddress(addressing.bindAddress(self).isAnyLocalAddress() ? self.ip()
                : addressing.bindAddress(self), XafHeader.UDP_PORT));
    }
}
