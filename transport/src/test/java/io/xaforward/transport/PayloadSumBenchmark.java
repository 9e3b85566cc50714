package io.xaforward.transport;

import io.xaforward.protocol.InternetChecksum;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The payload ones'-complement sum over one datagram's payload where the ports keep it: native memory of a shared
 * arena, the payload of the second datagram of a train (48 + 1448 bytes in, not 8-byte aligned). {@code before} is
 * the loop the payload sum had until the bounds checks were hoisted, kept to compare on the same machine state
 * (docs/bench/endpoint-cost.md).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class PayloadSumBenchmark {
    @Param({"1400", "8952"})
    int length;

    private Arena arena;
    private MemorySegment area;
    private long offset;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofShared();
        area = arena.allocate(1 << 16, 64);
        byte[] bytes = new byte[1 << 16];
        new Random(1).nextBytes(bytes);
        MemorySegment.copy(MemorySegment.ofArray(bytes), 0, area, 0, bytes.length);
        offset = 48 + 1448;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public int onesComplementSum() {
        return InternetChecksum.sum(area, offset, length);
    }

    @Benchmark
    public int before() {
        return before(area, offset, length);
    }

    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong LE_LONG =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** The transport's payload sum as of ef5e9d5: 8 bytes a step at offset + i of the whole segment. */
    static int before(MemorySegment segment, long offset, int length) {
        long little = 0;
        int i = 0;
        for (; i + 8 <= length; i += 8) {
            long w = segment.get(LE_LONG, offset + i);
            little += (w & 0xFFFF_FFFFL) + (w >>> 32);
        }
        while ((little >>> 16) != 0) {
            little = (little & 0xFFFF) + (little >>> 16);
        }
        long sum = ((little & 0xFF) << 8) | (little >>> 8);
        for (; i + 4 <= length; i += 4) {
            sum += Integer.toUnsignedLong(segment.get(BE_INT, offset + i));
        }
        for (; i + 2 <= length; i += 2) {
            sum += (Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, offset + i)) << 8)
                    | Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, offset + i + 1));
        }
        if (i < length) {
            sum += Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, offset + i)) << 8;
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return (int) sum;
    }
}
