package io.xaforward.gateway;

import io.xaforward.dataplane.Counter;
import io.xaforward.dataplane.Route;
import io.xaforward.protocol.EthernetHeader;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.ParsedFrame;
import io.xaforward.protocol.UdpHeader;
import io.xaforward.protocol.XafHeader;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The route checks of PROTOCOL.md §7 for a valid XAF frame, in the spec's order (the order the XDP program uses):
 * route lookup, ingress port (hairpin included), job id and token, hop limit, and whether the rebuilt frame fits the
 * egress port's MTU and the egress form's length fields;
 * and the hop limit a forwarded frame leaves with ({@link #forwardedHopLimit}: clamped to the gateway's cap) and
 * the UDP source port it leaves from, picked from the route's span ({@link #egressSourcePort}).
 * Both Java engines (the UDP/AF_PACKET relay and the AF_XDP gateway) call this, so the same bad frame is counted under
 * the same reason whatever engine forwards it. Allocates nothing.
 */
public final class ForwardingDecision {
    /** Why a frame is dropped, or FORWARD. Each maps to the XDP program's counter of the same name. */
    public enum Verdict {
        FORWARD(Counter.FORWARDED), DROP_NO_ROUTE(Counter.DROP_NO_ROUTE), DROP_INGRESS(Counter.DROP_INGRESS),
        DROP_BAD_TOKEN(Counter.DROP_BAD_TOKEN), DROP_HOP_LIMIT(Counter.DROP_HOP_LIMIT), DROP_TOO_BIG(Counter.DROP_TOO_BIG),
        DROP_HAIRPIN(Counter.DROP_HAIRPIN);

        private final Counter counter;

        Verdict(Counter counter) { this.counter = counter; }

        /** The XDP program's outcome counter for this verdict (FORWARDED once the redirect succeeds). */
        public Counter counter() { return counter; }
    }

    /** What the decision needs of a route; the engines' own route records implement it. */
    public interface RouteChecks {
        /** Ports (bit = slot) the frame may arrive on; 0 means any but the egress port ({@link #decide}: hairpin). */
        long ingressMask();

        /** The slot of the port the route forwards out of. */
        int egressSlot();

        int jobId();

        int jobToken();

        /** The form the frame leaves in. */
        NetworkForm egressForm();

        /** The egress port's MTU: the most bytes a frame may carry after its Ethernet header. */
        int egressMtu();
    }

    /** The hop limit cap of a gateway unless its configuration says otherwise ({@code max-hop-limit}). */
    public static final int DEFAULT_MAX_HOP_LIMIT = 16;

    private ForwardingDecision() {}

    private static final ValueLayout.OfShort BE16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /**
     * The hop limit a forwarded frame leaves with (PROTOCOL.md §6): what it arrived with, clamped to the gateway's cap
     * {@code maxHopLimit} (2..255), less one. Only for frames {@link #decide} forwards (they arrived with 2 or more).
     */
    public static int forwardedHopLimit(int arrived, int maxHopLimit) {
        return Math.min(arrived, maxHopLimit) - 1;
    }

    /**
     * @param xaf         the frame's XAF header (already validated, §7 step 2)
     * @param route       the route for {@code xaf.networkId()}, or null
     * @param ingressSlot the slot of the port the frame arrived on
     */
    public static Verdict decide(XafHeader xaf, RouteChecks route, int ingressSlot) {
        if (route == null) return Verdict.DROP_NO_ROUTE;
        long mask = route.ingressMask();
        if (mask != 0 && (ingressSlot >= 64 || (mask & (1L << ingressSlot)) == 0)) return Verdict.DROP_INGRESS;
        // Hairpin: never back out of the arrival port unless the route names it as ingress; it would leave with the
        // gateway's source address, past the receiver's source check (PROTOCOL.md §7).
        if (mask == 0 && route.egressSlot() == ingressSlot) return Verdict.DROP_HAIRPIN;
        if (xaf.jobId() != route.jobId() || xaf.jobToken() != route.jobToken()) return Verdict.DROP_BAD_TOKEN;
        if (xaf.hopLimit() <= 1) return Verdict.DROP_HOP_LIMIT;
        NetworkForm egress = route.egressForm();
        if (egressLength(egress, xaf.payloadLength()) > route.egressMtu() || xaf.payloadLength() > egress.maxPayload()) {
            return Verdict.DROP_TOO_BIG;
        }
        return Verdict.FORWARD;
    }

    /**
     * The UDP source port a forwarded frame leaves from when its egress form is IPv4 or IPv6 (PROTOCOL.md §7, "The
     * egress flow"), as the XDP program picks it: {@code srcPort + (src_rank + ingress UDP source port) % span}, or
     * {@code srcPort} for a span of 0 or 1 ({@link Route#egressSourcePort}).
     *
     * @param xaf   the arriving frame's XAF header
     * @param frame the arriving frame, parsed as {@code f}
     */
    public static int egressSourcePort(int srcPort, int span, XafHeader xaf, MemorySegment frame, ParsedFrame f) {
        return span <= 1 ? srcPort : Route.egressSourcePort(srcPort, span, xaf.srcRank(), ingressSourcePort(frame, f));
    }

    /**
     * The UDP source port of a parsed XAF frame {@code f} of {@code frame} (host order), or 0 for the ID form: with its
     * src_rank, what picks the egress source port of a route with a span ({@link #egressSourcePort}).
     */
    public static int ingressSourcePort(MemorySegment frame, ParsedFrame f) {
        return f.form() == NetworkForm.ID ? 0 : Short.toUnsignedInt(frame.get(BE16, f.xafOffset() - UdpHeader.LENGTH));
    }

    /**
     * The length PROTOCOL.md §7 compares with the egress MTU: a frame of {@code form} carrying {@code payloadLength}
     * payload bytes, without its Ethernet header (the IPv4/IPv6 packet, or ID header + XAF header + payload).
     */
    public static int egressLength(NetworkForm form, int payloadLength) {
        return form.outerHeaderLength() - EthernetHeader.LENGTH + XafHeader.LENGTH + payloadLength;
    }

    /**
     * The largest payload a frame of {@code form} carries through a port of MTU {@code mtu} (never more than the form's
     * own length fields allow); negative when not even an empty frame fits.
     */
    public static int maxPayload(NetworkForm form, int mtu) {
        return Math.min(form.maxPayload(), mtu - egressLength(form, 0));
    }
}
