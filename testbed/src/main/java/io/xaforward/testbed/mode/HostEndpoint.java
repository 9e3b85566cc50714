package io.xaforward.testbed.mode;

import io.xaforward.dataplane.sys.NetworkNamespace;
import io.xaforward.dataplane.sys.PacketSocket;
import io.xaforward.protocol.EthernetHeader;
import io.xaforward.protocol.FrameParser;
import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.ParsedFrame;
import io.xaforward.protocol.XafHeader;
import io.xaforward.protocol.XafIdHeader;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;

/**
 * A host's XAF socket in a testbed, whatever its form: a UDP socket on port 9450 for IP hosts, an AF_PACKET socket
 * for EtherType 0x0812 on identifier hosts. Created inside the host's namespace; used from any thread afterwards
 * (one sender and one receiver thread at most). Sends XAF packets to a peer the way the gateway mode wants them
 * addressed and receives XAF packets with their outer headers removed.
 */
public final class HostEndpoint implements AutoCloseable {
    private final Node host;
    private final DatagramChannel udp;
    private final Selector selector;
    private final PacketSocket packet;
    private final byte[] mac;
    // sender state
    private final ByteBuffer sendBuf = ByteBuffer.allocateDirect(65536);
    private final MemorySegment sendSeg = MemorySegment.ofBuffer(sendBuf);
    private final FrameWriter writer = new FrameWriter();
    private final OuterAddressing addressing = new OuterAddressing();
    // receiver state
    private final ByteBuffer recvBuf = ByteBuffer.allocateDirect(65536);
    private final MemorySegment recvSeg = MemorySegment.ofBuffer(recvBuf);
    private final FrameParser parser = new FrameParser();
    private final XafIdHeader idHeader = new XafIdHeader();
    private IdentifierPlan.Peer lastPeer;
    private GatewayMode lastMode;
    private InetSocketAddress lastTarget;
    private final ModeAddressing modeAddressing;

    private HostEndpoint(Node host, ModeAddressing modeAddressing) throws IOException {
        this.host = host;
        this.modeAddressing = modeAddressing;
        this.mac = host.macBytes();
        if (host.form() == NetworkForm.ID) {
            udp = null;
            selector = null;
            packet = new PacketSocket(host.iface(), EthernetHeader.ETHER_TYPE_XAF_ID);
        } else {
            packet = null;
            udp = DatagramChannel.open(host.form() == NetworkForm.IPV4 ? StandardProtocolFamily.INET : StandardProtocolFamily.INET6);
            udp.setOption(StandardSocketOptions.SO_RCVBUF, 8 << 20);
            udp.setOption(StandardSocketOptions.SO_SNDBUF, 4 << 20);
            udp.bind(new InetSocketAddress(modeAddressing == null ? host.ip() : modeAddressing.bindAddress(host), XafHeader.UDP_PORT));
            udp.configureBlocking(false);
            selector = Selector.open();
            udp.register(selector, SelectionKey.OP_READ);
        }
    }

    /** Opens the endpoint of {@code host} inside its namespace. */
    public static HostEndpoint open(Node host) {
        return open(host, null);
    }

    /**
     * Opens the endpoint of {@code host} addressed as {@code addressing} says (bind address, and every send's
     * destination whatever mode {@link #send} is given); null: the host's own address and the mode's rule.
     */
    public static HostEndpoint open(Node host, ModeAddressing addressing) {
        return NetworkNamespace.call(host.namespace(), () -> {
            try {
                return new HostEndpoint(host, addressing);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot open the XAF endpoint of " + host.name() + " in " + host.namespace(), e);
            }
        });
    }

    public Node host() {
        return host;
    }

    /** The sender's buffer: write the XAF header and payload at offset 0, then call {@link #send}. */
    public MemorySegment xafBuffer() {
        return sendSeg.asSlice(NetworkForm.IPV6.outerHeaderLength());
    }

    /**
     * Sends the {@code xafBytes} bytes at {@link #xafBuffer()} to {@code peer}: to the destination host's IP when
     * {@code mode} routes by IP, else to the gateway port (by IP, or by MAC and identifier on the ID form).
     */
    public void send(IdentifierPlan.Peer peer, int xafBytes, GatewayMode mode) throws IOException {
        int xafAt = NetworkForm.IPV6.outerHeaderLength();
        if (udp != null) {
            sendBuf.limit(xafAt + xafBytes).position(xafAt);
            if (peer != lastPeer || mode != lastMode) { // one address object per peer, not per packet
                lastTarget = new InetSocketAddress(modeAddressing != null ? modeAddressing.destination(peer)
                        : mode.sendersAddressDestination() ? peer.destination().ip() : peer.nextHopIp(), XafHeader.UDP_PORT);
                lastPeer = peer;
                lastMode = mode;
            }
            while (udp.send(sendBuf, lastTarget) == 0) Thread.onSpinWait(); // socket buffer full: wait for room
        } else {
            int at = NetworkForm.ID.outerHeaderLength();
            MemorySegment.copy(sendSeg, xafAt, sendSeg, at, xafBytes);
            if (peer != lastPeer) {
                addressing.srcMac(mac).dstMac(Node.macBytesOf(peer.nextHopMac())).srcId(host.identity()).dstId(peer.networkId());
                lastPeer = peer;
            }
            int len = writer.encapsulate(sendSeg, NetworkForm.ID, addressing);
            packet.send(sendSeg, len);
        }
    }

    /**
     * Waits up to {@code timeoutMs} for one XAF packet and returns it as a header at offset 0 of the returned
     * segment (a view of this endpoint's receive buffer, valid until the next call), or null on timeout.
     * Identifier frames must be addressed to this host's MAC and identifier-form valid, else they are skipped.
     */
    public MemorySegment receive(int timeoutMs) throws IOException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (true) {
            long left = (deadline - System.nanoTime()) / 1_000_000L;
            if (udp != null) {
                recvBuf.clear();
                if (udp.receive(recvBuf) != null) return recvSeg.asSlice(0, recvBuf.position());
                if (left <= 0) return null;
                selector.select(Math.max(1, left));
                selector.selectedKeys().clear();
            } else {
                int n = packet.receive(recvSeg, (int) Math.max(0, left));
                if (n < 0) return null;
                if (MemorySegment.mismatch(recvSeg, 0, 6, MemorySegment.ofArray(mac), 0, 6) != -1) continue; // not ours (or our own outgoing frame)
                ParsedFrame f = parser.parse(recvSeg, n);
                if (!f.isXaf()) continue;
                return recvSeg.asSlice(f.xafOffset(), XafHeader.LENGTH + f.payloadLength());
            }
        }
    }

    /** The ID header's destination identifier of the last frame received on an identifier host. */
    public int lastIdDestination() {
        return idHeader.wrap(recvSeg, EthernetHeader.LENGTH).dstId();
    }

    @Override
    public void close() {
        try {
            if (selector != null) selector.close();
            if (udp != null) udp.close();
        } catch (IOException ignored) {
            // closing
        }
        if (packet != null) packet.close();
    }
}
