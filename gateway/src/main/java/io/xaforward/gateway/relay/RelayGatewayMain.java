package io.xaforward.gateway.relay;

import io.xaforward.gateway.EngineMetrics;
import io.xaforward.gateway.EngineProcess;
import io.xaforward.gateway.ForwardingDecision;
import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.PortTraffic;
import io.xaforward.gateway.RouteMap;
import io.xaforward.dataplane.sys.PacketSocket;
import io.xaforward.protocol.EthernetHeader;
import io.xaforward.protocol.FrameParser;
import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.ParsedFrame;
import io.xaforward.protocol.XafHeader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.DatagramChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The "traditional routing device" baseline: a user-space gateway that takes every XAF packet out of the kernel
 * through a socket (UDP 9450 on IP ports, AF_PACKET with EtherType 0x0812 on identifier ports), parses and checks
 * it (magic, lengths, route by network index identifier, job token, ingress port, hop limit, the egress port's MTU),
 * copies it into a new
 * buffer with freshly built outer headers for the egress form, and hands it back to the kernel. It reads the same
 * gateway config file as the XDP gateway and translates between all forms the same way, with one difference: it sends
 * IP frames from its port's own UDP socket, bound to port 9450, so a route's {@code src-port} and {@code src-port-span}
 * do not apply and every flow through it leaves on one UDP source port (the flows are merged, not refused; receivers
 * still accept them, 9450 being the first port of the default span). It says so once per such route at start.
 *
 * <p>Run inside the gateway namespace: {@code RelayGatewayMain --config FILE}, started and stopped as every Java engine
 * is ({@link EngineProcess}): serves its counters on the config's metrics endpoint ({@link EngineMetrics}), prints
 * {@value #READY_LINE} once every socket is bound and forwards until its standard input ends. One thread per port; buffers and flyweights are per thread and
 * allocated once.
 */
public final class RelayGatewayMain implements EngineProcess.Engine {
    private static final Logger LOG = LoggerFactory.getLogger(RelayGatewayMain.class);
    /** The line the process prints once every socket is bound ({@link EngineProcess}). */
    public static final String READY_LINE = "xaf relay: ready";

    /** Counter indexes; the names are their outcome labels on the metrics endpoint. */
    static final int FORWARDED = 0, DROP_MALFORMED = 1, DROP_NO_ROUTE = 2, DROP_HOP_LIMIT = 3, DROP_BAD_TOKEN = 4,
            DROP_INGRESS = 5, DROP_TOO_BIG = 6, DROP_SEND = 7, NON_XAF = 8, DROP_HAIRPIN = 9;
    static final String[] COUNTER_NAMES = {"forwarded", "drop_malformed", "drop_no_route", "drop_hop_limit",
            "drop_bad_token", "drop_ingress", "drop_too_big", "drop_send", "non_xaf", "drop_hairpin"};

    /** Receive and send buffers: a whole UDP datagram or Ethernet frame of any MTU up to 64 kB, jumbo frames included. */
    private static final int BUFFER = 65536;

    /** One gateway port: its socket and its addresses. */
    static final class Port {
        final GatewayConfig.PortConfig config;
        final byte[] mac;
        /** The interface's MTU, read at start: the egress limit of frames routed out of this port. */
        final int mtu;
        final InetAddress ip;
        final DatagramChannel udp;
        final PacketSocket packet;
        /** XAF frames received on the port and frames sent out of it, packets and frame bytes (see {@link PortTraffic}). */
        final PortTraffic traffic = new PortTraffic();

        Port(GatewayConfig.PortConfig config) throws IOException {
            this.config = config;
            // /sys/class/net is this namespace's view under `ip netns exec`; Java's NetworkInterface skips address-less links
            Path sys = Path.of("/sys/class/net", config.iface(), "address");
            if (!Files.exists(sys)) throw new IllegalArgumentException("interface " + config.iface() + " does not exist in this namespace");
            mac = HexFormat.ofDelimiter(":").parseHex(Files.readString(sys).strip());
            mtu = Integer.parseInt(Files.readString(sys.resolveSibling("mtu")).strip());
            if (config.form() == NetworkForm.ID) {
                ip = null;
                udp = null;
                packet = new PacketSocket(config.iface(), EthernetHeader.ETHER_TYPE_XAF_ID);
            } else {
                NetworkInterface nif = NetworkInterface.getByName(config.iface());
                if (nif == null) throw new IllegalArgumentException("interface " + config.iface() + " has no IP address");
                ip = address(nif, config.form());
                udp = DatagramChannel.open(config.form() == NetworkForm.IPV4 ? StandardProtocolFamily.INET : StandardProtocolFamily.INET6);
                udp.setOption(StandardSocketOptions.SO_RCVBUF, 8 << 20);
                udp.setOption(StandardSocketOptions.SO_SNDBUF, 8 << 20);
                udp.bind(new InetSocketAddress(ip, XafHeader.UDP_PORT));
                packet = null;
            }
        }

        private static InetAddress address(NetworkInterface nif, NetworkForm form) throws SocketException {
            for (InetAddress a : Collections.list(nif.getInetAddresses())) {
                if (form == NetworkForm.IPV4 && a instanceof Inet4Address) return a;
                if (form == NetworkForm.IPV6 && a instanceof Inet6Address && !a.isLinkLocalAddress()) return a;
            }
            throw new IllegalArgumentException("interface " + nif.getName() + " has no " + form + " address");
        }

        void close() {
            try {
                if (udp != null) udp.close();
            } catch (IOException ignored) {
                // closing
            }
            if (packet != null) packet.close();
        }
    }

    /** One route, resolved to a port and preallocated outer addressing. */
    record RelayRoute(int networkId, Port egress, long ingressMask, int jobId, int jobToken,
                      InetSocketAddress udpDestination, OuterAddressing idAddressing) implements ForwardingDecision.RouteChecks {
        /** The relay sends in the egress port's own form (a UDP socket or an AF_PACKET socket of that port). */
        @Override public NetworkForm egressForm() { return egress.config.form(); }
        @Override public int egressMtu() { return egress.mtu; }
        @Override public int egressSlot() { return egress.config.slot(); }
    }

    private final List<Port> ports = new ArrayList<>();
    private final List<Thread> workers = new ArrayList<>();
    private final RouteMap<RelayRoute> routes = new RouteMap<>();
    private final AtomicLongArray counters = new AtomicLongArray(COUNTER_NAMES.length);
    private volatile boolean running = true;
    /** The configuration's cap on arriving hop limits (PROTOCOL.md §6). */
    private final int maxHopLimit;

    RelayGatewayMain(GatewayConfig config) throws IOException {
        maxHopLimit = config.maxHopLimit();
        try {
            for (GatewayConfig.PortConfig p : config.ports()) ports.add(new Port(p));
            for (GatewayConfig.RouteConfig r : config.routes()) {
                if (r.action() != GatewayConfig.Action.FORWARD) continue;
                Port egress = port(r.egress().orElseThrow());
                long mask = 0;
                for (String in : r.ingress()) mask |= 1L << port(in).config.slot();
                InetSocketAddress dst = null;
                OuterAddressing id = null;
                if (egress.config.form() == NetworkForm.ID) {
                    id = new OuterAddressing().srcMac(r.srcMac().orElse(egress.mac)).dstMac(r.dstMac().orElseThrow())
                            .srcId(r.srcId()).dstId(r.networkId());
                } else {
                    dst = new InetSocketAddress(InetAddress.getByAddress(r.dstIp().orElseThrow()), r.dstPort());
                    if (r.srcPortSpan() > 1 || r.srcPort() != XafHeader.UDP_PORT) {
                        LOG.info("relay: route 0x{}: src-port {} src-port-span {} do not apply: the relay sends every flow from"
                                + " its socket's UDP port {} (the flows are merged)", String.format("%08x", r.networkId()),
                                r.srcPort(), r.srcPortSpan(), XafHeader.UDP_PORT);
                    }
                }
                routes.put(r.networkId(), new RelayRoute(r.networkId(), egress, mask, r.jobId(), r.jobToken(), dst, id));
            }
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
    }

    private Port port(String iface) {
        for (Port p : ports) if (p.config.iface().equals(iface)) return p;
        throw new IllegalArgumentException("route names interface " + iface + ", which is not a port");
    }

    public static void main(String[] args) throws Exception {
        EngineProcess.run("relay", RelayGatewayMain.class, args, config -> {
            try {
                return new RelayGatewayMain(config);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    /** Starts one thread per port. */
    @Override
    public void start() {
        for (Port p : ports) {
            Runnable loop = p.udp != null ? () -> udpLoop(p) : () -> packetLoop(p);
            workers.add(Thread.ofPlatform().daemon(true).name("relay-" + p.config.iface()).start(loop));
        }
    }

    /** The counters in the shape every engine serves them ({@link EngineMetrics}). */
    @Override
    public String metricsText() {
        return EngineMetrics.javaEngine("relay", COUNTER_NAMES, counters::get, ports.stream().map(p -> p.config).toList(),
                ports.stream().map(p -> p.traffic).toList());
    }

    /** Per-thread working set: allocated once per worker. */
    private static final class Work {
        final ByteBuffer in = ByteBuffer.allocateDirect(BUFFER);
        final MemorySegment inSeg = MemorySegment.ofBuffer(in);
        final ByteBuffer out = ByteBuffer.allocateDirect(BUFFER);
        final MemorySegment outSeg = MemorySegment.ofBuffer(out);
        final XafHeader xaf = new XafHeader();
        final FrameParser parser = new FrameParser();
        final FrameWriter writer = new FrameWriter();
        final long[] local = new long[COUNTER_NAMES.length];
    }

    private void udpLoop(Port p) {
        Work w = new Work();
        try {
            while (running) {
                w.in.clear();
                if (p.udp.receive(w.in) == null) continue;
                int n = w.in.position();
                p.traffic.received(p.config.form().outerHeaderLength() + n); // as the frame was on the wire
                if (FrameParser.validateXaf(w.inSeg, 0, n) != null) {
                    counters.incrementAndGet(DROP_MALFORMED);
                    continue;
                }
                forward(w, p, 0, n);
            }
        } catch (ClosedChannelException e) {
            // shutting down
        } catch (IOException e) {
            if (running) LOG.warn("relay: {}: {}", p.config.iface(), e.toString());
        }
    }

    private void packetLoop(Port p) {
        Work w = new Work();
        while (running) {
            int n;
            try {
                n = p.packet.receive(w.inSeg, 100);
            } catch (RuntimeException e) {
                if (running) LOG.warn("relay: {}: {}", p.config.iface(), e.getMessage());
                return;
            }
            if (n < 0) continue;
            // AF_PACKET also shows this socket's own outgoing frames: those carry our MAC as source.
            if (MemorySegment.mismatch(w.inSeg, 6, 12, MemorySegment.ofArray(p.mac), 0, 6) == -1) continue;
            ParsedFrame f = w.parser.parse(w.inSeg, n);
            if (f.kind() != ParsedFrame.Kind.NOT_XAF) p.traffic.received(n);
            if (!f.isXaf()) {
                counters.incrementAndGet(f.kind() == ParsedFrame.Kind.MALFORMED ? DROP_MALFORMED : NON_XAF);
                continue;
            }
            forward(w, p, f.xafOffset(), XafHeader.LENGTH + f.payloadLength());
        }
    }

    /** Routes, checks and re-sends the XAF packet at {@code offset} of the worker's input buffer. */
    private void forward(Work w, Port ingress, long offset, int xafBytes) {
        w.xaf.wrap(w.inSeg, offset);
        RelayRoute r = routes.get(w.xaf.networkId());
        switch (ForwardingDecision.decide(w.xaf, r, ingress.config.slot())) {
            case FORWARD -> { }
            case DROP_NO_ROUTE -> { counters.incrementAndGet(DROP_NO_ROUTE); return; }
            case DROP_INGRESS -> { counters.incrementAndGet(DROP_INGRESS); return; }
            case DROP_HAIRPIN -> { counters.incrementAndGet(DROP_HAIRPIN); return; }
            case DROP_BAD_TOKEN -> { counters.incrementAndGet(DROP_BAD_TOKEN); return; }
            case DROP_HOP_LIMIT -> { counters.incrementAndGet(DROP_HOP_LIMIT); return; }
            case DROP_TOO_BIG -> { counters.incrementAndGet(DROP_TOO_BIG); r.egress().traffic.tooBig(); return; }
        }
        int hop = ForwardingDecision.forwardedHopLimit(w.xaf.hopLimit(), maxHopLimit);
        Port egress = r.egress();
        try {
            if (egress.udp != null) {
                MemorySegment.copy(w.inSeg, offset, w.outSeg, 0, xafBytes);
                w.xaf.wrap(w.outSeg, 0).hopLimit(hop);
                w.out.clear().limit(xafBytes);
                egress.udp.send(w.out, r.udpDestination());
                egress.traffic.sent(egress.config.form().outerHeaderLength() + xafBytes);
            } else {
                int at = NetworkForm.ID.outerHeaderLength();
                MemorySegment.copy(w.inSeg, offset, w.outSeg, at, xafBytes);
                w.xaf.wrap(w.outSeg, at).hopLimit(hop);
                int len = w.writer.encapsulate(w.outSeg, NetworkForm.ID, r.idAddressing());
                egress.packet.send(w.outSeg, len);
                egress.traffic.sent(len);
            }
            counters.incrementAndGet(FORWARDED);
        } catch (IOException | RuntimeException e) {
            counters.incrementAndGet(DROP_SEND);
        }
    }

    /** Stops the port threads and closes the sockets (once: the process calls it once). */
    @Override
    public void close() {
        running = false;
        for (Port p : ports) p.close();
        for (Thread t : workers) {
            try {
                t.join(500);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
