package io.xaforward.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Classifies an Ethernet frame as XAF, not XAF, or malformed XAF with the same rules as the gateways' XDP program
 * (docs/PROTOCOL.md, "Classification"). Identification comes first: a frame is XAF when
 * <ul>
 *   <li>EtherType 0x0800, IPv4, protocol UDP, not a non-first fragment, UDP destination port 9450; or</li>
 *   <li>EtherType 0x86DD, IPv6 with next header UDP (no extension headers), UDP destination port 9450; or</li>
 *   <li>EtherType 0x0812 with ID header next_hdr 0xFD.</li>
 * </ul>
 * Frames that end before these identifying fields are NOT_XAF (the kernel deals with them); an identified frame
 * that ends inside the rest of its UDP or ID header is MALFORMED (TRUNCATED). An identified frame
 * is MALFORMED when it breaks any structural rule: IPv4 options or fragmentation, length fields that disagree or
 * exceed the frame, bad magic, unknown version, hdr_len other than 48. Trailing bytes after the announced length
 * (Ethernet padding) are ignored.
 *
 * <p>One parser owns one {@link ParsedFrame} that every call refills: allocation-free, not thread-safe.
 */
public final class FrameParser {
    private final ParsedFrame result = new ParsedFrame();
    private final Ipv4Header ipv4 = new Ipv4Header();
    private final Ipv6Header ipv6 = new Ipv6Header();
    private final UdpHeader udp = new UdpHeader();
    private final XafIdHeader id = new XafIdHeader();

    /**
     * Parses the first {@code length} bytes of {@code frame}.
     *
     * @return this parser's reused result
     * @throws IllegalArgumentException if {@code length} is negative or beyond the segment
     */
    public ParsedFrame parse(MemorySegment frame, long length) {
        if (length < 0 || length > frame.byteSize()) {
            throw new IllegalArgumentException("frame length " + length + " outside a segment of "
                    + frame.byteSize() + " bytes");
        }
        ParsedFrame r = result;
        r.reset();
        if (length < EthernetHeader.LENGTH) {
            return r;
        }
        int etherType = Short.toUnsignedInt(frame.get(XafHeader.BE_SHORT, EthernetHeader.ETHER_TYPE_OFFSET));
        r.etherType(etherType);
        switch (etherType) {
            case EthernetHeader.ETHER_TYPE_IPV4 -> parseIpv4(frame, length, r);
            case EthernetHeader.ETHER_TYPE_IPV6 -> parseIpv6(frame, length, r);
            case EthernetHeader.ETHER_TYPE_XAF_ID -> parseId(frame, length, r);
            default -> { }
        }
        return r;
    }

    private void parseIpv4(MemorySegment frame, long length, ParsedFrame r) {
        int ip = EthernetHeader.LENGTH;
        if (length < ip + Ipv4Header.LENGTH) {
            return;
        }
        ipv4.wrap(frame, ip);
        int headerLength = ipv4.headerLength();
        if (ipv4.version() != 4 || headerLength < Ipv4Header.LENGTH
                || ipv4.protocol() != Ipv4Header.PROTOCOL_UDP || ipv4.fragmentOffset() != 0) {
            return;
        }
        long udpOffset = ip + headerLength;
        if (length < udpOffset + UdpHeader.LENGTH_OFFSET) {
            return;
        }
        udp.wrap(frame, udpOffset);
        if (udp.dstPort() != XafHeader.UDP_PORT) {
            return;
        }
        r.identified(NetworkForm.IPV4);
        if (headerLength != Ipv4Header.LENGTH) {
            r.malformed(Malformation.IPV4_OPTIONS);
            return;
        }
        if (ipv4.moreFragments()) {
            r.malformed(Malformation.IPV4_FRAGMENT);
            return;
        }
        int totalLength = ipv4.totalLength();
        if (totalLength < Ipv4Header.LENGTH + UdpHeader.LENGTH) {
            r.malformed(Malformation.IP_LENGTH);
            return;
        }
        if (ip + totalLength > length) {
            r.malformed(Malformation.TRUNCATED);
            return;
        }
        int udpLength = udp.length();
        if (udpLength != totalLength - Ipv4Header.LENGTH) {
            r.malformed(Malformation.UDP_LENGTH);
            return;
        }
        checkXaf(frame, NetworkForm.IPV4.outerHeaderLength(), udpLength - UdpHeader.LENGTH, r);
    }

    private void parseIpv6(MemorySegment frame, long length, ParsedFrame r) {
        int ip = EthernetHeader.LENGTH;
        if (length < ip + Ipv6Header.LENGTH) {
            return;
        }
        ipv6.wrap(frame, ip);
        if (ipv6.version() != 6 || ipv6.nextHeader() != Ipv6Header.NEXT_HEADER_UDP) {
            return;
        }
        long udpOffset = ip + Ipv6Header.LENGTH;
        if (length < udpOffset + UdpHeader.LENGTH_OFFSET) {
            return;
        }
        udp.wrap(frame, udpOffset);
        if (udp.dstPort() != XafHeader.UDP_PORT) {
            return;
        }
        r.identified(NetworkForm.IPV6);
        int payloadLength = ipv6.payloadLength();
        if (payloadLength < UdpHeader.LENGTH) {
            r.malformed(Malformation.IP_LENGTH);
            return;
        }
        if (udpOffset + payloadLength > length) {
            r.malformed(Malformation.TRUNCATED);
            return;
        }
        int udpLength = udp.length();
        if (udpLength != payloadLength) {
            r.malformed(Malformation.UDP_LENGTH);
            return;
        }
        checkXaf(frame, NetworkForm.IPV6.outerHeaderLength(), udpLength - UdpHeader.LENGTH, r);
    }

    private void parseId(MemorySegment frame, long length, ParsedFrame r) {
        int idOffset = EthernetHeader.LENGTH;
        if (length < idOffset + XafIdHeader.NEXT_HDR_OFFSET + 1) {
            return;
        }
        id.wrap(frame, idOffset);
        if (id.nextHdr() != XafIdHeader.NEXT_HDR_XAF) {
            return;
        }
        r.identified(NetworkForm.ID);
        if (length < idOffset + XafIdHeader.LENGTH) {
            r.malformed(Malformation.TRUNCATED); // ends inside the ID header, after next_hdr
            return;
        }
        int idLength = id.length();
        if (idOffset + XafIdHeader.LENGTH + idLength > length) {
            r.malformed(Malformation.TRUNCATED);
            return;
        }
        checkXaf(frame, NetworkForm.ID.outerHeaderLength(), idLength, r);
    }

    private static void checkXaf(MemorySegment frame, long xafOffset, int xafBytes, ParsedFrame r) {
        Malformation m = validateXaf(frame, xafOffset, xafBytes);
        if (m != null) {
            r.malformed(m);
        } else {
            r.xaf(Short.toUnsignedInt(frame.get(XafHeader.BE_SHORT, xafOffset + XafHeader.PAYLOAD_LEN_OFFSET)));
        }
    }

    /**
     * Checks an XAF header and its payload length against {@code xafBytes}, the number of bytes the carrier says
     * follow the header start (UDP length - 8, ID length, or a received datagram's size). Used by the parser and
     * by receivers that get XAF packets without outer headers (UDP sockets).
     *
     * @return null when the header is acceptable, else the first rule it breaks
     */
    public static Malformation validateXaf(MemorySegment segment, long xafOffset, long xafBytes) {
        if (xafBytes < XafHeader.LENGTH || xafOffset + XafHeader.LENGTH > segment.byteSize()) {
            return Malformation.TRUNCATED;
        }
        if (segment.get(XafHeader.BE_SHORT, xafOffset + XafHeader.MAGIC_OFFSET) != XafHeader.MAGIC) {
            return Malformation.BAD_MAGIC;
        }
        if (Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, xafOffset + XafHeader.VERSION_OFFSET))
                != XafHeader.VERSION) {
            return Malformation.UNSUPPORTED_VERSION;
        }
        if (Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, xafOffset + XafHeader.HDR_LEN_OFFSET))
                != XafHeader.LENGTH) {
            return Malformation.BAD_HEADER_LENGTH;
        }
        int payloadLength = Short.toUnsignedInt(segment.get(XafHeader.BE_SHORT,
                xafOffset + XafHeader.PAYLOAD_LEN_OFFSET));
        if (XafHeader.LENGTH + payloadLength != xafBytes) {
            return Malformation.PAYLOAD_LENGTH;
        }
        if (xafOffset + xafBytes > segment.byteSize()) {
            return Malformation.TRUNCATED;
        }
        return null;
    }
}
