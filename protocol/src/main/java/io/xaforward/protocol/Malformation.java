package io.xaforward.protocol;

/**
 * Why a frame that was identified as XAF (by EtherType, IP protocol and UDP port, or ID next header) is dropped as
 * malformed. Each gateway counts these under XAF_C_DROP_MALFORMED; the parser reports the first rule broken.
 */
public enum Malformation {
    /** The frame ends before the length its outer headers announce, or before a full XAF header. */
    TRUNCATED("truncated: the frame ends before the announced length or the XAF header"),
    /** IPv4 header length other than 20 bytes: XAF frames carry no IP options. */
    IPV4_OPTIONS("IPv4 header has options"),
    /** First fragment of a fragmented datagram (MF set): XAF frames are never fragmented. */
    IPV4_FRAGMENT("IPv4 datagram is fragmented"),
    /** IPv4 total length or IPv6 payload length too small to hold the headers it must contain. */
    IP_LENGTH("IP length field is smaller than the headers it must hold"),
    /** UDP length disagrees with the IP length field. */
    UDP_LENGTH("UDP length disagrees with the IP length"),
    /** XAF magic is not "XF" (0x5846). */
    BAD_MAGIC("XAF magic is not 0x5846"),
    /** XAF version this implementation does not speak (only version 1 exists). */
    UNSUPPORTED_VERSION("unsupported XAF version"),
    /** hdr_len is not 48 for version 1. */
    BAD_HEADER_LENGTH("XAF hdr_len is not 48"),
    /** 48 + payload_len disagrees with the outer length (UDP length - 8, or ID length). */
    PAYLOAD_LENGTH("XAF payload_len disagrees with the outer length");

    private final String reason;

    Malformation(String reason) { this.reason = reason; }

    /** A fixed human-readable reason (a constant: safe to use per packet). */
    public String reason() { return reason; }
}
