package io.xaforward.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

class XafHeaderPropertyTest {
    @Property(tries = 300)
    void randomHeadersRoundTripThroughTheFlyweightAndTheRawBytes(
            @ForAll @IntRange(max = 255) int type, @ForAll @IntRange(max = 255) int flags,
            @ForAll @IntRange(max = 255) int hopLimit, @ForAll @IntRange(max = 255) int elemType,
            @ForAll int networkId, @ForAll int jobId, @ForAll int jobToken,
            @ForAll @IntRange(max = 0xFFFF) int srcRank, @ForAll @IntRange(max = 0xFFFF) int dstRank,
            @ForAll int step, @ForAll int bucketId, @ForAll int chunkIndex, @ForAll int chunkCount,
            @ForAll @IntRange(max = 0xFFFF) int payloadLength, @ForAll @IntRange(max = 0xFFFF) int payloadSum,
            @ForAll int crc, @ForAll @IntRange(max = 13) int offset) {
        byte[] raw = new byte[offset + 48];
        XafHeader h = new XafHeader().wrap(MemorySegment.ofArray(raw), offset).init()
                .type(type).flags(flags).hopLimit(hopLimit).elemType(elemType).networkId(networkId).jobId(jobId)
                .jobToken(jobToken).srcRank(srcRank).dstRank(dstRank).step(step).bucketId(bucketId)
                .chunkIndex(chunkIndex).chunkCount(chunkCount).payloadLength(payloadLength).payloadSum(payloadSum)
                .payloadCrc32c(crc);
        XafHeader r = new XafHeader().wrap(MemorySegment.ofArray(raw), offset);
        assertEquals(0x5846, r.magic());
        assertEquals(1, r.version());
        assertEquals(48, r.hdrLen());
        assertEquals(type, r.type());
        assertEquals(flags, r.flags());
        assertEquals(hopLimit, r.hopLimit());
        assertEquals(elemType, r.elemType());
        assertEquals(networkId, r.networkId());
        assertEquals(jobId, r.jobId());
        assertEquals(jobToken, r.jobToken());
        assertEquals(srcRank, r.srcRank());
        assertEquals(dstRank, r.dstRank());
        assertEquals(step, r.step());
        assertEquals(bucketId, r.bucketId());
        assertEquals(chunkIndex, r.chunkIndex());
        assertEquals(chunkCount, r.chunkCount());
        assertEquals(payloadLength, r.payloadLength());
        assertEquals(payloadSum, r.payloadSum());
        assertEquals(crc, r.payloadCrc32c());
        // Independent big-endian decode of a few fields from the raw bytes.
        assertEquals(Integer.toUnsignedLong(networkId), Naive.u32(raw, offset + 8));
        assertEquals(dstRank, Naive.u16(raw, offset + 22));
        assertEquals(Integer.toUnsignedLong(crc), Naive.u32(raw, offset + 44));
        assertEquals(hopLimit, raw[offset + 5] & 0xFF);
    }
}
