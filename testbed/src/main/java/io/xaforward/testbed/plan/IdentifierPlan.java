package io.xaforward.testbed.plan;

import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.XafHeader;
import io.xaforward.testbed.Datacenter;
import io.xaforward.testbed.GatewaySpec;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;

import java.net.InetAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Assigns network index identifiers to the ranks of a job and derives, from the topology, every gateway's routes
 * and every worker's address book. Deterministic: the same topology, job and token give the same plan.
 *
 * <h2>Rules</h2>
 * <ul>
 *   <li>Ranks are the hosts in topology order: the data centers in file order, their hosts in file order.</li>
 *   <li>The identifier of rank {@code r} in job {@code j} is {@code j << 16 | r} (job 1..65535, up to 65536 ranks),
 *       so a route names both the job and the destination.</li>
 *   <li>A worker sends to a peer in its own data center directly, and to any other peer through the first gateway
 *       on the shortest path (fewest gateways) from its data center to the peer's. Ties go to the gateway listed
 *       first.</li>
 *   <li>A gateway that joins the destination's data center delivers to the host; otherwise it forwards to the next
 *       gateway on the shortest path, through the data center they share. Frames may enter on any port but the
 *       egress port (no hairpins).</li>
 * </ul>
 * {@link #validate()} walks every route chain from every gateway and fails on a loop, a dead end or a path longer
 * than the XAF hop limit.
 */
public final class IdentifierPlan {
    /** How a worker reaches one peer: the identifier to put in the XAF header and the next hop on its own network. */
    public record Peer(int rank, int networkId, Node destination, boolean direct, NetworkForm form,
                       String nextHopMac, InetAddress nextHopIp, int nextHopIdentity) {}

    /** One gateway route, in the terms of the gateway config file. */
    public record GatewayRoute(int networkId, int destinationRank, String egressIface, NetworkForm egressForm,
                               List<String> ingressIfaces, String srcMac, String dstMac,
                               InetAddress srcIp, InetAddress dstIp, int srcId, String nextGateway) {}

    private final TestbedState state;
    private final int jobId;
    private final int jobToken;
    private final List<Node> ranks;
    private final Map<String, List<GatewayRoute>> routesByGateway = new HashMap<>();
    /** UDP source ports every route to an IP form spreads flows over ({@link #build(TestbedState, int, int, int)}). */
    private final int srcPortSpan;

    private IdentifierPlan(TestbedState state, int jobId, int jobToken, int srcPortSpan) {
        if (jobId < 1 || jobId > 0xFFFF) throw new IllegalArgumentException("job id must be 1..65535, got " + jobId);
        if (srcPortSpan < 1) throw new IllegalArgumentException("src-port-span must be at least 1, got " + srcPortSpan);
        this.srcPortSpan = srcPortSpan;
        this.state = state;
        this.jobId = jobId;
        this.jobToken = jobToken;
        this.ranks = List.copyOf(state.hosts());
        if (ranks.isEmpty()) throw new IllegalArgumentException(state.topology().name() + ": the topology has no hosts");
        if (ranks.size() > 0x10000) throw new IllegalArgumentException("at most 65536 ranks, got " + ranks.size());
        for (GatewaySpec gw : state.topology().gateways()) {
            routesByGateway.put(gw.name(), buildRoutes(gw));
        }
    }

    /** Builds and validates the plan for a brought-up (or merely laid-out) testbed. */
    public static IdentifierPlan build(TestbedState state, int jobId, int jobToken) {
        return build(state, jobId, jobToken, 1);
    }

    /**
     * {@link #build(TestbedState, int, int)} with gateway routes that keep {@code srcPortSpan} flows of a sender apart
     * ({@code src-port-span}, PROTOCOL.md §7): the span of a job whose workers send from that many UDP ports each, so
     * that receivers, which accept a peer's datagrams from [port, port + span), still recognise what a gateway
     * forwards.
     */
    public static IdentifierPlan build(TestbedState state, int jobId, int jobToken, int srcPortSpan) {
        IdentifierPlan plan = new IdentifierPlan(state, jobId, jobToken, srcPortSpan);
        plan.validate();
        return plan;
    }

    public int srcPortSpan() { return srcPortSpan; }
    public int jobId() { return jobId; }
    public int jobToken() { return jobToken; }
    public int worldSize() { return ranks.size(); }
    public TestbedState state() { return state; }

    public Node host(int rank) {
        if (rank < 0 || rank >= ranks.size()) throw new IllegalArgumentException("no rank " + rank + " (world size " + ranks.size() + ")");
        return ranks.get(rank);
    }

    public List<Node> hosts() { return ranks; }

    public int networkId(int rank) {
        host(rank);
        return (jobId << 16) | rank;
    }

    /** The rank an identifier of this job names, or -1. */
    public int rankOf(int networkId) {
        int r = networkId & 0xFFFF;
        return (networkId >>> 16) == jobId && r < ranks.size() ? r : -1;
    }

    /** The data center index of a rank. */
    public int datacenterOf(int rank) {
        return state.topology().datacenter(host(rank).datacenter()).index();
    }

    /** Every peer of {@code rank}, in rank order (excluding itself). */
    public List<Peer> addressBook(int rank) {
        Node self = host(rank);
        List<Peer> peers = new ArrayList<>();
        for (int r = 0; r < ranks.size(); r++) {
            if (r == rank) continue;
            Node dst = ranks.get(r);
            if (dst.datacenter().equals(self.datacenter())) {
                peers.add(new Peer(r, networkId(r), dst, true, self.form(), dst.mac(), dst.ip(), dst.identity()));
            } else {
                GatewaySpec first = nextGateway(self.datacenter(), dst.datacenter(), null)
                        .orElseThrow(() -> new IllegalStateException("no gateway path from " + self.datacenter() + " to " + dst.datacenter()));
                Node port = state.gatewayPort(first.name(), self.datacenter());
                peers.add(new Peer(r, networkId(r), dst, false, self.form(), port.mac(), port.ip(), dst.identity()));
            }
        }
        return peers;
    }

    /** The routes of one gateway. */
    public List<GatewayRoute> routes(String gateway) {
        List<GatewayRoute> r = routesByGateway.get(gateway);
        if (r == null) throw new IllegalArgumentException("no gateway '" + gateway + "' in " + state.topology().name());
        return r;
    }

    private List<GatewayRoute> buildRoutes(GatewaySpec gw) {
        List<GatewayRoute> routes = new ArrayList<>();
        List<Node> ports = state.gatewayPorts(gw.name());
        for (int r = 0; r < ranks.size(); r++) {
            Node dst = ranks.get(r);
            Node egress;
            String dstMac;
            InetAddress dstIp;
            String next = null;
            if (gw.joins().contains(dst.datacenter())) {
                egress = state.gatewayPort(gw.name(), dst.datacenter());
                dstMac = dst.mac();
                dstIp = dst.ip();
            } else {
                Optional<Hop> hop = firstHop(gw, dst.datacenter());
                if (hop.isEmpty()) continue; // unreachable from this gateway: no route, frames are dropped and counted
                egress = state.gatewayPort(gw.name(), hop.get().via());
                Node nextPort = state.gatewayPort(hop.get().gateway().name(), hop.get().via());
                dstMac = nextPort.mac();
                dstIp = nextPort.ip();
                next = hop.get().gateway().name();
            }
            List<String> ingress = ports.stream().map(Node::iface).filter(i -> !i.equals(egress.iface())).toList();
            routes.add(new GatewayRoute(networkId(r), r, egress.iface(), egress.form(), ingress, egress.mac(), dstMac,
                    egress.ip(), dstIp, egress.identity(), next));
        }
        return routes;
    }

    private record Hop(String via, GatewaySpec gateway) {}

    /** From gateway {@code gw}, the DC to send into and the next gateway, on a shortest path to {@code dstDc}. */
    private Optional<Hop> firstHop(GatewaySpec gw, String dstDc) {
        // Breadth-first over data centers; each DC remembers the (via, gateway) hop that first reached it.
        Topology t = state.topology();
        Map<String, Hop> first = new HashMap<>();
        Deque<String> queue = new ArrayDeque<>();
        Set<String> seen = new HashSet<>(gw.joins());
        for (String dc : gw.joins()) queue.add(dc);
        while (!queue.isEmpty()) {
            String dc = queue.poll();
            for (GatewaySpec g : t.gatewaysOf(dc)) {
                if (g.name().equals(gw.name())) continue;
                for (String next : g.joins()) {
                    if (seen.add(next)) {
                        first.put(next, first.containsKey(dc) ? first.get(dc) : new Hop(dc, g));
                        queue.add(next);
                    }
                }
            }
        }
        return Optional.ofNullable(first.get(dstDc));
    }

    /** The first gateway on a shortest path between two data centers ({@code exclude} is skipped). */
    private Optional<GatewaySpec> nextGateway(String fromDc, String toDc, String exclude) {
        GatewaySpec best = null;
        int bestHops = Integer.MAX_VALUE;
        for (GatewaySpec g : state.topology().gatewaysOf(fromDc)) {
            if (g.name().equals(exclude)) continue;
            int hops = g.joins().contains(toDc) ? 1 : firstHop(g, toDc).map(h -> 1 + chainLength(g, toDc)).orElse(Integer.MAX_VALUE);
            if (hops < bestHops) {
                best = g;
                bestHops = hops;
            }
        }
        return Optional.ofNullable(best);
    }

    private int chainLength(GatewaySpec from, String toDc) {
        int n = 0;
        GatewaySpec g = from;
        while (!g.joins().contains(toDc) && n <= XafHeader.DEFAULT_HOP_LIMIT) {
            g = firstHop(g, toDc).orElseThrow().gateway();
            n++;
        }
        return n;
    }

    /**
     * Checks the plan: identifiers unique, and from every gateway every route chain reaches its destination host
     * without a loop and within the hop limit.
     */
    public void validate() {
        Set<Integer> ids = new HashSet<>();
        for (int r = 0; r < ranks.size(); r++) {
            if (!ids.add(networkId(r))) throw new IllegalStateException("duplicate identifier for rank " + r);
        }
        Topology t = state.topology();
        for (GatewaySpec start : t.gateways()) {
            for (GatewayRoute route : routes(start.name())) {
                Set<String> visited = new HashSet<>();
                String gw = start.name();
                GatewayRoute hop = route;
                while (hop.nextGateway() != null) {
                    if (!visited.add(gw)) {
                        throw new IllegalStateException("routing loop for identifier " + hex(route.networkId()) + " through gateway " + gw);
                    }
                    if (visited.size() >= XafHeader.DEFAULT_HOP_LIMIT) {
                        throw new IllegalStateException("identifier " + hex(route.networkId()) + " needs more than "
                                + XafHeader.DEFAULT_HOP_LIMIT + " gateway hops");
                    }
                    String nextGw = hop.nextGateway();
                    hop = routes(nextGw).stream().filter(x -> x.networkId() == route.networkId()).findFirst()
                            .orElseThrow(() -> new IllegalStateException("dead end for identifier " + hex(route.networkId()) + " at gateway " + nextGw));
                    gw = nextGw;
                }
                Node dst = ranks.get(route.destinationRank());
                if (!hop.dstMac().equals(dst.mac())) {
                    throw new IllegalStateException("identifier " + hex(route.networkId()) + " ends at " + hop.dstMac() + ", not at rank "
                            + route.destinationRank() + " (" + dst.mac() + ")");
                }
            }
        }
        for (Datacenter dc : t.datacenters()) {
            for (Datacenter other : t.datacenters()) {
                if (dc != other && !t.gatewaysOf(dc.name()).isEmpty() && nextGateway(dc.name(), other.name(), null).isEmpty()) {
                    throw new IllegalStateException("datacenter '" + dc.name() + "' cannot reach '" + other.name() + "' through any gateway");
                }
            }
        }
    }

    /**
     * The config file of gateway {@code gateway} for {@code xaf gateway --config}. {@code metrics} is HOST:PORT or
     * "off".
     */
    public String gatewayYaml(String gateway, String metrics) {
        StringBuilder y = new StringBuilder();
        y.append("# Generated by XAForward's identifier plan for topology '").append(state.topology().name())
                .append("', job ").append(jobId).append(", gateway '").append(gateway).append("'.\n");
        y.append("attach: native\n");
        y.append("metrics: \"").append(metrics).append("\"\n");
        y.append("reload: true\n");
        y.append("ports:\n");
        for (Node p : state.gatewayPorts(gateway)) {
            y.append("  - {interface: ").append(p.iface()).append(", form: ").append(p.form().configName()).append("}\n");
        }
        y.append(routes(gateway).isEmpty() ? "routes: []\n" : "routes:\n");
        for (GatewayRoute r : routes(gateway)) {
            y.append("  - id: ").append(hex(r.networkId())).append("    # rank ").append(r.destinationRank())
                    .append(r.nextGateway() != null ? " via gateway " + r.nextGateway() : "").append('\n');
            y.append("    job: ").append(jobId).append('\n');
            y.append("    token: ").append(hex(jobToken)).append('\n');
            y.append("    egress: ").append(r.egressIface()).append('\n');
            y.append("    ingress: [").append(String.join(", ", r.ingressIfaces())).append("]\n");
            y.append("    src-mac: ").append(r.srcMac()).append('\n');
            y.append("    dst-mac: ").append(r.dstMac()).append('\n');
            if (r.egressForm() != NetworkForm.ID) {
                y.append("    src-ip: ").append(r.srcIp().getHostAddress()).append('\n');
                y.append("    dst-ip: ").append(r.dstIp().getHostAddress()).append('\n');
                if (srcPortSpan > 1) y.append("    src-port-span: ").append(srcPortSpan).append('\n');
            } else {
                y.append("    src-id: ").append(hex(r.srcId())).append('\n');
            }
        }
        return y.toString();
    }

    static String hex(int v) {
        return String.format("0x%08x", v);
    }
}
