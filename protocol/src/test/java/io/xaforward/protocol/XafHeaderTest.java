package io.xaforward.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class XafHeaderTest {
    private final XafHeader h = new XafHeader();

    @Test
    void initWritesConstantsAndZeroesTheRest() {
        MemorySegment seg = MemorySegment.ofArray(new byte[64]);
        seg.fill((byte) 0x77);
        h.wrap(seg, 8).init();
        assertEquals(0x5846, h.magic());
        assertEquals(1, h.version());
        assertEquals(48, h.hdrLen());
        assertEquals(XafHeader.DEFAULT_HOP_LIMIT, h.hopLimit());
        assertEquals(0, h.type());
        assertEquals(0, h.networkId());
        assertEquals(0, h.payloadCrc32c());
        assertEquals((byte) 0x77, seg.get(ValueLayout.JAVA_BYTE, 7), "bytes before the header untouched");
        assertEquals((byte) 0x77, seg.get(ValueLayout.JAVA_BYTE, 56), "bytes after the header untouched");
        assertEquals((byte) 'X', seg.get(ValueLayout.JAVA_BYTE, 8));
        assertEquals((byte) 'F', seg.get(ValueLayout.JAVA_BYTE, 9));
        assertEquals(56, h.payloadOffset());
    }

    @Test
    void everyFieldRoundTripsAtItsOffsetWithUnsignedExtremes() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(48 + 3);
            h.wrap(seg, 3).init();
            for (int v : new int[] {0, 1, 0x7F, 0x80, 0xFF}) {
                h.type(v).flags(v).hopLimit(v).elemType(v);
                assertEquals(v, h.type());
                assertEquals(v, h.flags());
                assertEquals(v, h.hopLimit());
                assertEquals(v, h.elemType());
                assertEquals(v, Byte.toUnsignedInt(seg.get(ValueLayout.JAVA_BYTE, 3 + XafHeader.FLAGS_OFFSET)));
            }
            for (int v : new int[] {0, 1, 0x7FFF, 0x8000, 0xFFFF}) {
                h.srcRank(v).dstRank(v).payloadLength(v).payloadSum(v);
                assertEquals(v, h.srcRank());
                assertEquals(v, h.dstRank());
                assertEquals(v, h.payloadLength());
                assertEquals(v, h.payloadSum());
            }
            for (int v : new int[] {0, 1, Integer.MAX_VALUE, Integer.MIN_VALUE, -1}) {
                h.networkId(v).jobId(v).jobToken(v).step(v).bucketId(v).chunkIndex(v).chunkCount(v)
                        .payloadCrc32c(v);
                assertEquals(v, h.networkId());
                assertEquals(v, h.jobId());
                assertEquals(v, h.jobToken());
                assertEquals(v, h.step());
                assertEquals(v, h.bucketId());
                assertEquals(v, h.chunkIndex());
                assertEquals(v, h.chunkCount());
                assertEquals(v, h.payloadCrc32c());
            }
        }
    }

    @Test
    void fieldsAreBigEndianAtTheDocumentedOffsets() {
        byte[] raw = new byte[48];
        h.wrap(MemorySegment.ofArray(raw), 0).init()
                .type(MessageType.NACK.code()).flags(XafHeader.FLAG_RETRANSMIT).hopLimit(9)
                .elemType(ElementType.BF16.code()).networkId(0x01020304).jobId(0x05060708).jobToken(0x090A0B0C)
                .srcRank(0x0D0E).dstRank(0x0F10).step(0x11121314).bucketId(0x15161718).chunkIndex(0x191A1B1C)
                .chunkCount(0x1D1E1F20).payloadLength(0x2122).payloadSum(0x2324).payloadCrc32c(0x25262728);
        assertEquals("584601030209300301020304050607"
                + "08090a0b0c0d0e0f1011121314151617"
                + "18191a1b1c1d1e1f2021222324252627" + "28", Naive.hex(raw));
    }
}
