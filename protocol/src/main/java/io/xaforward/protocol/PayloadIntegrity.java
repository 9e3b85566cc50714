package io.xaforward.protocol;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * Computes and checks the two payload integrity fields of the XAF header: {@code payload_sum}, the payload's
 * ones'-complement sum (which lets gateways build UDP checksums in O(1)), and {@code payload_crc32c}, the end-to-end
 * CRC32C that no gateway ever rewrites.
 *
 * <p>CRC32C uses {@link CRC32C} (hardware-accelerated by the JIT). That class reads ByteBuffers, so
 * an instance keeps one ByteBuffer view of the last segment it saw and reuses it while the same segment object
 * comes back (a UMEM area, a preallocated frame buffer): steady-state sealing and verifying allocate nothing. Each
 * time a <em>different</em> segment object is passed, one small view object is allocated; segments over 2 GiB get
 * a per-call slice view. Heap segments must be backed by a byte[] (a ByteBuffer cannot view other arrays).
 * Instances are not thread-safe: use one per thread.
 */
public final class PayloadIntegrity {
    private final CRC32C crc = new CRC32C();
    private MemorySegment viewedSegment;
    private ByteBuffer view;

    /** Ones'-complement sum of the payload range, not inverted: the value of the {@code payload_sum} field. */
    public static int payloadSum(MemorySegment segment, long offset, long length) {
        return InternetChecksum.sum(segment, offset, length);
    }

    /** CRC32C (Castagnoli) of the range, as the unsigned 32-bit value held in an int. */
    public int crc32c(MemorySegment segment, long offset, long length) {
        checkRange(segment, offset, length);
        crc.reset();
        if (segment.byteSize() <= Integer.MAX_VALUE) {
            if (segment != viewedSegment) {
                view = segment.asByteBuffer();
                viewedSegment = segment;
            }
            view.clear();
            view.position((int) offset).limit((int) (offset + length));
            crc.update(view);
        } else {
            crc.update(segment.asSlice(offset, length).asByteBuffer());
        }
        return (int) crc.getValue();
    }

    /**
     * Fills {@code payload_sum} and {@code payload_crc32c} from the {@link XafHeader#payloadLength()} bytes that
     * follow the header. Call it after the payload and payload length are written, before the frame is sent.
     *
     * @throws IndexOutOfBoundsException if the segment ends before the payload does
     */
    public void seal(XafHeader header) {
        MemorySegment segment = header.segment();
        long offset = header.payloadOffset();
        int length = header.payloadLength();
        checkRange(segment, offset, length);
        header.payloadSum(InternetChecksum.sum(segment, offset, length));
        header.payloadCrc32c(crc32c(segment, offset, length));
    }

    /** True when both the payload sum and the CRC32C in the header match the payload that follows it. */
    public boolean verify(XafHeader header) {
        return payloadSumMatches(header) && crc32cMatches(header);
    }

    /** True when {@code payload_sum} matches the payload (cheap; what UDP checksums depend on). */
    public boolean payloadSumMatches(XafHeader header) {
        if (!payloadInBounds(header)) {
            return false;
        }
        return InternetChecksum.sum(header.segment(), header.payloadOffset(), header.payloadLength())
                == header.payloadSum();
    }

    /** True when {@code payload_crc32c} matches the payload (the end-to-end check). */
    public boolean crc32cMatches(XafHeader header) {
        if (!payloadInBounds(header)) {
            return false;
        }
        return crc32c(header.segment(), header.payloadOffset(), header.payloadLength()) == header.payloadCrc32c();
    }

    private static boolean payloadInBounds(XafHeader header) {
        return header.payloadOffset() + header.payloadLength() <= header.segment().byteSize();
    }

    private static void checkRange(MemorySegment segment, long offset, long length) {
        if (length < 0 || offset < 0 || offset > segment.byteSize() - length) {
            throw new IndexOutOfBoundsException("payload range [" + offset + ", +" + length
                    + ") is outside a segment of " + segment.byteSize() + " bytes");
        }
    }
}
