package io.xaforward.dataplane;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.MemoryLayout.sequenceLayout;
import static java.lang.foreign.MemoryLayout.structLayout;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * Java mirrors of the BPF map structs and constants in xaf_shared.h (x86-64, host byte order unless a field is
 * big-endian in C). Field names are the C names, so offsets come from {@code ROUTE.byteOffset(groupElement("..."))}.
 * SharedLayoutsTest compiles a C probe against the header and compares every offset and size with these layouts.
 */
public final class SharedLayouts {
    private SharedLayouts() {}

    public static final int FORM_NONE = 0, FORM_IPV4 = 1, FORM_IPV6 = 2, FORM_ID = 3;
    public static final int ACTION_FORWARD = 0, ACTION_LOCAL = 1;
    public static final int COUNTERS = 16;
    public static final int MAX_PORTS = 64;
    public static final int MAX_ROUTES = 65536;
    public static final int MAX_QUEUES = 64;
    public static final int UDP_PORT = 9450;
    public static final int ETH_P_ID = 0x0812;
    public static final int ID_HDR_LEN = 12;
    public static final int ID_NEXT_XAF = 0xFD;

    /** Big-endian 16-bit field ({@code __be16}). */
    public static final ValueLayout.OfShort BE16 = JAVA_SHORT.withOrder(ByteOrder.BIG_ENDIAN);

    /** struct xaf_route, 88 bytes. */
    public static final StructLayout ROUTE = structLayout(
            JAVA_INT.withName("tx_slot"),
            JAVA_BYTE.withName("action"),
            JAVA_BYTE.withName("egress_form"),
            JAVA_SHORT.withName("src_port_span"),
            JAVA_LONG.withName("ingress_mask"),
            JAVA_INT.withName("job_id"),
            JAVA_INT.withName("job_token"),
            JAVA_INT.withName("reserved0"),
            JAVA_INT.withName("src_id"),
            sequenceLayout(6, JAVA_BYTE).withName("src_mac"),
            sequenceLayout(6, JAVA_BYTE).withName("dst_mac"),
            sequenceLayout(16, JAVA_BYTE).withName("src_ip"),
            sequenceLayout(16, JAVA_BYTE).withName("dst_ip"),
            BE16.withName("src_port"),
            BE16.withName("dst_port"),
            JAVA_INT.withName("reserved1"),
            MemoryLayout.paddingLayout(4) /* C tail padding: the struct is 8-aligned by ingress_mask */).withName("xaf_route");

    /** struct xaf_port, 8 bytes. */
    public static final StructLayout PORT = structLayout(
            JAVA_INT.withName("slot"),
            JAVA_BYTE.withName("form"),
            JAVA_BYTE.withName("max_hop"),
            sequenceLayout(2, JAVA_BYTE).withName("reserved")).withName("xaf_port");

    /** struct xaf_counters, 2816 bytes: the one per-CPU value of the counters map, indexed by {@link Counter#code()}. */
    public static final StructLayout COUNTERS_VALUE = structLayout(
            sequenceLayout(COUNTERS, JAVA_LONG).withName("packets"),
            sequenceLayout(COUNTERS, JAVA_LONG).withName("bytes"),
            sequenceLayout(MAX_PORTS, JAVA_LONG).withName("port_rx_packets"),
            sequenceLayout(MAX_PORTS, JAVA_LONG).withName("port_rx_bytes"),
            sequenceLayout(MAX_PORTS, JAVA_LONG).withName("port_tx_packets"),
            sequenceLayout(MAX_PORTS, JAVA_LONG).withName("port_tx_bytes"),
            sequenceLayout(MAX_PORTS, JAVA_LONG).withName("port_tx_too_big")).withName("xaf_counters");

    /** Offset of a named field of {@code layout}. */
    public static long offset(StructLayout layout, String field) {
        return layout.byteOffset(groupElement(field));
    }

    /** Size of a named field of {@code layout}. */
    public static long size(StructLayout layout, String field) {
        return layout.select(groupElement(field)).byteSize();
    }

    static MemoryLayout field(StructLayout layout, String field) {
        return layout.select(groupElement(field));
    }
}
