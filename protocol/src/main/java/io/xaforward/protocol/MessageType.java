package io.xaforward.protocol;

/**
 * What an XAF packet carries (header field {@code type}); codes match {@code enum xaf_msg_type} in xaf_shared.h.
 * Gateways forward every type alike; only end hosts interpret it.
 */
public enum MessageType {
    /** A chunk of a gradient message. */
    DATA(1),
    /** Selective acknowledgement. */
    ACK(2),
    /** Negative acknowledgement: a request to retransmit. */
    NACK(3),
    /** Control-plane message (barrier, hello, ...). */
    CONTROL(4);

    private final int code;

    MessageType(int code) { this.code = code; }

    public int code() { return code; }

    /** Maps a header {@code type} value to the enum; allocation-free, usable per packet. */
    public static MessageType fromCode(int code) {
        MessageType type = ofCode(code);
        if (type == null) {
            throw new IllegalArgumentException("unknown XAF message type " + code + "; expected 1..4");
        }
        return type;
    }

    /** As {@link #fromCode}, but null for an unknown code (a received datagram's type is untrusted input). */
    public static MessageType ofCode(int code) {
        return switch (code) {
            case 1 -> DATA;
            case 2 -> ACK;
            case 3 -> NACK;
            case 4 -> CONTROL;
            default -> null;
        };
    }
}
