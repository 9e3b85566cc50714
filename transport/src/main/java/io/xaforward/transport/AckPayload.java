package io.xaforward.transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Payload of an ACK (type 2) packet, big-endian like the header. docs/TRANSPORT.md draws it.
 *
 * <pre>
 *  0  u32 cumulative     every chunk with index below this was received
 *  4  u32 chunk_count    chunks in the message
 *  8  u32 received       chunks received so far
 * 12  u16 sack_words     N, number of 64-bit SACK words that follow (0..16)
 * 14  u16 reserved       zero
 * 16  N x u64 sack       bit b (LSB = 0) of word w set: chunk cumulative + 64*w + b was received
 * </pre>
 */
final class AckPayload {
    static final int CUMULATIVE_OFFSET = 0;
    static final int CHUNK_COUNT_OFFSET = 4;
    static final int RECEIVED_OFFSET = 8;
    static final int SACK_WORDS_OFFSET = 12;
    static final int SACK_OFFSET = 16;
    static final int FIXED_LENGTH = 16;
    /**
     * SACK words an ACK may carry: 4096 chunks above the cumulative point (5.7 MB of 1400-byte chunks), more than a
     * 1 Gbit/s path with a 20 ms round trip holds. A sender never has a chunk in flight beyond this reach
     * ({@link #SACK_SPAN_CHUNKS}), so every chunk that arrives can be acknowledged selectively.
     */
    static final int MAX_SACK_WORDS = 64;
    static final int SACK_SPAN_CHUNKS = 64 * MAX_SACK_WORDS;
    static final int MAX_LENGTH = FIXED_LENGTH + 8 * MAX_SACK_WORDS;

    static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private AckPayload() {
    }

    static int length(int sackWords) {
        return FIXED_LENGTH + 8 * sackWords;
    }

    static void writeFixed(MemorySegment s, long at, int cumulative, int chunkCount, int received, int sackWords) {
        s.set(BE_INT, at + CUMULATIVE_OFFSET, cumulative);
        s.set(BE_INT, at + CHUNK_COUNT_OFFSET, chunkCount);
        s.set(BE_INT, at + RECEIVED_OFFSET, received);
        s.set(BE_SHORT, at + SACK_WORDS_OFFSET, (short) sackWords);
        s.set(BE_SHORT, at + SACK_WORDS_OFFSET + 2, (short) 0);
    }

    static void writeSackWord(MemorySegment s, long at, int index, long bits) {
        s.set(BE_LONG, at + SACK_OFFSET + 8L * index, bits);
    }

    static int cumulative(MemorySegment s, long at) { return s.get(BE_INT, at + CUMULATIVE_OFFSET); }
    static int chunkCount(MemorySegment s, long at) { return s.get(BE_INT, at + CHUNK_COUNT_OFFSET); }
    static int received(MemorySegment s, long at) { return s.get(BE_INT, at + RECEIVED_OFFSET); }
    static int sackWords(MemorySegment s, long at) { return Short.toUnsignedInt(s.get(BE_SHORT, at + SACK_WORDS_OFFSET)); }
    static long sackWord(MemorySegment s, long at, int index) { return s.get(BE_LONG, at + SACK_OFFSET + 8L * index); }
}
