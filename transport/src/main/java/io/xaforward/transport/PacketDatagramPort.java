package io.xaforward.transport;

import io.xaforward.dataplane.sys.PacketSocket;
import io.xaforward.protocol.EthernetHeader;
import io.xaforward.protocol.FrameParser;
import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.ParsedFrame;
import io.xaforward.protocol.XafHeader;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * XAF datagrams on an identifier-native network (Ethernet, EtherType 0x0812, ID header) through an AF_PACKET
 * socket. Sending copies the datagram once into a preallocated frame behind the Ethernet and ID headers; the ID
 * header's destination identity is the datagram's network index identifier. Receiving hands out the XAF part of
 * each frame in place.
 */
public final class PacketDatagramPort implements DatagramPort {
    private static final int ID_OUTER = NetworkForm.ID.outerHeaderLength();
    private static final ValueLayout.OfShort BE_SHORT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE_INT =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final PacketSocket socket;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment txFrame;
    private final MemorySegment rxFrame;
    private final OuterAddressing addressing = new OuterAddressing();
    private final FrameWriter writer = new FrameWriter();
    private final FrameParser parser = new FrameParser();
    private final XafHeader header = new XafHeader();
    private final EthernetPeer self;
    private final int mtu;

    /**
     * @param ifname   the interface on the identifier-native network (in the calling thread's namespace)
     * @param mac      its MAC address
     * @param identity this node's 32-bit identity (source identity of the ID header)
     * @param mtu      the network's MTU
     */
    public PacketDatagramPort(String ifname, String mac, int identity, int mtu) {
        this.socket = new PacketSocket(ifname, EthernetHeader.ETHER_TYPE_XAF_ID);
        this.self = EthernetPeer.of(mac);
        this.mtu = mtu;
        this.txFrame = arena.allocate(mtu + 14, 64);
        this.rxFrame = arena.allocate(Math.max(mtu + 14, 2048), 64);
        addressing.srcMac(self.mac()).srcId(identity);
    }

    @Override
    public int maxDatagramLength() {
        return mtu - (ID_OUTER - 14);
    }

    @Override
    public boolean send(MemorySegment buffer, long offset, int length, Peer destination) {
        if (!(destination instanceof EthernetPeer peer)) {
            throw new IllegalArgumentException("an identifier-native port sends to EthernetPeer, not " + destination);
        }
        if (length > maxDatagramLength()) {
            throw new IllegalArgumentException("datagram of " + length + " bytes exceeds " + maxDatagramLength());
        }
        MemorySegment.copy(buffer, offset, txFrame, ID_OUTER, length);
        header.wrap(txFrame, ID_OUTER);
        addressing.dstMac(peer.mac()).dstId(header.networkId());
        int frameLength = writer.encapsulate(txFrame, NetworkForm.ID, addressing);
        socket.send(txFrame, frameLength);
        return true;
    }

    @Override
    public int poll(DatagramHandler handler, int limit) {
        int n = 0;
        while (n < limit) {
            int len = socket.receive(rxFrame, 0);
            if (len < 0) break;
            ParsedFrame p = parser.parse(rxFrame, len);
            if (!p.isXaf() || p.form() != NetworkForm.ID) continue; // malformed or foreign frames: not ours
            handler.onDatagram(rxFrame, p.xafOffset(), (int) (XafHeader.LENGTH + p.payloadLength()));
            n++;
        }
        return n;
    }

    /** Compares the received frame's Ethernet source with the peer's MAC (the sender or the gateway it came through). */
    @Override
    public boolean receivedFrom(Peer peer) {
        return peer instanceof EthernetPeer(long mac) && sourceMac(rxFrame) == mac;
    }

    /** The 48-bit Ethernet source address of {@code frame}, first byte most significant (as {@link EthernetPeer}). */
    static long sourceMac(MemorySegment frame) {
        long high = Short.toUnsignedLong(frame.get(BE_SHORT, 6));
        long low = Integer.toUnsignedLong(frame.get(BE_INT, 8));
        return high << 32 | low;
    }

    @Override
    public Peer localPeer() {
        return self;
    }

    @Override
    public void close() {
        socket.close();
        arena.close();
    }
}
