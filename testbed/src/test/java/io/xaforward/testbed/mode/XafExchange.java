package io.xaforward.testbed.mode;

import io.xaforward.protocol.MessageType;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.PayloadIntegrity;
import io.xaforward.protocol.XafHeader;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Test traffic: every source rank sends {@code count} XAF packets with known payloads to each of its destination
 * ranks; a receiver per destination checks every packet (identifier, job, ranks, hop limit, payload sum and CRC32C,
 * the exact payload bytes, no duplicates) and counts them per source.
 */
final class XafExchange {
    /** Payload bytes of packet {@code seq} from {@code src}: a pattern that differs per source, packet and offset. */
    static byte payloadByte(int src, int seq, int j) {
        return (byte) (src * 31 + seq * 7 + j * 13 + (j >> 8));
    }

    /** Payload length of packet {@code seq}: 1 byte up to {@code max}, the last packet exactly {@code max}. */
    static int payloadLength(int seq, int count, int max) {
        return seq == count - 1 ? max : 1 + (seq * 97) % max;
    }

    /** Largest XAF payload that fits the MTU of both hosts' networks. */
    static int maxPayload(Node a, Node b) {
        return Math.min(a.mtu() + 14 - a.form().outerHeaderLength(), b.mtu() + 14 - b.form().outerHeaderLength())
                - XafHeader.LENGTH;
    }

    record Pair(int src, int dst) {}

    final List<String> errors = new CopyOnWriteArrayList<>();
    final Map<Pair, BitSet> received = new ConcurrentHashMap<>();

    /**
     * Runs the exchange and returns how many packets arrived per pair. {@code gatewayHops} is how many gateways
     * decrement the hop limit on the way.
     */
    Map<Pair, Integer> run(IdentifierPlan plan, GatewayMode mode, List<Pair> pairs, int count, int gatewayHops,
                           long timeoutMs) throws Exception {
        Map<Integer, HostEndpoint> endpoints = new HashMap<>();
        try {
            for (Pair p : pairs) {
                endpoints.computeIfAbsent(p.src(), r -> HostEndpoint.open(plan.host(r)));
                endpoints.computeIfAbsent(p.dst(), r -> HostEndpoint.open(plan.host(r)));
            }
            Map<Integer, Integer> expectedPerDst = new HashMap<>();
            for (Pair p : pairs) expectedPerDst.merge(p.dst(), count, Integer::sum);
            List<Thread> receivers = new ArrayList<>();
            long deadline = System.currentTimeMillis() + timeoutMs;
            for (var e : expectedPerDst.entrySet()) {
                HostEndpoint ep = endpoints.get(e.getKey());
                receivers.add(Thread.ofPlatform().name("rx-" + e.getKey()).start(() -> receive(plan, ep, e.getKey(), e.getValue(), count, gatewayHops, deadline)));
            }
            List<Thread> senders = new ArrayList<>();
            Map<Integer, List<Pair>> bySrc = new HashMap<>();
            for (Pair p : pairs) bySrc.computeIfAbsent(p.src(), k -> new ArrayList<>()).add(p);
            for (var e : bySrc.entrySet()) {
                HostEndpoint ep = endpoints.get(e.getKey());
                senders.add(Thread.ofPlatform().name("tx-" + e.getKey()).start(() -> send(plan, mode, ep, e.getKey(), e.getValue(), count)));
            }
            for (Thread t : senders) t.join(timeoutMs);
            for (Thread t : receivers) t.join(timeoutMs + 2000);
            Map<Pair, Integer> counts = new HashMap<>();
            for (Pair p : pairs) counts.put(p, received.getOrDefault(p, new BitSet()).cardinality());
            return counts;
        } finally {
            for (HostEndpoint ep : endpoints.values()) ep.close();
        }
    }

    private void send(IdentifierPlan plan, GatewayMode mode, HostEndpoint ep, int src, List<Pair> pairs, int count) {
        try {
            XafHeader h = new XafHeader();
            PayloadIntegrity integrity = new PayloadIntegrity();
            MemorySegment buf = ep.xafBuffer();
            List<IdentifierPlan.Peer> book = plan.addressBook(src);
            for (int seq = 0; seq < count; seq++) {
                for (Pair p : pairs) {
                    IdentifierPlan.Peer peer = book.stream().filter(x -> x.rank() == p.dst()).findFirst().orElseThrow();
                    int len = payloadLength(seq, count, maxPayload(plan.host(src), plan.host(p.dst())));
                    h.wrap(buf, 0).init().type(MessageType.DATA.code()).networkId(peer.networkId()).jobId(plan.jobId())
                            .jobToken(plan.jobToken()).srcRank(src).dstRank(p.dst()).step(7).chunkIndex(seq).chunkCount(count)
                            .payloadLength(len);
                    for (int j = 0; j < len; j++) buf.set(ValueLayout.JAVA_BYTE, XafHeader.LENGTH + j, payloadByte(src, seq, j));
                    integrity.seal(h);
                    ep.send(peer, XafHeader.LENGTH + len, mode);
                }
                if (seq % 16 == 15) Thread.sleep(1); // a low rate: this test checks correctness, not capacity
            }
        } catch (Exception e) {
            errors.add("sender " + src + ": " + e);
        }
    }

    private void receive(IdentifierPlan plan, HostEndpoint ep, int dst, int expected, int count, int gatewayHops, long deadline) {
        XafHeader h = new XafHeader();
        PayloadIntegrity integrity = new PayloadIntegrity();
        int got = 0;
        try {
            while (got < expected && System.currentTimeMillis() < deadline) {
                MemorySegment x = ep.receive((int) Math.max(1, deadline - System.currentTimeMillis()));
                if (x == null) break;
                h.wrap(x, 0);
                int src = h.srcRank();
                String where = "packet " + src + "->" + dst + " #" + h.chunkIndex() + ": ";
                if (h.networkId() != plan.networkId(dst)) { errors.add(where + "identifier " + Integer.toHexString(h.networkId())); continue; }
                if (ep.host().form() == NetworkForm.ID && ep.lastIdDestination() != plan.networkId(dst)) {
                    errors.add(where + "ID header dst_id " + Integer.toHexString(ep.lastIdDestination()));
                    continue;
                }
                if (h.dstRank() != dst || h.jobId() != plan.jobId() || h.jobToken() != plan.jobToken() || h.chunkCount() != count) {
                    errors.add(where + "header fields changed");
                    continue;
                }
                if (h.hopLimit() != XafHeader.DEFAULT_HOP_LIMIT - gatewayHops) { errors.add(where + "hop limit " + h.hopLimit()); continue; }
                if (!integrity.verify(h)) { errors.add(where + "payload sum/CRC32C mismatch"); continue; }
                int seq = h.chunkIndex();
                int len = h.payloadLength();
                if (len != payloadLength(seq, count, maxPayload(plan.host(src), plan.host(dst)))) { errors.add(where + "length " + len); continue; }
                boolean same = true;
                for (int j = 0; j < len && same; j++) same = x.get(ValueLayout.JAVA_BYTE, XafHeader.LENGTH + j) == payloadByte(src, seq, j);
                if (!same) { errors.add(where + "payload bytes differ"); continue; }
                BitSet seen = received.computeIfAbsent(new Pair(src, dst), k -> new BitSet());
                synchronized (seen) {
                    if (seen.get(seq)) { errors.add(where + "duplicate"); continue; }
                    seen.set(seq);
                }
                got++;
            }
        } catch (Exception e) {
            errors.add("receiver " + dst + ": " + e);
        }
    }
}
