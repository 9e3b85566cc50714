package io.xaforward.protocol;

/**
 * Element type of an XAF payload (header field {@code elem_type}); codes match {@code enum xaf_elem_type} in
 * xaf_shared.h. Receivers that reduce gradients use {@link #size()} to check that a payload holds whole elements (the
 * block formats count bytes: their chunks hold whole blocks by construction).
 */
public enum ElementType {
    BYTES(0, 1),
    F32(1, 4),
    F16(2, 2),
    BF16(3, 2),
    I32(4, 4),
    F64(5, 8),
    /** Blocks of int8 values with a float32 scale each; the layout is docs/PROTOCOL.md §3. Counted in bytes. */
    I8_BLOCKS(6, 1),
    /** Blocks of 4-bit values with a float32 scale each; the layout is docs/PROTOCOL.md §3. Counted in bytes. */
    I4_BLOCKS(7, 1);

    private final int code;
    private final int size;

    ElementType(int code, int size) {
        this.code = code;
        this.size = size;
    }

    public int code() { return code; }

    /** Bytes per element. */
    public int size() { return size; }

    /** Maps a header {@code elem_type} value to the enum; allocation-free, usable per packet. */
    public static ElementType fromCode(int code) {
        return switch (code) {
            case 0 -> BYTES;
            case 1 -> F32;
            case 2 -> F16;
            case 3 -> BF16;
            case 4 -> I32;
            case 5 -> F64;
            case 6 -> I8_BLOCKS;
            case 7 -> I4_BLOCKS;
            default -> throw new IllegalArgumentException("unknown XAF element type " + code + "; expected 0..7");
        };
    }
}
