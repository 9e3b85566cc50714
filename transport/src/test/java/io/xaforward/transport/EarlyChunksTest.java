package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The store of chunks that came before their message: bounded, per peer, handed over once, expired by age. */
class EarlyChunksTest {
    private final MemorySegment chunk = Arena.ofAuto().allocate(64);

    private boolean hold(EarlyChunks early, int rank, int step, int bucket, int index, long now) {
        chunk.fill((byte) 0);
        chunk.set(ValueLayout.JAVA_INT, 0, rank * 1_000_000 + step * 1000 + index);
        return early.hold(rank, step, bucket, 10, index, chunk, 0, 16 + index, now);
    }

    /** What {@code take} handed over: "index:length:tag". */
    private static List<String> take(EarlyChunks early, int rank, int step, int bucket) {
        List<String> got = new ArrayList<>();
        early.take(rank, step, bucket, (index, count, segment, offset, length) ->
                got.add(index + ":" + length + ":" + segment.get(ValueLayout.JAVA_INT, offset)));
        got.sort(null);
        return got;
    }

    @Test
    void chunksAreHandedToTheirMessageOnceAndOthersStay() {
        EarlyChunks early = new EarlyChunks(600, 64, 4);
        for (int i = 0; i < 3; i++) assertTrue(hold(early, 1, 7, 2, i, 0));
        assertTrue(hold(early, 1, 8, 2, 0, 0));   // another message of the same peer
        assertTrue(hold(early, 2, 7, 2, 5, 0));   // the same message id from another peer
        assertEquals(5, early.held());
        assertEquals(List.of("0:16:1007000", "1:17:1007001", "2:18:1007002"), take(early, 1, 7, 2));
        assertEquals(List.of(), take(early, 1, 7, 2), "handed over once");
        assertEquals(2, early.held());
        assertEquals(1, early.heldFrom(1));
        assertEquals(List.of("5:21:2007005"), take(early, 2, 7, 2));
        assertEquals(List.of("0:16:1008000"), take(early, 1, 8, 2));
        assertEquals(0, early.held());
    }

    @Test
    void itHoldsNoMoreThanItsCapacityAndReusesFreedSlots() {
        EarlyChunks early = new EarlyChunks(300, 64, 2);
        for (int i = 0; i < 300; i++) assertTrue(hold(early, 0, 1, 1, i % 10, 0));
        assertFalse(hold(early, 0, 2, 1, 0, 0), "full");
        assertFalse(early.hold(1, 1, 1, 10, 0, chunk, 0, 65, 0), "larger than a slot");
        assertEquals(300, take(early, 0, 1, 1).size());
        for (int i = 0; i < 300; i++) assertTrue(hold(early, 1, 3, 1, i % 10, 0), "freed slots are used again");
        assertEquals(300, early.heldFrom(1));
        assertFalse(new EarlyChunks(0, 64, 1).hold(0, 1, 1, 10, 0, chunk, 0, 8, 0), "capacity 0 holds nothing");
    }

    @Test
    void chunksOlderThanTheLimitExpire() {
        EarlyChunks early = new EarlyChunks(10, 64, 2);
        hold(early, 1, 1, 1, 0, 100);
        hold(early, 1, 1, 1, 1, 200);
        hold(early, 1, 2, 1, 0, 300);
        List<String> expired = new ArrayList<>();
        assertEquals(2, early.expire(1, 250, (step, bucket, count, index) -> expired.add(step + "/" + index)));
        expired.sort(null);
        assertEquals(List.of("1/0", "1/1"), expired);
        assertEquals(1, early.heldFrom(1));
        assertEquals(List.of("0:16:1002000"), take(early, 1, 2, 1));
    }
}
