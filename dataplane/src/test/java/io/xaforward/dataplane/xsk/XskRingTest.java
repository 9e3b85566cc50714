package io.xaforward.dataplane.xsk;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Ring index arithmetic without a kernel: a Producer and a Consumer over the same memory form the same
 * single-producer/single-consumer pair that user space and the kernel do. Indices start just below 2^32 so every
 * run crosses the unsigned wrap-around.
 */
class XskRingTest {
    private static final long PROD = 0, CONS = 64, FLAGS = 128, ENTRIES = 256;

    private static MemorySegment region(Arena arena, int size, int entry, int start) {
        MemorySegment r = arena.allocate(ENTRIES + (long) size * entry, 64);
        r.set(ValueLayout.JAVA_INT, PROD, start);
        r.set(ValueLayout.JAVA_INT, CONS, start);
        return r;
    }

    @Test
    void addressRingKeepsOrderAcrossWrapAround() {
        try (Arena arena = Arena.ofConfined()) {
            int size = 16;
            MemorySegment r = region(arena, size, XskRing.ADDR_ENTRY, -20);
            XskRing.Producer p = new XskRing.Producer(r, PROD, CONS, FLAGS, ENTRIES, size);
            XskRing.Consumer c = new XskRing.Consumer(r, PROD, CONS, FLAGS, ENTRIES, size);
            Random rnd = new Random(7);
            long next = 0, expect = 0;
            for (int round = 0; round < 2000; round++) {
                int want = 1 + rnd.nextInt(size + 4);
                int n = p.free(want);
                assertTrue(n <= want && n >= 0);
                assertTrue(next - expect + n <= size, "never more than size entries in flight");
                int first = p.reserve(n);
                for (int i = 0; i < n; i++) p.setAddr(first + i, next++ * 2048);
                p.submit();
                int m = c.peek(1 + rnd.nextInt(size));
                int f = c.first();
                for (int i = 0; i < m; i++) assertEquals(expect++ * 2048, c.addr(f + i));
                c.release(m);
            }
            int m = c.peek(Integer.MAX_VALUE);
            int f = c.first();
            for (int i = 0; i < m; i++) assertEquals(expect++ * 2048, c.addr(f + i));
            c.release(m);
            assertEquals(next, expect);
            assertTrue(next > 10_000, "the rings really ran: " + next);
            assertEquals(size, p.free(Integer.MAX_VALUE), "empty again");
            assertEquals(0, p.outstanding());
        }
    }

    @Test
    void descriptorRingCarriesAddressAndLength() {
        try (Arena arena = Arena.ofConfined()) {
            int size = 4;
            MemorySegment r = region(arena, size, XskRing.DESC_ENTRY, Integer.MAX_VALUE - 1);
            XskRing.Producer p = new XskRing.Producer(r, PROD, CONS, FLAGS, ENTRIES, size);
            XskRing.Consumer c = new XskRing.Consumer(r, PROD, CONS, FLAGS, ENTRIES, size);
            assertEquals(0, c.peek(4), "empty");
            assertEquals(4, p.free(9));
            int first = p.reserve(4);
            for (int i = 0; i < 4; i++) p.setDesc(first + i, 4096L * i + 256, 60 + i);
            assertEquals(0, c.peek(4), "nothing visible before submit");
            p.submit();
            assertEquals(4, p.outstanding());
            assertEquals(0, p.free(1), "full");
            assertEquals(3, c.peek(3));
            int f = c.first();
            for (int i = 0; i < 3; i++) {
                assertEquals(4096L * i + 256, c.descAddr(f + i));
                assertEquals(60 + i, c.descLength(f + i));
            }
            c.release(3);
            assertEquals(3, p.free(5), "three slots back");
            assertFalse(p.needsWakeup());
            r.set(ValueLayout.JAVA_INT, FLAGS, XskRing.NEED_WAKEUP);
            assertTrue(p.needsWakeup());
        }
    }

    @Test
    void sizeMustBeAPowerOfTwo() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment r = region(arena, 8, 8, 0);
            assertThrows(IllegalArgumentException.class, () -> new XskRing.Producer(r, PROD, CONS, FLAGS, ENTRIES, 6));
        }
    }
}
