package io.xaforward.protocol;

import java.lang.foreign.MemorySegment;

/**
 * Writes the outer headers of one network form in front of a sealed XAF header and its payload, in place. The
 * caller builds the XAF header at offset {@link NetworkForm#outerHeaderLength()} of the frame buffer, writes the
 * payload after it and {@linkplain PayloadIntegrity#seal seals} it; {@link #encapsulate} then fills the bytes in
 * front. The UDP checksum is computed in O(1) from the header's {@code payload_sum}, never from the payload.
 *
 * <p>IPv4 headers carry no options, DF set, identification 0 (RFC 6864 allows it for atomic datagrams), TOS 0.
 * IPv6 headers carry traffic class 0 and flow label 0. One instance holds reusable flyweights: not thread-safe.
 */
public final class FrameWriter {
    private final XafHeader xaf = new XafHeader();
    private final EthernetHeader eth = new EthernetHeader();
    private final Ipv4Header ipv4 = new Ipv4Header();
    private final Ipv6Header ipv6 = new Ipv6Header();
    private final UdpHeader udp = new UdpHeader();
    private final XafIdHeader id = new XafIdHeader();

    /**
     * Writes Ethernet + (IPv4|IPv6 + UDP | ID header) in front of the XAF header at
     * {@code form.outerHeaderLength()}.
     *
     * @return the total frame length in bytes (outer headers + XAF header + payload)
     * @throws IllegalArgumentException if the frame is too short for the payload, the payload too long for the
     *                                  form, or the addressing lacks IP addresses of the form's family
     */
    public int encapsulate(MemorySegment frame, NetworkForm form, OuterAddressing a) {
        int xafOffset = form.outerHeaderLength();
        if (frame.byteSize() < xafOffset + XafHeader.LENGTH) {
            throw new IllegalArgumentException("frame of " + frame.byteSize() + " bytes cannot hold "
                    + form + " outer headers and an XAF header");
        }
        xaf.wrap(frame, xafOffset);
        int payloadLength = xaf.payloadLength();
        if (payloadLength > form.maxPayload()) {
            throw new IllegalArgumentException("payload of " + payloadLength + " bytes exceeds the " + form
                    + " maximum of " + form.maxPayload());
        }
        int xafLength = XafHeader.LENGTH + payloadLength;
        int frameLength = xafOffset + xafLength;
        if (frame.byteSize() < frameLength) {
            throw new IllegalArgumentException("frame of " + frame.byteSize() + " bytes is shorter than the "
                    + frameLength + " bytes its XAF payload length needs");
        }

        eth.wrap(frame, 0).dstMac(a.dstMac).srcMac(a.srcMac);
        switch (form) {
            case IPV4 -> writeIpv4(frame, a, xafLength);
            case IPV6 -> writeIpv6(frame, a, xafLength);
            case ID -> writeId(frame, a, xafLength);
        }
        return frameLength;
    }

    private void writeIpv4(MemorySegment frame, OuterAddressing a, int xafLength) {
        requireIp(a, 4, NetworkForm.IPV4);
        eth.etherType(EthernetHeader.ETHER_TYPE_IPV4);
        int udpLength = UdpHeader.LENGTH + xafLength;
        ipv4.wrap(frame, EthernetHeader.LENGTH)
                .versionIhl(Ipv4Header.VERSION_IHL_NO_OPTIONS)
                .tos(0)
                .totalLength(Ipv4Header.LENGTH + udpLength)
                .identification(0)
                .flagsFragment(Ipv4Header.FLAG_DONT_FRAGMENT)
                .ttl(a.ipHopLimit)
                .protocol(Ipv4Header.PROTOCOL_UDP)
                .srcAddr(ipv4Int(a.srcIp))
                .dstAddr(ipv4Int(a.dstIp))
                .updateChecksum();
        writeUdp(frame, NetworkForm.IPV4, a, udpLength);
    }

    private void writeIpv6(MemorySegment frame, OuterAddressing a, int xafLength) {
        requireIp(a, 16, NetworkForm.IPV6);
        eth.etherType(EthernetHeader.ETHER_TYPE_IPV6);
        int udpLength = UdpHeader.LENGTH + xafLength;
        ipv6.wrap(frame, EthernetHeader.LENGTH)
                .versionClassFlow(Ipv6Header.VERSION_CLASS_FLOW_DEFAULT)
                .payloadLength(udpLength)
                .nextHeader(Ipv6Header.NEXT_HEADER_UDP)
                .hopLimit(a.ipHopLimit)
                .srcAddr(a.srcIp)
                .dstAddr(a.dstIp);
        writeUdp(frame, NetworkForm.IPV6, a, udpLength);
    }

    private void writeUdp(MemorySegment frame, NetworkForm form, OuterAddressing a, int udpLength) {
        udp.wrap(frame, form.outerHeaderLength() - UdpHeader.LENGTH)
                .srcPort(a.srcPort)
                .dstPort(a.dstPort)
                .length(udpLength)
                .checksum(0);
        udp.checksum(Checksums.xafUdpChecksum(frame, form));
    }

    private void writeId(MemorySegment frame, OuterAddressing a, int xafLength) {
        eth.etherType(EthernetHeader.ETHER_TYPE_XAF_ID);
        id.wrap(frame, EthernetHeader.LENGTH)
                .srcId(a.srcId)
                .dstId(a.dstId)
                .nextHdr(XafIdHeader.NEXT_HDR_XAF)
                .reserved(0)
                .length(xafLength);
    }

    private static void requireIp(OuterAddressing a, int length, NetworkForm form) {
        if (a.srcIpLength != length || a.dstIpLength != length) {
            throw new IllegalArgumentException(form + " form needs " + length + "-byte source and destination "
                    + "addresses, the addressing has " + a.srcIpLength + " and " + a.dstIpLength);
        }
    }

    private static int ipv4Int(byte[] ip) {
        return ((ip[0] & 0xFF) << 24) | ((ip[1] & 0xFF) << 16) | ((ip[2] & 0xFF) << 8) | (ip[3] & 0xFF);
    }
}
