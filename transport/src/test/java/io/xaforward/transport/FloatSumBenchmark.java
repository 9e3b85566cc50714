package io.xaforward.transport;

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
import java.util.concurrent.TimeUnit;

/**
 * The reduce step of one datagram: {@link FloatSumSink} adding a 1400-byte payload (350 floats) from the port's
 * receive area (native, shared arena, 48 bytes into a train slot) into a native accumulator, walking through 1 MB of
 * it as a reduce-scatter does (docs/bench/endpoint-cost.md).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class FloatSumBenchmark {
    private static final int ACCUMULATOR = 1 << 20;

    @Param({"1400"})
    int length;

    private Arena arena;
    private MemorySegment receiveArea;
    private MemorySegment accumulator;
    private long destOffset;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofShared();
        receiveArea = arena.allocate(1 << 16, 64);
        accumulator = arena.allocate(ACCUMULATOR, 64);
        for (long i = 0; i + 4 <= receiveArea.byteSize(); i += 4) {
            receiveArea.set(ValueLayout.JAVA_FLOAT_UNALIGNED, i, 1e-6f * i);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    private long nextDest() {
        long d = destOffset;
        destOffset = d + length + length > ACCUMULATOR ? 0 : d + length;
        return d;
    }

    @Benchmark
    public MemorySegment floatSumSink() {
        FloatSumSink.INSTANCE.accept(accumulator, nextDest(), receiveArea, 48 + 1448, length);
        return accumulator;
    }

    /** A candidate: four independent adds a step. Measured no faster than the plain loop (the scalar limit). */
    @Benchmark
    public MemorySegment unrolled() {
        unrolled(accumulator, nextDest(), receiveArea, 48 + 1448, length);
        return accumulator;
    }

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    static void unrolled(MemorySegment dest, long d, MemorySegment payload, long p, int length) {
        java.util.Objects.checkFromIndexSize(d, length, dest.byteSize());
        java.util.Objects.checkFromIndexSize(p, length, payload.byteSize());
        int n = length & ~15;
        for (int i = 0; i < n; i += 16) {
            float a0 = dest.get(F, d + i) + payload.get(F, p + i);
            float a1 = dest.get(F, d + i + 4) + payload.get(F, p + i + 4);
            float a2 = dest.get(F, d + i + 8) + payload.get(F, p + i + 8);
            float a3 = dest.get(F, d + i + 12) + payload.get(F, p + i + 12);
            dest.set(F, d + i, a0);
            dest.set(F, d + i + 4, a1);
            dest.set(F, d + i + 8, a2);
            dest.set(F, d + i + 12, a3);
        }
        for (int i = n; i < length; i += 4) {
            dest.set(F, d + i, dest.get(F, d + i) + payload.get(F, p + i));
        }
    }
}
