package io.xaforward.cluster.world;

import io.xaforward.cluster.RankWiring;
import io.xaforward.collective.CollectiveGroup;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.XafHeader;
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
import java.util.List;

/**
 * One rank's view of a {@link World} on a real host: the address book (peers in its data center directly, all
 * others through its data center's gateway), the collective group, a datagram port of its network's form bound to
 * its own address, and transport settings sized for the smallest MTU of the job. Nothing here reads testbed state.
 */
public final class WorldNetwork implements RankWiring {
    private final World world;
    private final int rank;
    private final RankAddress self;
    private final String iface;

    /** @param iface the interface this rank sends on (the identifier-native form needs it) */
    public WorldNetwork(World world, int rank, String iface) {
        this.world = world;
        this.rank = rank;
        this.self = world.rank(rank);
        this.iface = iface;
        self.iface().ifPresent(listed -> {
            if (!listed.equals(iface)) {
                throw new IllegalArgumentException("rank " + rank + " is listed on interface " + listed + ", not " + iface);
            }
        });
    }

    public World world() { return world; }
    public RankAddress self() { return self; }
    @Override public int rank() { return rank; }
    @Override public int worldSize() { return world.worldSize(); }
    @Override public int jobId() { return world.jobId(); }

    @Override
    public CollectiveGroup group() {
        List<String> dcs = world.datacenters();
        int[] dcOfRank = new int[world.worldSize()];
        for (int r = 0; r < dcOfRank.length; r++) dcOfRank[r] = dcs.indexOf(world.rank(r).datacenter());
        return new CollectiveGroup(rank, world.worldSize(), dcOfRank);
    }

    /**
     * Chunks that fit the smallest MTU of the ranks' links; the WAN's MTU is not part of a world, so paths are taken
     * as standard (1500 bytes) at most.
     */
    @Override
    public int maxPayload() {
        return TransportConfig.jobChunkPayload(Math.min(world.minMtu(), 1500), 0);
    }

    @Override
    public AddressBook addressBook() {
        AddressBook.Builder book = AddressBook.builder().add(rank, world.networkId(rank), peer(self));
        NextHop gateway = world.gateways().get(self.datacenter());
        for (RankAddress p : world.ranks()) {
            if (p.rank() == rank) continue;
            Peer to;
            if (p.datacenter().equals(self.datacenter())) {
                to = peer(p);
            } else if (gateway == null) {
                throw new IllegalStateException("data center " + self.datacenter() + " has no gateway next hop");
            } else {
                to = self.form() == NetworkForm.ID ? EthernetPeer.of(gateway.mac().orElseThrow())
                        : new InetPeer(new InetSocketAddress(gateway.ip().orElseThrow(), XafHeader.UDP_PORT));
            }
            book.add(p.rank(), world.networkId(p.rank()), to);
        }
        return book.build();
    }

    /** Opens this rank's datagram port (AF_PACKET on the interface for the ID form, UDP on its address otherwise). */
    public DatagramPort openPort() throws IOException {
        return openPort(1);
    }

    /**
     * {@link #openPort()} sending from {@code flows} UDP ports (the IP forms; the ID form has no ports and sends one
     * flow); a receiver accepts a peer's datagrams from that many ports.
     */
    public DatagramPort openPort(int flows) throws IOException {
        return self.form() == NetworkForm.ID
                ? new PacketDatagramPort(iface, self.mac().orElseThrow(), self.identity(), self.mtu())
                : new UdpDatagramPort(new InetSocketAddress(self.ip().orElseThrow(), XafHeader.UDP_PORT), flows);
    }

    private static Peer peer(RankAddress a) {
        return a.form() == NetworkForm.ID ? EthernetPeer.of(a.mac().orElseThrow())
                : new InetPeer(new InetSocketAddress(a.ip().orElseThrow(), XafHeader.UDP_PORT));
    }
}
