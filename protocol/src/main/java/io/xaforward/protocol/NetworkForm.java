package io.xaforward.protocol;

import io.xaforward.common.ConfigWord;

/**
 * The three network forms ("modalities") an XAF frame can travel in. A gateway port speaks exactly one form; the
 * XAF header is the same in all of them, only the outer headers in front of it differ. Codes match
 * {@code enum xaf_form} in dataplane/src/main/bpf/xaf_shared.h.
 */
public enum NetworkForm implements ConfigWord {
    /** Ethernet / IPv4 (no options) / UDP to port 9450 / XAF header / payload. */
    IPV4(1, EthernetHeader.LENGTH + Ipv4Header.LENGTH + UdpHeader.LENGTH),
    /** Ethernet / IPv6 (no extension headers) / UDP to port 9450 / XAF header / payload. */
    IPV6(2, EthernetHeader.LENGTH + Ipv6Header.LENGTH + UdpHeader.LENGTH),
    /** Ethernet (EtherType 0x0812) / 12-byte ID header / XAF header / payload. */
    ID(3, EthernetHeader.LENGTH + XafIdHeader.LENGTH);

    private final int code;
    private final int outerHeaderLength;

    NetworkForm(int code, int outerHeaderLength) {
        this.code = code;
        this.outerHeaderLength = outerHeaderLength;
    }

    /** The {@code xaf_form} value used in BPF maps. */
    public int code() { return code; }

    /** Bytes of outer headers in front of the XAF header: the offset of the XAF header in a frame of this form. */
    public int outerHeaderLength() { return outerHeaderLength; }

    /**
     * Largest XAF payload a frame of this form can carry: the outer 16-bit length field (IPv4 total length, IPv6
     * payload length / UDP length, ID length) must also hold the headers that it counts.
     */
    public int maxPayload() {
        int counted = switch (this) {
            case IPV4 -> Ipv4Header.LENGTH + UdpHeader.LENGTH + XafHeader.LENGTH;
            case IPV6 -> UdpHeader.LENGTH + XafHeader.LENGTH;
            case ID -> XafHeader.LENGTH;
        };
        return Math.min(XafHeader.MAX_PAYLOAD, 0xFFFF - counted);
    }

    /** Reads "ipv4", "ipv6" or "id" as configuration files and command lines write them ({@link ConfigWord#parse}). */
    public static NetworkForm fromName(String name) {
        return ConfigWord.parse(NetworkForm.class, "network form", name);
    }

    /** Maps an {@code xaf_form} code back to the form; 0 (XAF_FORM_NONE) and unknown codes are rejected. */
    public static NetworkForm fromCode(int code) {
        return switch (code) {
            case 1 -> IPV4;
            case 2 -> IPV6;
            case 3 -> ID;
            default -> throw new IllegalArgumentException("unknown network form code " + code + "; expected 1..3");
        };
    }

    /** The lower-case name accepted by {@link #fromName}. */
    @Override
    public String configName() {
        return switch (this) {
            case IPV4 -> "ipv4";
            case IPV6 -> "ipv6";
            case ID -> "id";
        };
    }
}
