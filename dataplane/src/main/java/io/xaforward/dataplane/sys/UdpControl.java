package io.xaforward.dataplane.sys;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The one control message a UDP socket with offloads sends and receives: {@code UDP_SEGMENT} (the GSO segment size,
 * a u16, on send) and {@code UDP_GRO} (the segment size of a coalesced train, an int, on receive), each in a
 * {@code struct cmsghdr} of {@link #SPACE} bytes written and read in place.
 */
public final class UdpControl {
    /** {@code struct cmsghdr}: {@code cmsg_len} (size_t), {@code cmsg_level}, {@code cmsg_type}, then data. */
    static final int CMSG_LEN = 0, CMSG_LEVEL = 8, CMSG_TYPE = 12, CMSG_DATA = 16;
    /** CMSG_SPACE(sizeof(int)): the header and an int (UDP_GRO) or u16 (UDP_SEGMENT), padded to 8. */
    public static final int SPACE = 24;

    private UdpControl() {
    }

    /** Writes a UDP_SEGMENT header at {@code offset}; {@link #segmentSize} fills in the size per send. */
    public static void prepareSegment(MemorySegment control, long offset) {
        control.set(ValueLayout.JAVA_LONG, offset + CMSG_LEN, CMSG_DATA + 2); // CMSG_LEN(sizeof(uint16_t))
        control.set(ValueLayout.JAVA_INT, offset + CMSG_LEVEL, Syscalls.SOL_UDP);
        control.set(ValueLayout.JAVA_INT, offset + CMSG_TYPE, Syscalls.UDP_SEGMENT);
    }

    /** Sets the GSO segment size of the UDP_SEGMENT message prepared at {@code offset}. */
    public static void segmentSize(MemorySegment control, long offset, int bytes) {
        control.set(ValueLayout.JAVA_SHORT, offset + CMSG_DATA, (short) bytes);
    }

    /**
     * The GRO segment size the kernel reported in the control message at {@code offset} ({@code controlLength}
     * bytes were written), or 0 when there is none: the message was not coalesced.
     */
    public static int groSegmentSize(MemorySegment control, long offset, long controlLength) {
        if (controlLength < CMSG_DATA + 4) return 0;
        if (control.get(ValueLayout.JAVA_INT, offset + CMSG_LEVEL) != Syscalls.SOL_UDP
                || control.get(ValueLayout.JAVA_INT, offset + CMSG_TYPE) != Syscalls.UDP_GRO) {
            return 0;
        }
        return Math.max(0, control.get(ValueLayout.JAVA_INT, offset + CMSG_DATA));
    }
}
