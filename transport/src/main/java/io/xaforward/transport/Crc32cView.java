package io.xaforward.transport;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * CRC32C (the JDK's intrinsic) of a range of a {@link MemorySegment} without allocating: {@link CRC32C} reads
 * ByteBuffers, so the buffer view of the last segment seen is kept and reused. A port hands the transport the same
 * segment every time (its receive buffer, its send buffer, or the whole UMEM), so steady state builds no views.
 * One instance per direction, so that send and receive do not evict each other's view. Not thread-safe.
 */
final class Crc32cView {
    private final CRC32C crc = new CRC32C();
    private MemorySegment cachedSegment;
    private ByteBuffer cachedBuffer;

    int crc32c(MemorySegment segment, long offset, int length) {
        ByteBuffer buffer;
        long base;
        if (segment == cachedSegment) {
            buffer = cachedBuffer;
            base = offset;
        } else if (segment.byteSize() <= Integer.MAX_VALUE) {
            cachedSegment = segment;
            cachedBuffer = segment.asByteBuffer();
            buffer = cachedBuffer;
            base = offset;
        } else {
            buffer = segment.asSlice(offset, length).asByteBuffer(); // segments over 2 GiB only
            base = 0;
        }
        buffer.limit((int) (base + length)).position((int) base);
        crc.reset();
        crc.update(buffer);
        buffer.clear();
        return (int) crc.getValue();
    }
}
