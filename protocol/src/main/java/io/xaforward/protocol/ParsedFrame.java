package io.xaforward.protocol;

/**
 * Result of {@link FrameParser#parse}: a mutable holder the parser reuses for every frame, so parsing allocates
 * nothing. Offsets are from the start of the frame. Valid until the next parse with the same parser.
 */
public final class ParsedFrame {
    /** The three outcomes a gateway acts on: forward/deliver, pass to the kernel, or drop and count. */
    public enum Kind { XAF, NOT_XAF, MALFORMED }

    private Kind kind = Kind.NOT_XAF;
    private NetworkForm form;
    private int etherType;
    private long xafOffset = -1;
    private long payloadOffset = -1;
    private int payloadLength;
    private long frameLength;
    private Malformation malformation;

    void reset() {
        kind = Kind.NOT_XAF;
        form = null;
        etherType = -1;
        xafOffset = -1;
        payloadOffset = -1;
        payloadLength = 0;
        frameLength = 0;
        malformation = null;
    }

    void etherType(int v) { etherType = v; }
    void identified(NetworkForm f) { form = f; xafOffset = f.outerHeaderLength(); }
    void malformed(Malformation m) { kind = Kind.MALFORMED; malformation = m; }
    void xaf(int payloadLen) {
        kind = Kind.XAF;
        payloadLength = payloadLen;
        payloadOffset = xafOffset + XafHeader.LENGTH;
        frameLength = payloadOffset + payloadLen;
    }

    public Kind kind() { return kind; }
    public boolean isXaf() { return kind == Kind.XAF; }
    /** Form of an XAF or MALFORMED frame; null for NOT_XAF (and for frames too short to classify). */
    public NetworkForm form() { return form; }
    /** EtherType of the frame, or -1 if it is shorter than an Ethernet header. */
    public int etherType() { return etherType; }
    /** Offset of the XAF header (XAF and MALFORMED frames), else -1. */
    public long xafOffset() { return xafOffset; }
    /** Offset of the first payload byte (XAF frames), else -1. */
    public long payloadOffset() { return payloadOffset; }
    /** payload_len of an XAF frame, else 0. */
    public int payloadLength() { return payloadLength; }
    /** Bytes up to the end of the XAF payload (XAF frames; trailing Ethernet padding excluded), else 0. */
    public long frameLength() { return frameLength; }
    /** Why a MALFORMED frame is malformed, else null. */
    public Malformation malformation() { return malformation; }
    /** {@link Malformation#reason()} of a MALFORMED frame, else null. */
    public String reason() { return malformation == null ? null : malformation.reason(); }

    @Override
    public String toString() {
        return switch (kind) {
            case XAF -> "XAF " + form + " xaf@" + xafOffset + " payload " + payloadLength + "B";
            case MALFORMED -> "MALFORMED " + form + ": " + malformation.reason();
            case NOT_XAF -> "NOT_XAF ethertype 0x" + Integer.toHexString(etherType);
        };
    }
}
