package io.xaforward.dataplane;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static io.xaforward.dataplane.SharedLayouts.BE16;
import static io.xaforward.dataplane.SharedLayouts.ROUTE;
import static io.xaforward.dataplane.SharedLayouts.offset;

/** Writes and reads a {@link Route} as struct xaf_route (layout {@link SharedLayouts#ROUTE}). */
public final class RouteCodec {
    private RouteCodec() {}

    private static final long TX_SLOT = offset(ROUTE, "tx_slot");
    private static final long ACTION = offset(ROUTE, "action");
    private static final long EGRESS_FORM = offset(ROUTE, "egress_form");
    private static final long SRC_PORT_SPAN = offset(ROUTE, "src_port_span");
    private static final long INGRESS_MASK = offset(ROUTE, "ingress_mask");
    private static final long JOB_ID = offset(ROUTE, "job_id");
    private static final long JOB_TOKEN = offset(ROUTE, "job_token");
    private static final long SRC_ID = offset(ROUTE, "src_id");
    private static final long SRC_MAC = offset(ROUTE, "src_mac");
    private static final long DST_MAC = offset(ROUTE, "dst_mac");
    private static final long SRC_IP = offset(ROUTE, "src_ip");
    private static final long DST_IP = offset(ROUTE, "dst_ip");
    private static final long SRC_PORT = offset(ROUTE, "src_port");
    private static final long DST_PORT = offset(ROUTE, "dst_port");

    private static void check(MemorySegment seg) {
        if (seg.byteSize() < ROUTE.byteSize()) {
            throw new IllegalArgumentException("segment of " + seg.byteSize() + " bytes cannot hold struct xaf_route (" + ROUTE.byteSize() + ")");
        }
    }

    /** Writes {@code r} at offset 0 of {@code seg} (all 88 bytes, reserved fields zeroed). */
    public static void write(Route r, MemorySegment seg) {
        check(seg);
        seg.asSlice(0, ROUTE.byteSize()).fill((byte) 0);
        seg.set(ValueLayout.JAVA_INT, TX_SLOT, r.txSlot());
        seg.set(ValueLayout.JAVA_BYTE, ACTION, (byte) r.action());
        seg.set(ValueLayout.JAVA_BYTE, EGRESS_FORM, (byte) r.egressForm());
        seg.set(ValueLayout.JAVA_SHORT, SRC_PORT_SPAN, (short) r.srcPortSpan());
        seg.set(ValueLayout.JAVA_LONG, INGRESS_MASK, r.ingressMask());
        seg.set(ValueLayout.JAVA_INT, JOB_ID, r.jobId());
        seg.set(ValueLayout.JAVA_INT, JOB_TOKEN, r.jobToken());
        seg.set(ValueLayout.JAVA_INT, SRC_ID, r.srcId());
        MemorySegment.copy(MemorySegment.ofArray(r.srcMac()), 0, seg, SRC_MAC, 6);
        MemorySegment.copy(MemorySegment.ofArray(r.dstMac()), 0, seg, DST_MAC, 6);
        MemorySegment.copy(MemorySegment.ofArray(r.srcIp()), 0, seg, SRC_IP, 16);
        MemorySegment.copy(MemorySegment.ofArray(r.dstIp()), 0, seg, DST_IP, 16);
        seg.set(BE16, SRC_PORT, (short) r.srcPort());
        seg.set(BE16, DST_PORT, (short) r.dstPort());
    }

    /** Reads a route from offset 0 of {@code seg}. */
    public static Route read(MemorySegment seg) {
        check(seg);
        return new Route(seg.get(ValueLayout.JAVA_INT, TX_SLOT),
                Byte.toUnsignedInt(seg.get(ValueLayout.JAVA_BYTE, ACTION)),
                Byte.toUnsignedInt(seg.get(ValueLayout.JAVA_BYTE, EGRESS_FORM)),
                seg.get(ValueLayout.JAVA_LONG, INGRESS_MASK),
                seg.get(ValueLayout.JAVA_INT, JOB_ID),
                seg.get(ValueLayout.JAVA_INT, JOB_TOKEN),
                seg.get(ValueLayout.JAVA_INT, SRC_ID),
                seg.asSlice(SRC_MAC, 6).toArray(ValueLayout.JAVA_BYTE),
                seg.asSlice(DST_MAC, 6).toArray(ValueLayout.JAVA_BYTE),
                seg.asSlice(SRC_IP, 16).toArray(ValueLayout.JAVA_BYTE),
                seg.asSlice(DST_IP, 16).toArray(ValueLayout.JAVA_BYTE),
                Short.toUnsignedInt(seg.get(BE16, SRC_PORT)),
                Short.toUnsignedInt(seg.get(BE16, DST_PORT)),
                Short.toUnsignedInt(seg.get(ValueLayout.JAVA_SHORT, SRC_PORT_SPAN)));
    }
}
