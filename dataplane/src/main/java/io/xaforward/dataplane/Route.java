package io.xaforward.dataplane;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * One entry of the gateway's {@code routes} map: what to do with frames that carry a given network index identifier.
 * Mirrors struct xaf_route; {@link RouteCodec} writes it in the C layout. IP addresses are 4 bytes (IPv4) or 16 bytes
 * (IPv6) in network order; MACs are 6 bytes. Ports are unsigned 16-bit values.
 *
 * @param txSlot     key into the tx_ports devmap (0..63)
 * @param action     {@link SharedLayouts#ACTION_FORWARD} or {@link SharedLayouts#ACTION_LOCAL}
 * @param egressForm {@link SharedLayouts#FORM_IPV4}, {@code FORM_IPV6} or {@code FORM_ID}
 * @param ingressMask bit i: frames may arrive on the port with slot i; 0 = any port but the one at txSlot (hairpin)
 * @param srcId      ID form: src_id written into the ID header
 * @param srcPort    IP forms: the UDP source port written on egress, the first of {@code srcPortSpan}
 * @param srcPortSpan IP forms: how many consecutive UDP source ports from {@code srcPort} the route spreads flows
 *                   over ({@link #egressSourcePort}); 0 or 1: always {@code srcPort}
 */
public record Route(int txSlot, int action, int egressForm, long ingressMask, int jobId, int jobToken,
                    int srcId, byte[] srcMac, byte[] dstMac, byte[] srcIp, byte[] dstIp, int srcPort, int dstPort,
                    int srcPortSpan) {

    public Route {
        if (txSlot < 0 || txSlot >= SharedLayouts.MAX_PORTS) throw new IllegalArgumentException("txSlot " + txSlot + " not in 0..63");
        if (action != SharedLayouts.ACTION_FORWARD && action != SharedLayouts.ACTION_LOCAL) throw new IllegalArgumentException("unknown action " + action);
        if (egressForm < 0 || egressForm > 255) throw new IllegalArgumentException("egressForm " + egressForm);
        srcMac = copy(srcMac, 6, "srcMac");
        dstMac = copy(dstMac, 6, "dstMac");
        srcIp = ip(srcIp, "srcIp");
        dstIp = ip(dstIp, "dstIp");
        if ((srcPort & ~0xFFFF) != 0 || (dstPort & ~0xFFFF) != 0) throw new IllegalArgumentException("ports must be 0..65535");
        if ((srcPortSpan & ~0xFFFF) != 0) throw new IllegalArgumentException("srcPortSpan " + srcPortSpan + " not in 0..65535");
        if (srcPortSpan > 1 && srcPort + srcPortSpan - 1 > 0xFFFF) {
            throw new IllegalArgumentException("source ports " + srcPort + ".." + (srcPort + srcPortSpan - 1)
                    + " (srcPort " + srcPort + ", srcPortSpan " + srcPortSpan + ") go past 65535");
        }
    }

    /** A route as the 13 fields before {@code srcPortSpan}, with span 1: every frame leaves from {@code srcPort}. */
    public Route(int txSlot, int action, int egressForm, long ingressMask, int jobId, int jobToken,
                 int srcId, byte[] srcMac, byte[] dstMac, byte[] srcIp, byte[] dstIp, int srcPort, int dstPort) {
        this(txSlot, action, egressForm, ingressMask, jobId, jobToken, srcId, srcMac, dstMac, srcIp, dstIp,
                srcPort, dstPort, 1);
    }

    /**
     * The UDP source port a frame forwarded into an IP form leaves from (docs/PROTOCOL.md §7, "The egress flow"):
     * {@code srcPort + (srcRank + ingressSourcePort) % span}, or {@code srcPort} for a span of 0 or 1.
     *
     * @param srcRank           the XAF header's src_rank (0..65535)
     * @param ingressSourcePort the arriving frame's UDP source port, 0 when it arrived in the ID form
     */
    public static int egressSourcePort(int srcPort, int span, int srcRank, int ingressSourcePort) {
        return span <= 1 ? srcPort : (srcPort + (srcRank + ingressSourcePort) % span) & 0xFFFF;
    }

    private static byte[] copy(byte[] b, int len, String what) {
        if (b == null) return new byte[len];
        if (b.length != len) throw new IllegalArgumentException(what + " must be " + len + " bytes, got " + b.length);
        return b.clone();
    }

    private static byte[] ip(byte[] b, String what) {
        if (b == null) return new byte[16];
        if (b.length != 4 && b.length != 16) throw new IllegalArgumentException(what + " must be 4 or 16 bytes, got " + b.length);
        return Arrays.copyOf(b, 16); // IPv4 occupies the first 4 bytes, as in struct xaf_route
    }

    /** A route that forwards out of {@code txSlot} in {@code egressForm}, with the given outer header values. */
    public static Route forward(int txSlot, int egressForm, long ingressMask, int jobId, int jobToken, int srcId,
                                byte[] srcMac, byte[] dstMac, byte[] srcIp, byte[] dstIp, int srcPort, int dstPort) {
        return new Route(txSlot, SharedLayouts.ACTION_FORWARD, egressForm, ingressMask, jobId, jobToken, srcId,
                srcMac, dstMac, srcIp, dstIp, srcPort, dstPort);
    }

    /** A route that delivers to the local AF_XDP socket bound to the frame's rx queue. */
    public static Route local(long ingressMask, int jobId, int jobToken) {
        return new Route(0, SharedLayouts.ACTION_LOCAL, SharedLayouts.FORM_NONE, ingressMask, jobId, jobToken, 0,
                null, null, null, null, 0, 0);
    }

    /** The same route spreading flows over {@code span} UDP source ports from {@code srcPort} (0 or 1: one port). */
    public Route withSrcPortSpan(int span) {
        return new Route(txSlot, action, egressForm, ingressMask, jobId, jobToken, srcId, srcMac, dstMac, srcIp,
                dstIp, srcPort, dstPort, span);
    }

    @Override public byte[] srcMac() { return srcMac.clone(); }
    @Override public byte[] dstMac() { return dstMac.clone(); }
    @Override public byte[] srcIp() { return srcIp.clone(); }
    @Override public byte[] dstIp() { return dstIp.clone(); }

    @Override
    public boolean equals(Object o) {
        return o instanceof Route r && txSlot == r.txSlot && action == r.action && egressForm == r.egressForm
                && ingressMask == r.ingressMask && jobId == r.jobId && jobToken == r.jobToken
                && srcId == r.srcId && Arrays.equals(srcMac, r.srcMac) && Arrays.equals(dstMac, r.dstMac)
                && Arrays.equals(srcIp, r.srcIp) && Arrays.equals(dstIp, r.dstIp) && srcPort == r.srcPort && dstPort == r.dstPort
                && srcPortSpan == r.srcPortSpan;
    }

    @Override
    public int hashCode() {
        return ((Arrays.hashCode(dstIp) * 31 + txSlot) * 31 + jobId) * 31 + egressForm;
    }

    @Override
    public String toString() {
        HexFormat hex = HexFormat.ofDelimiter(":");
        return "Route[txSlot=" + txSlot + ", action=" + action + ", egressForm=" + egressForm + ", ingressMask=0x"
                + Long.toHexString(ingressMask) + ", job=" + jobId + ", srcId=" + srcId
                + ", srcMac=" + hex.formatHex(srcMac) + ", dstMac=" + hex.formatHex(dstMac) + ", srcPort=" + srcPort
                + ", srcPortSpan=" + srcPortSpan + ", dstPort=" + dstPort + "]";
    }
}
