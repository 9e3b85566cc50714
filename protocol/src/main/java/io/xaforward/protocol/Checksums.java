package io.xaforward.protocol;

import java.lang.foreign.MemorySegment;

/**
 * Outer-header checksums of XAF frames: the O(1) UDP checksum that senders and gateways write, and the full,
 * payload-reading verification that receivers and tests use. Stateless and allocation-free.
 */
public final class Checksums {
    private static final int UDP_PROTOCOL = 17;

    private Checksums() {}

    /**
     * The UDP checksum of an IPv4 or IPv6 XAF frame, computed without reading the payload: pseudo-header + UDP
     * header (checksum field taken as zero) + the 48 XAF header bytes + the header's {@code payload_sum}. The IP
     * addresses, UDP header and XAF header must already be written at the fixed offsets of {@code form}. The result
     * is correct exactly when {@code payload_sum} is (see {@link PayloadIntegrity#seal}).
     *
     * @return the value for the UDP checksum field (never 0)
     */
    public static int xafUdpChecksum(MemorySegment frame, NetworkForm form) {
        int ip = EthernetHeader.LENGTH;
        int udp = form.outerHeaderLength() - UdpHeader.LENGTH;
        int xaf = form.outerHeaderLength();
        int udpLength = Short.toUnsignedInt(frame.get(XafHeader.BE_SHORT, udp + UdpHeader.LENGTH_OFFSET));
        int sum = switch (form) {
            case IPV4 -> InternetChecksum.sum(frame, ip + Ipv4Header.SRC_ADDR_OFFSET, 8);
            case IPV6 -> InternetChecksum.sum(frame, ip + Ipv6Header.SRC_ADDR_OFFSET, 32);
            case ID -> throw new IllegalArgumentException("the ID form has no UDP header");
        };
        sum = InternetChecksum.add16(sum, UDP_PROTOCOL);
        sum = InternetChecksum.add16(sum, udpLength);
        sum = InternetChecksum.combine(sum, InternetChecksum.sum(frame, udp, UdpHeader.CHECKSUM_OFFSET));
        sum = InternetChecksum.combine(sum, InternetChecksum.sum(frame, xaf, XafHeader.LENGTH));
        int payloadSum = Short.toUnsignedInt(frame.get(XafHeader.BE_SHORT, xaf + XafHeader.PAYLOAD_SUM_OFFSET));
        sum = InternetChecksum.combine(sum, payloadSum);
        return InternetChecksum.finish(sum);
    }

    /**
     * Full verification of the UDP checksum of a parsed IPv4 or IPv6 XAF frame: pseudo-header plus every byte of
     * the UDP datagram, payload included. Over IPv4 a zero checksum means "not computed" (RFC 768) and passes;
     * over IPv6 zero is invalid (RFC 8200).
     *
     * @throws IllegalArgumentException if the frame did not parse as XAF, or is of the ID form
     */
    public static boolean verifyUdp(MemorySegment frame, ParsedFrame parsed) {
        requireXaf(parsed);
        NetworkForm form = parsed.form();
        if (form == NetworkForm.ID) {
            throw new IllegalArgumentException("the ID form has no UDP checksum");
        }
        int udp = form.outerHeaderLength() - UdpHeader.LENGTH;
        int udpLength = Short.toUnsignedInt(frame.get(XafHeader.BE_SHORT, udp + UdpHeader.LENGTH_OFFSET));
        int stored = Short.toUnsignedInt(frame.get(XafHeader.BE_SHORT, udp + UdpHeader.CHECKSUM_OFFSET));
        if (stored == 0) {
            return form == NetworkForm.IPV4;
        }
        int sum = form == NetworkForm.IPV4
                ? InternetChecksum.sum(frame, EthernetHeader.LENGTH + Ipv4Header.SRC_ADDR_OFFSET, 8)
                : InternetChecksum.sum(frame, EthernetHeader.LENGTH + Ipv6Header.SRC_ADDR_OFFSET, 32);
        sum = InternetChecksum.add16(sum, UDP_PROTOCOL);
        sum = InternetChecksum.add16(sum, udpLength);
        sum = InternetChecksum.combine(sum, InternetChecksum.sum(frame, udp, udpLength));
        return InternetChecksum.isValid(sum);
    }

    /**
     * Verifies the header checksum of a parsed IPv4 XAF frame.
     *
     * @throws IllegalArgumentException if the frame did not parse as XAF or is not of the IPv4 form
     */
    public static boolean verifyIpv4Header(MemorySegment frame, ParsedFrame parsed) {
        requireXaf(parsed);
        if (parsed.form() != NetworkForm.IPV4) {
            throw new IllegalArgumentException("only the IPv4 form has a header checksum, got " + parsed.form());
        }
        return InternetChecksum.isValid(InternetChecksum.sum(frame, EthernetHeader.LENGTH, Ipv4Header.LENGTH));
    }

    /**
     * Every outer checksum that the frame's form has: IPv4 header + UDP for IPv4, UDP for IPv6, none for the ID
     * form (whose payload is protected by the XAF CRC32C and the link's FCS only).
     */
    public static boolean verifyOuter(MemorySegment frame, ParsedFrame parsed) {
        requireXaf(parsed);
        return switch (parsed.form()) {
            case IPV4 -> verifyIpv4Header(frame, parsed) && verifyUdp(frame, parsed);
            case IPV6 -> verifyUdp(frame, parsed);
            case ID -> true;
        };
    }

    private static void requireXaf(ParsedFrame parsed) {
        if (parsed.kind() != ParsedFrame.Kind.XAF) {
            throw new IllegalArgumentException("checksums are verified on XAF frames only, this one is "
                    + parsed.kind());
        }
    }
}
