package io.xaforward.bench.allreduce;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.*;

/** The all-reduce check accepts a correct float sum and rejects a lost or duplicated contribution. */
class InputPatternTest {
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    static MemorySegment floatSum(InputPattern p, int ranks, int count, Arena arena) {
        MemorySegment out = arena.allocate((long) count * 4);
        for (int i = 0; i < count; i++) {
            float s = 0;
            for (int r = ranks - 1; r >= 0; r--) s += p.value(r, i); // some float order
            out.set(F32, (long) i * 4, s);
        }
        return out;
    }

    @Test
    void floatSumPassesAndAMissingRankFails() {
        for (InputPattern.Kind kind : InputPattern.Kind.values()) {
            InputPattern p = new InputPattern(kind, 99);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment sum = floatSum(p, 5, 10_000, arena);
                InputPattern.Check ok = p.verify(sum, 10_000, 5);
                assertTrue(ok.ok(), kind + " " + ok);
                if (kind == InputPattern.Kind.INTEGER) assertEquals(0, ok.maxError());
                MemorySegment missing = floatSum(p, 4, 10_000, arena); // rank 4's contribution lost
                InputPattern.Check bad = p.verify(missing, 10_000, 5);
                assertFalse(bad.ok(), kind + " " + bad);
                sum.set(F32, 4 * 1234, Float.NaN);
                assertEquals(1234, p.verify(sum, 10_000, 5).firstBadIndex());
            }
        }
    }

    @Test
    void valuesDependOnRankAndIndexAndStayInRange() {
        InputPattern random = new InputPattern(InputPattern.Kind.RANDOM, 1);
        InputPattern ints = new InputPattern(InputPattern.Kind.INTEGER, 1);
        assertNotEquals(random.value(0, 7), random.value(1, 7));
        assertNotEquals(random.value(0, 7), random.value(0, 8));
        for (int i = 0; i < 100_000; i++) {
            float r = random.value(i % 5, i), n = ints.value(i % 5, i);
            assertTrue(r >= -1 && r < 1 && r * 0x1p23f == Math.rint(r * 0x1p23f), "random " + r);
            assertTrue(n >= -32 && n <= 31 && n == Math.rint(n), "integer " + n);
        }
    }
}
