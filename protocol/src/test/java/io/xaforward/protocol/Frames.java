package io.xaforward.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;

/** Builds the fixed frame the golden vectors describe; shared by several tests. */
final class Frames {
    static final byte[] PAYLOAD = "gradient!".getBytes(StandardCharsets.US_ASCII);
    static final int NETWORK_ID = 0x0A0B0C0D;

    private Frames() {}

    static OuterAddressing addressing(NetworkForm form) {
        OuterAddressing a = new OuterAddressing()
                .srcMac(0x02_00_00_00_00_01L).dstMac(0x02_00_00_00_00_02L)
                .srcPort(40000).srcId(0x11).dstId(NETWORK_ID);
        if (form == NetworkForm.IPV6) {
            a.srcIp(Naive.hex("fd000000000000000000000000000001")).dstIp(Naive.hex("fd000000000000000000000000000002"));
        } else {
            a.srcIpv4(0x0A000001).dstIpv4(0x0A000002);
        }
        return a;
    }

    /** Writes the golden header + payload at the form's XAF offset, seals it, and encapsulates; returns the length. */
    static int buildGolden(MemorySegment frame, NetworkForm form) {
        XafHeader h = new XafHeader().wrap(frame, form.outerHeaderLength()).init()
                .type(MessageType.DATA.code()).flags(XafHeader.FLAG_LAST_CHUNK | XafHeader.FLAG_ACK_REQUEST)
                .elemType(ElementType.F32.code()).networkId(NETWORK_ID).jobId(7).jobToken(0xDEADBEEF)
                .srcRank(1).dstRank(2).step(100).bucketId(3).chunkIndex(4).chunkCount(5)
                .payloadLength(PAYLOAD.length);
        MemorySegment.copy(PAYLOAD, 0, frame, ValueLayout.JAVA_BYTE, h.payloadOffset(), PAYLOAD.length);
        new PayloadIntegrity().seal(h);
        return new FrameWriter().encapsulate(frame, form, addressing(form));
    }
}
