package io.xaforward.cli;

import io.xaforward.dataplane.sys.NetworkNamespace;
import io.xaforward.dataplane.sys.PacketSocket;
import io.xaforward.protocol.ElementType;
import io.xaforward.protocol.FrameParser;
import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.MessageType;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.ParsedFrame;
import io.xaforward.protocol.PayloadIntegrity;
import io.xaforward.protocol.XafHeader;
import io.xaforward.protocol.XafIdHeader;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * One rank's XAF endpoint in the end-to-end tests: a UDP socket on port 9450 (IP forms) or a raw packet socket
 * (identifier-native form), opened inside the host's namespace. Sends numbered XAF packets with payloads derived
 * from (source, destination, sequence) and checks every received byte against the same derivation.
 */
final class XafTestHost implements AutoCloseable {
    static final int MAX_PAYLOAD = 1400;

    final int rank;
    final Node node;
    private final IdentifierPlan plan;
    private final DatagramChannel udp;
    private final PacketSocket raw;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment buf = arena.allocate(2048, 64);
    private final ByteBuffer bb = buf.asByteBuffer();
    private final XafHeader h = new XafHeader();
    private final PayloadIntegrity integrity = new PayloadIntegrity();
    private final FrameParser parser = new FrameParser();
    private final OuterAddressing addressing = new OuterAddressing();
    private final FrameWriter writer = new FrameWriter();
    /** received.get(src) has bit seq set once that packet arrived. */
    final List<BitSet> received = new ArrayList<>();
    final List<String> errors = new ArrayList<>();

    private XafTestHost(IdentifierPlan plan, int rank) throws IOException {
        this.plan = plan;
        this.rank = rank;
        this.node = plan.host(rank);
        for (int i = 0; i < plan.worldSize(); i++) received.add(new BitSet());
        if (node.form() == NetworkForm.ID) {
            udp = null;
            raw = new PacketSocket(node.iface(), 0x0812);
        } else {
            raw = null;
            udp = DatagramChannel.open(node.form() == NetworkForm.IPV6 ? StandardProtocolFamily.INET6 : StandardProtocolFamily.INET);
            udp.setOption(StandardSocketOptions.SO_RCVBUF, 4 << 20);
            udp.bind(new InetSocketAddress(node.ip(), XafHeader.UDP_PORT));
            udp.configureBlocking(false);
        }
    }

    static XafTestHost open(IdentifierPlan plan, int rank) {
        return NetworkNamespace.call(plan.host(rank).namespace(), () -> new XafTestHost(plan, rank));
    }

    static int payloadLength(int seq) {
        return 1 + (seq * 97) % MAX_PAYLOAD;
    }

    static byte payloadByte(int src, int dst, int seq, int i) {
        return (byte) (src * 31 + dst * 17 + seq * 7 + i * 13);
    }

    /** Sends packet {@code seq} to rank {@code dst} through the next hop the plan gives. */
    void send(int dst, int seq) throws IOException {
        IdentifierPlan.Peer peer = plan.addressBook(rank).stream().filter(p -> p.rank() == dst).findFirst().orElseThrow();
        long xafOff = node.form() == NetworkForm.ID ? NetworkForm.ID.outerHeaderLength() : 0;
        int len = payloadLength(seq);
        h.wrap(buf, xafOff).init()
                .type(MessageType.DATA.code()).elemType(ElementType.BYTES.code())
                .networkId(peer.networkId()).jobId(plan.jobId()).jobToken(plan.jobToken())
                .srcRank(rank).dstRank(dst).step(seq).bucketId(0).chunkIndex(seq).chunkCount(1 << 20)
                .payloadLength(len);
        for (int i = 0; i < len; i++) buf.set(ValueLayout.JAVA_BYTE, h.payloadOffset() + i, payloadByte(rank, dst, seq, i));
        integrity.seal(h);
        if (raw != null) {
            addressing.srcMac(node.macBytes()).dstMac(Node.macBytesOf(peer.nextHopMac()))
                    .srcId(node.identity()).dstId(peer.networkId());
            int frameLen = writer.encapsulate(buf, NetworkForm.ID, addressing);
            raw.send(buf, frameLen);
        } else {
            bb.clear().limit(XafHeader.LENGTH + len);
            int n = udp.send(bb, new InetSocketAddress(peer.nextHopIp(), XafHeader.UDP_PORT));
            if (n == 0) throw new IOException("UDP send buffer full");
        }
    }

    /** Receives until {@code expected} packets arrived in total or {@code timeoutMs} passed; returns the count. */
    int receive(int expected, long timeoutMs) throws IOException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        int total = total();
        while (total < expected && System.currentTimeMillis() < deadline) {
            if (receiveOne()) total = total();
            else Thread.onSpinWait();
        }
        return total;
    }

    /** Receives whatever has arrived (without waiting for more); returns the total count. */
    int drain() throws IOException {
        while (receiveOne()) {
            // keep reading
        }
        return total();
    }

    int total() {
        return received.stream().mapToInt(BitSet::cardinality).sum();
    }

    private boolean receiveOne() throws IOException {
        long xafOff;
        int xafBytes;
        if (raw != null) {
            int n = raw.receive(buf, 5);
            if (n < 0) return false;
            ParsedFrame p = parser.parse(buf, n);
            if (!p.isXaf()) return false; // other traffic on the wire
            if (p.form() != NetworkForm.ID) {
                errors.add("rank " + rank + ": got form " + p.form());
                return false;
            }
            XafIdHeader id = new XafIdHeader().wrap(buf, 14);
            if (id.dstId() != plan.networkId(rank)) errors.add("rank " + rank + ": ID header dst_id 0x" + Integer.toHexString(id.dstId()));
            xafOff = p.xafOffset();
            xafBytes = (int) (n - xafOff);
        } else {
            bb.clear();
            if (udp.receive(bb) == null) return false;
            xafOff = 0;
            xafBytes = bb.position();
        }
        if (FrameParser.validateXaf(buf, xafOff, xafBytes) != null) {
            errors.add("rank " + rank + ": malformed XAF " + FrameParser.validateXaf(buf, xafOff, xafBytes));
            return false;
        }
        h.wrap(buf, xafOff);
        int src = h.srcRank();
        int seq = h.step();
        String where = "rank " + rank + " from " + src + " seq " + seq + ": ";
        if (!integrity.verify(h)) errors.add(where + "payload sum/CRC32C mismatch");
        if (h.dstRank() != rank) errors.add(where + "dst rank " + h.dstRank());
        if (h.networkId() != plan.networkId(rank)) errors.add(where + "network id");
        boolean crossedGateway = !plan.host(src).datacenter().equals(node.datacenter());
        int expectedHop = XafHeader.DEFAULT_HOP_LIMIT - (crossedGateway ? 1 : 0);
        if (h.hopLimit() != expectedHop) errors.add(where + "hop limit " + h.hopLimit() + " != " + expectedHop);
        int len = h.payloadLength();
        if (len != payloadLength(seq)) errors.add(where + "payload length " + len);
        for (int i = 0; i < len; i++) {
            if (buf.get(ValueLayout.JAVA_BYTE, h.payloadOffset() + i) != payloadByte(src, rank, seq, i)) {
                errors.add(where + "payload byte " + i + " differs");
                break;
            }
        }
        if (received.get(src).get(seq)) errors.add(where + "duplicate");
        received.get(src).set(seq);
        return true;
    }

    @Override
    public void close() throws IOException {
        if (udp != null) udp.close();
        if (raw != null) raw.close();
        arena.close();
    }
}
