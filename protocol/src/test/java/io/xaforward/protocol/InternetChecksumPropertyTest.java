package io.xaforward.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

class InternetChecksumPropertyTest {
    @Property(tries = 500)
    void sumEqualsNaiveByteByByteForAnyOffsetAndLength(@ForAll @Size(max = 600) byte[] data,
            @ForAll @IntRange(max = 600) int from, @ForAll @IntRange(max = 600) int len) {
        int offset = data.length == 0 ? 0 : from % (data.length + 1);
        int length = Math.min(len, data.length - offset);
        int expected = Naive.onesComplementSum(data, offset, length);
        assertEquals(expected, InternetChecksum.sum(MemorySegment.ofArray(data), offset, length), "heap");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment nat = arena.allocate(data.length + 3);
            MemorySegment.copy(data, 0, nat, ValueLayout.JAVA_BYTE, 3, data.length);
            assertEquals(expected, InternetChecksum.sum(nat, 3 + offset, length), "native, shifted by 3");
        }
    }

    @Property(tries = 300)
    void partialSumsCombineToTheWholeAtAnySplit(@ForAll @Size(max = 300) byte[] data,
            @ForAll @IntRange(max = 300) int at) {
        int split = at % (data.length + 1);
        MemorySegment seg = MemorySegment.ofArray(data);
        int a = InternetChecksum.sum(seg, 0, split);
        int b = InternetChecksum.sum(seg, split, data.length - split);
        assertEquals(Naive.onesComplementSum(data, 0, data.length), InternetChecksum.combine(a, b, split));
    }
}
