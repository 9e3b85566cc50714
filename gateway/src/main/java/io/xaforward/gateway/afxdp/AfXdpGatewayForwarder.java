package io.xaforward.gateway.afxdp;

import com.sun.management.ThreadMXBean;
import io.xaforward.gateway.GatewayConfig;
import io.xaforward.dataplane.xsk.FrameHandler;
import io.xaforward.gateway.EngineMetrics;
import io.xaforward.gateway.EngineProcess;
import io.xaforward.gateway.ForwardingDecision;
import io.xaforward.gateway.PortTraffic;
import io.xaforward.gateway.RouteMap;
import io.xaforward.dataplane.xsk.Umem;
import io.xaforward.dataplane.xsk.XskConfig;
import io.xaforward.protocol.FrameParser;
import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.ParsedFrame;
import io.xaforward.protocol.XafHeader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * The AF_XDP gateway's data path: kernel bypass like the XDP gateway, but every forwarding decision is made here in
 * user space, like a DPDK-style software router. One thread busy-polls the RX rings of all ports, parses each frame,
 * looks its network index identifier up in a preallocated open-addressing table, checks job token, ingress port and
 * hop limit (each drop counted by reason, as the XDP program does), copies the XAF header and payload once into a
 * TX frame of the egress port's socket, writes the egress form's outer headers with {@link FrameWriter} (the UDP
 * source port picked from the route's span as the XDP program picks it, {@link ForwardingDecision#egressSourcePort}) and flushes
 * each port's TX ring once per polling round. Without frames it spins briefly, then parks for 20 us at a time,
 * and after a few idle milliseconds for 0.5 ms at a time, so an idle gateway costs almost no CPU.
 *
 * <p>Nothing is allocated per packet. The sockets and everything else are owned by the polling thread once
 * {@link #start} has run; {@link #close} stops it and releases the ports.
 */
final class AfXdpGatewayForwarder implements AutoCloseable, EngineProcess.Engine {
    private static final Logger LOG = LoggerFactory.getLogger(AfXdpGatewayForwarder.class);
    /** Counter indexes; the names are their outcome labels on the metrics endpoint. */
    static final int FORWARDED = 0, DROP_MALFORMED = 1, DROP_NO_ROUTE = 2, DROP_HOP_LIMIT = 3, DROP_BAD_TOKEN = 4,
            DROP_INGRESS = 5, DROP_TOO_BIG = 6, DROP_TX_FULL = 7, NON_XAF = 8, ERRORS = 9, DROP_HAIRPIN = 10;
    static final String[] COUNTER_NAMES = {"forwarded", "drop_malformed", "drop_no_route", "drop_hop_limit",
            "drop_bad_token", "drop_ingress", "drop_too_big", "drop_tx_full", "non_xaf", "errors", "drop_hairpin"};
    private static final int MAX_ERROR_REPORTS = 5;

    /** Frames taken from one RX ring per round. */
    static final int RX_BATCH = 64;
    /** A port's TX ring is flushed early once this many frames wait (copy mode sends 32 per kick). */
    static final int TX_FLUSH_AT = 128;
    /**
     * Idle back-off: spin this many empty rounds, then park {@value #SHORT_PARK_NS} ns at a time for
     * {@value #SHORT_PARKS} more, then {@value #LONG_PARK_NS} ns. (Sleeping in poll(2) on the sockets would wake at
     * once, but each FFM poll call was measured to allocate about 36 bytes; parking allocates nothing.)
     */
    private static final int SPIN_ROUNDS = 32, SHORT_PARKS = 200;
    private static final long SHORT_PARK_NS = 20_000, LONG_PARK_NS = 500_000;

    /**
     * One forwarding route with its egress port and preallocated outer addressing; the IP forms' frames leave from one
     * of {@code srcPortSpan} UDP source ports from {@code srcPort}, written into the addressing per frame.
     */
    record Route(int networkId, AfXdpGatewayPort egress, NetworkForm form, long ingressMask, int jobId, int jobToken,
                 OuterAddressing addressing, int srcPort, int srcPortSpan) implements ForwardingDecision.RouteChecks {
        @Override public NetworkForm egressForm() { return form; }
        @Override public int egressMtu() { return egress.mtu; }
        @Override public int egressSlot() { return egress.config.slot(); }
    }

    private final List<AfXdpGatewayPort> ports = new ArrayList<>();
    private final RouteMap<Route> routes = new RouteMap<>();
    /** The ports' configs and counters, for the metrics endpoint's threads (they outlive {@link #close}). */
    private final List<GatewayConfig.PortConfig> portConfigs;
    private final List<PortTraffic> portTraffic;
    private final AtomicLongArray published = new AtomicLongArray(COUNTER_NAMES.length);
    private final long[] counters = new long[COUNTER_NAMES.length];
    private final FrameParser parser = new FrameParser();
    private final FrameWriter writer = new FrameWriter();
    private final XafHeader xaf = new XafHeader();
    private final FrameHandler handler = this::onFrame;
    private AfXdpGatewayPort ingress;
    private volatile boolean running = true;
    /** The configuration's cap on arriving hop limits (PROTOCOL.md §6). */
    private final int maxHopLimit;
    private Thread thread;
    /** The ports as an array: the polling loop iterates without an Iterator. */
    private AfXdpGatewayPort[] polled;

    /** Opens every port of {@code config} (socket + XDP program) and resolves its forward routes. */
    AfXdpGatewayForwarder(GatewayConfig config, XskConfig xsk) {
        maxHopLimit = config.maxHopLimit();
        try {
            for (GatewayConfig.PortConfig p : config.ports()) ports.add(new AfXdpGatewayPort(p, xsk));
            for (GatewayConfig.RouteConfig r : config.routes()) {
                if (r.action() != GatewayConfig.Action.FORWARD) continue; // LOCAL delivery is not a gateway's job here
                AfXdpGatewayPort egress = port(r.egress().orElseThrow());
                NetworkForm form = r.form().orElse(egress.config.form());
                long mask = 0;
                for (String in : r.ingress()) mask |= 1L << port(in).config.slot();
                OuterAddressing a = new OuterAddressing().srcMac(r.srcMac().orElse(egress.mac)).dstMac(r.dstMac().orElseThrow());
                if (form == NetworkForm.ID) {
                    a.srcId(r.srcId()).dstId(r.networkId());
                } else {
                    a.srcIp(r.srcIp().orElseThrow(() -> new IllegalArgumentException("route " + Integer.toHexString(r.networkId()) + " has no src-ip")))
                            .dstIp(r.dstIp().orElseThrow(() -> new IllegalArgumentException("route " + Integer.toHexString(r.networkId()) + " has no dst-ip")))
                            .srcPort(r.srcPort()).dstPort(r.dstPort());
                }
                routes.put(r.networkId(), new Route(r.networkId(), egress, form, mask, r.jobId(), r.jobToken(), a,
                        r.srcPort(), form == NetworkForm.ID ? 1 : r.srcPortSpan()));
            }
        } catch (RuntimeException e) {
            closePorts();
            throw e;
        }
        portConfigs = ports.stream().map(p -> p.config).toList();
        portTraffic = ports.stream().map(p -> p.traffic).toList();
    }

    private AfXdpGatewayPort port(String iface) {
        for (AfXdpGatewayPort p : ports) if (p.config.iface().equals(iface)) return p;
        throw new IllegalArgumentException("route names interface " + iface + ", which is not a port");
    }

    /** One line per port: "port " and what it opened. */
    @Override
    public List<String> describe() {
        return ports.stream().map(p -> "port " + p.describe()).toList();
    }

    /** Starts the polling thread; from now on only that thread touches the ports. */
    @Override
    public void start() {
        polled = ports.toArray(new AfXdpGatewayPort[0]);
        thread = Thread.ofPlatform().name("afxdp-gateway").daemon(true).start(this::pollLoop);
    }

    private void pollLoop() {
        int idle = 0;
        try {
            while (running) {
                int got;
                try {
                    got = pollRound();
                } catch (RuntimeException e) {
                    // a failed kick or a frame that broke an invariant: count it, say so (a few times), keep forwarding;
                    // an error that repeats (a port went down) is retried once per millisecond, not in a hot loop
                    if (counters[ERRORS]++ < MAX_ERROR_REPORTS) LOG.warn("afxdp: {}", e.toString());
                    else LockSupport.parkNanos(1_000_000);
                    publish();
                    got = 0;
                }
                if (got > 0) {
                    idle = 0;
                    publish();
                } else {
                    idle = Math.min(idle + 1, SPIN_ROUNDS + SHORT_PARKS + 1);
                    if (idle <= SPIN_ROUNDS) Thread.onSpinWait();
                    else LockSupport.parkNanos(idle <= SPIN_ROUNDS + SHORT_PARKS ? SHORT_PARK_NS : LONG_PARK_NS);
                }
            }
        } finally {
            publish();
        }
    }

    /** Takes up to {@value #RX_BATCH} frames from every port, then sends what they produced; the frames taken. */
    private int pollRound() {
        int got = 0;
        for (AfXdpGatewayPort p : polled) {
            ingress = p;
            got += p.socket.receive(handler, RX_BATCH);
        }
        for (AfXdpGatewayPort p : polled) if (p.pendingTx > 0 || p.socket.txInFlight() > 0) p.flush();
        return got;
    }

    private void publish() {
        for (int i = 0; i < counters.length; i++) published.setRelease(i, counters[i]);
    }

    /** One received frame of {@link #ingress}: route it or count why not. */
    private void onFrame(MemorySegment umem, long offset, int length) {
        MemorySegment frame = ingress.frameAt(offset);
        ParsedFrame f = parser.parse(frame, Math.min(length, frame.byteSize()));
        if (f.kind() != ParsedFrame.Kind.NOT_XAF) ingress.traffic.received(length);
        if (!f.isXaf()) {
            counters[f.kind() == ParsedFrame.Kind.MALFORMED ? DROP_MALFORMED : NON_XAF]++;
            return;
        }
        long at = f.xafOffset();
        xaf.wrap(frame, at);
        Route r = routes.get(xaf.networkId());
        switch (ForwardingDecision.decide(xaf, r, ingress.config.slot())) {
            case FORWARD -> { }
            case DROP_NO_ROUTE -> { counters[DROP_NO_ROUTE]++; return; }
            case DROP_INGRESS -> { counters[DROP_INGRESS]++; return; }
            case DROP_HAIRPIN -> { counters[DROP_HAIRPIN]++; return; }
            case DROP_BAD_TOKEN -> { counters[DROP_BAD_TOKEN]++; return; }
            case DROP_HOP_LIMIT -> { counters[DROP_HOP_LIMIT]++; return; }
            case DROP_TOO_BIG -> { counters[DROP_TOO_BIG]++; r.egress().traffic.tooBig(); return; }
        }
        int hop = ForwardingDecision.forwardedHopLimit(xaf.hopLimit(), maxHopLimit);
        AfXdpGatewayPort out = r.egress();
        int xafBytes = XafHeader.LENGTH + f.payloadLength();
        int outer = r.form().outerHeaderLength();
        int frameLength = outer + xafBytes;
        if (f.payloadLength() > r.form().maxPayload() || frameLength > Umem.FRAME_SIZE) { // guards: the MTU check said yes
            counters[DROP_TOO_BIG]++;
            out.traffic.tooBig();
            return;
        }
        if (r.srcPortSpan() > 1) { // the flow's source port, from the arriving frame's headers (PROTOCOL.md §7)
            r.addressing().srcPort(ForwardingDecision.egressSourcePort(r.srcPort(), r.srcPortSpan(), xaf, frame, f));
        }
        long tx = out.socket.claimTx(frameLength);
        if (tx < 0) {
            out.flush();
            tx = out.socket.claimTx(frameLength);
            if (tx < 0) {
                counters[DROP_TX_FULL]++;
                return;
            }
        }
        MemorySegment dst = out.frameAt(tx);
        MemorySegment.copy(frame, at, dst, outer, xafBytes);
        xaf.wrap(dst, outer).hopLimit(hop);
        writer.encapsulate(dst, r.form(), r.addressing());
        out.socket.submitTx();
        if (++out.pendingTx >= TX_FLUSH_AT) out.flush();
        counters[FORWARDED]++;
        out.traffic.sent(frameLength);
    }

    /** The counters as of the last polling round that received something. */
    long counter(int index) {
        return published.getAcquire(index);
    }

    /**
     * The counters in the shape every engine serves them ({@link EngineMetrics}), then
     * {@code xaf_afxdp_poller_allocated_bytes}: heap bytes the polling thread allocated so far (-1 when the JVM cannot
     * tell), to show that forwarding allocates nothing per packet.
     */
    @Override
    public String metricsText() {
        return EngineMetrics.javaEngine("AF_XDP", COUNTER_NAMES, this::counter, portConfigs, portTraffic)
                + "# HELP xaf_afxdp_poller_allocated_bytes Heap bytes the polling thread allocated so far (-1: unknown).\n"
                + "# TYPE xaf_afxdp_poller_allocated_bytes gauge\nxaf_afxdp_poller_allocated_bytes " + pollerAllocatedBytes() + "\n";
    }

    private long pollerAllocatedBytes() {
        Thread t = thread;
        if (t == null || !(ManagementFactory.getThreadMXBean() instanceof ThreadMXBean mx)) return -1;
        return mx.getThreadAllocatedBytes(t.threadId());
    }

    /** Stops the polling thread (waiting up to 2 s) and closes every port. */
    @Override
    public synchronized void close() {
        running = false;
        if (thread != null) {
            try {
                thread.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (thread.isAlive()) {
                // never free UMEMs under a live poller: the process is about to exit anyway
                LOG.error("afxdp: polling thread did not stop; ports left open");
                return;
            }
        }
        closePorts();
    }

    private void closePorts() {
        RuntimeException first = null;
        for (AfXdpGatewayPort p : ports) {
            try {
                p.close();
            } catch (RuntimeException e) {
                if (first == null) first = e;
                else first.addSuppressed(e);
            }
        }
        ports.clear();
        if (first != null) throw first;
    }
}
